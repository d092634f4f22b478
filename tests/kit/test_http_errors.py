"""How kit/http.py renders a failure raised by the HTTP layer itself (not by an operation)."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI
from starlette.exceptions import HTTPException

from contentplatform.kit.http import RequestContextMiddleware, install_error_handlers
from tests.support.problems import problem


def test_a_413_says_payload_too_large_with_the_limit():
    app = FastAPI()
    app.add_middleware(RequestContextMiddleware)
    install_error_handlers(app)

    @app.post("/bodies")
    async def bodies() -> None:
        raise HTTPException(413, "The body is larger than the 1024 bytes accepted here.")

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post("/bodies")

    body = problem(asyncio.run(post()), 413, "BAD_REQUEST")
    assert body["title"] == "Payload too large"
    assert body["detail"] == "The body is larger than the 1024 bytes accepted here."
