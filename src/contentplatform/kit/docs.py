"""Swagger UI at /docs and ReDoc at /redoc, from files installed with the package: no CDN, so
the pages work on a machine without internet.

The files are those the `fastapi-offline` package ships (Swagger UI 5 and ReDoc 2, which read
OpenAPI 3.1), served under /docs/static; the pages are FastAPI's own, pointed at them. Nothing
on either page names another host: no web fonts, no remote favicon, and Swagger UI's validator
badge (which would send the document to validator.swagger.io) is off.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles

STATIC = Path(fastapi_offline.__file__).parent / "static"
STATIC_URL = "/docs/static"
# Beside FastAPI's defaults:
SWAGGER_UI_PARAMETERS: dict[str, Any] = {
    # The token and the organization stay across reloads of the page (in its local storage).
    "persistAuthorization": True,
    "displayRequestDuration": True,
    "validatorUrl": None,
}


def install(app: FastAPI, *, openapi_url: str = "/openapi.json") -> None:
    """Serve the OpenAPI document, /docs, /redoc and their files. The app is made with
    `openapi_url=None, docs_url=None, redoc_url=None` so that FastAPI's own route and pages
    (from a CDN) are not there too."""
    serve_document(app, openapi_url)
    app.mount(STATIC_URL, StaticFiles(directory=STATIC), name="docs-static")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=root + openapi_url,
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{STATIC_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{STATIC_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{STATIC_URL}/favicon.png",
            swagger_ui_parameters=SWAGGER_UI_PARAMETERS,
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=root + openapi_url,
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{STATIC_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{STATIC_URL}/favicon.png",
            with_google_fonts=False,
        )


def serve_document(app: FastAPI, url: str) -> None:
    """`app.openapi()` at `url`. FastAPI's own route makes the document on the event loop at
    the first request: seconds of CPU for this API (3.5 s on a quiet machine, tens under load)
    during which the service answered nothing else. Here it is made once, in a thread, and its
    JSON kept: later requests send the same bytes."""
    made: list[bytes] = []
    lock = asyncio.Lock()

    def encode() -> bytes:
        return bytes(JSONResponse(app.openapi()).body)

    @app.get(url, include_in_schema=False)
    async def openapi_document() -> Response:
        if not made:
            async with lock:
                if not made:
                    made.append(await asyncio.to_thread(encode))
        return Response(made[0], media_type="application/json")
