"""HTTP plumbing: request ids, problem+json rendering of every failure."""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contentplatform.kit import logs
from contentplatform.kit.errors import (
    PROBLEM_JSON,
    BadRequest,
    Conflict,
    Forbidden,
    InternalError,
    MethodNotAllowed,
    NotFound,
    PlatformError,
    TooManyRequests,
    Unauthorized,
    validation_failed,
)

log = logging.getLogger("contentplatform.http")
REQUEST_ID_HEADER = "x-request-id"
_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def problem_response(error: PlatformError) -> JSONResponse:
    request_id = logs.request_id()
    headers = {**error.headers, REQUEST_ID_HEADER: request_id}
    return JSONResponse(
        error.problem(request_id),
        status_code=error.http_status,
        headers=headers,
        media_type=PROBLEM_JSON,
    )


class RequestContextMiddleware:
    """Gives each request an id (the client's, when it sent a sane one), echoes it on the
    response, logs the request, and turns anything unhandled into a bare 500 problem."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = (
            dict(scope.get("headers") or []).get(REQUEST_ID_HEADER.encode(), b"").decode("latin-1")
        )
        request_id = sent if _CLIENT_REQUEST_ID.match(sent) else uuid.uuid4().hex
        logs.start(request_id)
        started = time.perf_counter()
        status = 500
        response_started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                response_started = True
                status = message["status"]
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"x-request-id"]
                headers.append((REQUEST_ID_HEADER.encode(), request_id.encode()))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception("unhandled error in %s %s", scope["method"], scope["path"])
            if response_started:
                raise
            await problem_response(InternalError("An unexpected error occurred."))(
                scope, receive, send_with_id
            )
        finally:
            log.info(
                "%s %s %s",
                scope["method"],
                scope["path"],
                status,
                extra={
                    "status": status,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )


_BY_STATUS: dict[int, type[PlatformError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
}


def install_error_handlers(app: FastAPI) -> None:
    async def on_platform_error(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, PlatformError)
        if error.http_status >= 500:
            log.error("server error: %s", error.detail)
        return problem_response(error)

    async def on_validation_error(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        return problem_response(validation_failed(error.errors()))

    async def on_http_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, StarletteHTTPException)
        problem: PlatformError
        if error.status_code == 404:
            problem = NotFound(f"There is nothing at {request.url.path}.")
        elif error.status_code == 405:
            allow = (error.headers or {}).get("Allow", "")
            problem = MethodNotAllowed(
                f"{request.method} is not allowed here.",
                allow=[a.strip() for a in allow.split(",") if a],
            )
        elif error.status_code == 429:
            problem = TooManyRequests(str(error.detail), retry_after=60)
        elif error.status_code in _BY_STATUS:
            problem = _BY_STATUS[error.status_code](str(error.detail))
        elif 400 <= error.status_code < 500:
            problem = BadRequest(str(error.detail), status=error.status_code)
        else:
            problem = InternalError("An unexpected error occurred.")
        return problem_response(problem)

    app.add_exception_handler(PlatformError, on_platform_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)


def strip_default_validation_responses(schema: dict[str, Any]) -> None:
    """FastAPI documents 422 on every operation; ours answer 400 problem+json instead."""
    for item in schema.get("paths", {}).values():
        for operation in item.values():
            if isinstance(operation, dict):
                operation.get("responses", {}).pop("422", None)
    schemas = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
