"""How kit/http.py renders a failure raised by the HTTP layer itself (not by an operation), and
reports each failed request to its `on_failure` hook."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI
from starlette.exceptions import HTTPException

from contentplatform.kit import logs
from contentplatform.kit.errors import Conflict, NotFound
from contentplatform.kit.http import Failure, RequestContextMiddleware, install_error_handlers
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


def test_each_failed_request_is_reported_after_its_answer_and_a_failing_report_is_only_logged():
    told: list[Failure] = []

    def report(failure: Failure) -> None:
        told.append(failure)
        if failure.status == 409:
            raise RuntimeError("the report itself failed")

    app = FastAPI()
    app.add_middleware(RequestContextMiddleware, on_failure=report)
    install_error_handlers(app)

    @app.get("/things/{code}")
    async def things(code: int) -> dict[str, str]:
        logs.bind(tenant="t-1", operation="things.get")
        if code == 404:
            raise NotFound("No such thing.")
        if code == 409:
            raise Conflict("It changed.")
        if code == 500:
            raise RuntimeError("a bug")
        return {"ok": "yes"}

    async def get(*codes: int) -> list[httpx.Response]:
        transport = httpx.ASGITransport(app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [await client.get(f"/things/{code}") for code in codes]

    fine, missing, changed, bug = asyncio.run(get(200, 404, 409, 500))
    assert fine.status_code == 200
    problem(missing, 404, "NOT_FOUND")
    problem(changed, 409, "CONFLICT")  # answered whatever became of its report
    problem(bug, 500, "INTERNAL_SERVER_ERROR")
    assert [(f.status, f.code, f.method) for f in told] == [
        (404, "NOT_FOUND", "GET"),
        (409, "CONFLICT", "GET"),
        (500, "INTERNAL_SERVER_ERROR", "GET"),
    ]
    for failure, answer in zip(told, (missing, changed, bug), strict=True):
        assert failure.request_id == answer.headers["x-request-id"]
        assert failure.context["tenant"] == "t-1"
        assert failure.context["operation"] == "things.get"
