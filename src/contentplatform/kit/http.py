"""HTTP plumbing: request ids, problem+json rendering of every failure, CORS, JSON bodies."""

from __future__ import annotations

import datetime
import enum
import logging
import re
import time
import uuid
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticSerializationError
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contentplatform.kit import db, logs
from contentplatform.kit.errors import (
    PROBLEM_JSON,
    BadRequest,
    Conflict,
    Forbidden,
    InternalError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    PlatformError,
    TooManyRequests,
    Unauthorized,
    validation_failed,
)

log = logging.getLogger("contentplatform.http")
REQUEST_ID_HEADER = "x-request-id"
_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# The problem codes rendered for the request in hand (RequestContextMiddleware's, the last one is
# what it answered), for its `on_failure` hook.
_problem_codes: ContextVar[list[str] | None] = ContextVar("problem_codes", default=None)


@dataclass(frozen=True)
class Failure:
    """A request answered with a failure (status 400 and up), as RequestContextMiddleware hands
    it to its `on_failure` hook once the answer has been sent."""

    request_id: str
    method: str
    status: int
    # The `code` of the problem answered; None when the answer was no problem of ours.
    code: str | None
    # What the request's log lines carry (kit/logs): `operation`, `tenant`, `user` once known.
    context: Mapping[str, str]
    at: datetime.datetime


def problem_response(error: PlatformError) -> JSONResponse:
    request_id = logs.request_id()
    codes = _problem_codes.get()
    if codes is not None:
        codes.append(error.code)
    headers = {**error.headers, REQUEST_ID_HEADER: request_id}
    return JSONResponse(
        error.problem(request_id),
        status_code=error.http_status,
        headers=headers,
        media_type=PROBLEM_JSON,
    )


class RequestContextMiddleware:
    """Gives each request an id (the client's, when it sent a sane one), echoes it on the
    response, logs the request, and turns anything unhandled into a bare 500 problem.

    `on_failure`, when given, is told of every request answered with a failure, after its
    answer was sent. It must return at once (work of its own goes off the request's path) and
    its own failure is logged, never the request's."""

    def __init__(self, app: ASGIApp, on_failure: Callable[[Failure], None] | None = None) -> None:
        self.app = app
        self.on_failure = on_failure

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = (
            dict(scope.get("headers") or []).get(REQUEST_ID_HEADER.encode(), b"").decode("latin-1")
        )
        request_id = sent if _CLIENT_REQUEST_ID.match(sent) else uuid.uuid4().hex
        logs.start(request_id)
        codes: list[str] = []
        _problem_codes.set(codes)
        started = time.perf_counter()
        status = 500
        response_started = False

        client = db.Waiting()

        async def send_with_id(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                response_started = True
                client.answered()
                status = message["status"]
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"x-request-id"]
                headers.append((REQUEST_ID_HEADER.encode(), request_id.encode()))
                message["headers"] = headers
            await send(message)

        try:
            with db.client_waiting(client):
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
            if status >= 400 and self.on_failure is not None:
                self._tell(
                    Failure(
                        request_id=request_id,
                        method=scope["method"],
                        status=status,
                        code=codes[-1] if codes else None,
                        context=logs.context(),
                        at=db.utcnow(),
                    )
                )

    def _tell(self, failure: Failure) -> None:
        assert self.on_failure is not None
        try:
            self.on_failure(failure)
        except Exception:
            log.exception("could not report the failed request %s", failure.request_id)


class BodyLimitMiddleware:
    """Refuses a request body past its route's limit as it streams in: 413 at once when its
    Content-Length says it will pass it, else as soon as the bytes received do, so no body
    larger than the limit is ever held (a 1 GiB POST costs at most the limit). `limit_for(path)`
    is the route's limit in bytes, or None for a route that counts its own (an upload)."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int | None]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        if limit is None:
            await self.app(scope, receive, send)
            return
        too_large = PayloadTooLarge(
            f"The request body is larger than the {limit} bytes this route accepts."
        )
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await problem_response(too_large)(scope, receive, send)
            return
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise too_large
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except PayloadTooLarge:
            # Raised by `counted` where no handler turned it into the answer (a route that
            # reads its body outside a procedure).
            if started:
                raise
            await problem_response(too_large)(scope, receive, send)


class CrossOriginMiddleware(CORSMiddleware):
    """Starlette's CORSMiddleware for a list of origins, except that an origin it does not allow
    gets no CORS header at all (Starlette would still send it the exposed headers' list, and a
    refused preflight the allowed methods and headers), and a refused preflight is a 400
    problem+json like every other failure."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code == 200:
            return response
        # Starlette's text names what it refused: "Disallowed CORS origin, method".
        refused = bytes(response.body).decode().removeprefix("Disallowed CORS ")
        logs.start(uuid.uuid4().hex)  # outside RequestContextMiddleware: an id of its own
        problem = problem_response(
            BadRequest(f"This cross-origin request is not allowed ({refused}).")
        )
        problem.headers["Vary"] = response.headers["Vary"]
        return problem

    async def send(self, message: Message, send: Send, request_headers: Headers) -> None:
        origin = request_headers.get("origin")
        if (
            message["type"] == "http.response.start"
            and origin is not None
            and not self.is_allowed_origin(origin)
        ):
            headers = MutableHeaders(scope=message)
            headers["Vary"] = ", ".join([*headers.getlist("Vary"), "Origin"])
            await send(message)
            return
        await super().send(message, send, request_headers)


_BY_STATUS: dict[int, type[PlatformError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
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


# --- JSON bodies ---------------------------------------------------------------------------------

_ORJSON_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS
# Types orjson writes exactly as pydantic's JSON serializer does.
_NATIVE = (str, int, float, bool, type(None), uuid.UUID, datetime.datetime, datetime.date)


def encoder(shape: Any) -> Callable[[Any], bytes]:
    """How a result declared as `shape` becomes a JSON body, serialized once, as pydantic's
    serializer (by alias) would write it.

    A result that is exactly the declared model, when that model and every model in its fields
    are plain (fields written under their own names, of types orjson writes byte for byte as
    pydantic does, no serializers, computed or excluded fields), is written by orjson straight
    from the models' fields: two to three times faster on a page of records. Anything else, and
    anything orjson refuses, is written by pydantic; a result that is not an instance of `shape`
    (a dict, a row) is validated into it first, as FastAPI would have.
    """
    adapter: TypeAdapter[Any] = TypeAdapter(shape)

    def by_pydantic(result: Any) -> bytes:
        try:
            return adapter.dump_json(result, by_alias=True, warnings="error")
        except PydanticSerializationError:
            shaped = adapter.validate_python(result, from_attributes=True)
            return adapter.dump_json(shaped, by_alias=True)

    # Each plain model this shape holds -> the (name, written as) of its fields when any is
    # written under another name (an alias), else None: its fields are written as they are.
    plain: dict[type[BaseModel], tuple[tuple[str, str], ...] | None] = {}
    if not (isinstance(shape, type) and issubclass(shape, BaseModel) and _is_plain(shape, plain)):
        return by_pydantic

    def fields_of(value: Any) -> Any:
        try:
            renamed = plain[type(value)]
        except KeyError:
            if isinstance(value, uuid.UUID):  # a driver's own UUID type (asyncpg's)
                return str(value)
            raise TypeError from None  # not a model this shape holds: pydantic decides
        fields: dict[str, Any] = value.__dict__
        return fields if renamed is None else {to: fields[name] for name, to in renamed}

    def encode(result: Any) -> bytes:
        if type(result) is not shape:
            return by_pydantic(result)
        try:
            return orjson.dumps(result, default=fields_of, option=_ORJSON_OPTIONS)
        except TypeError:
            return by_pydantic(result)

    return encode


def _is_plain(annotation: Any, models: dict[type[BaseModel], Any]) -> bool:
    """Whether orjson writes values of `annotation` exactly as pydantic would (see `encoder`);
    collects the models met in `models`."""
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is Any or annotation in _NATIVE:
        return True
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return all(isinstance(member.value, str | int) for member in annotation)
    if origin is Literal:
        return all(isinstance(arg, str | int | bool | None) for arg in args)
    if origin in (list, Union, UnionType):
        return all(_is_plain(arg, models) for arg in args)
    if origin is dict:
        return args[0] is str and _is_plain(args[1], models)
    if origin is Annotated:
        return _is_plain(args[0], models) and not args[1:]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation in models or _is_plain_model(annotation, models)
    return False


def _is_plain_model(model: type[BaseModel], models: dict[type[BaseModel], Any]) -> bool:
    decorators = model.__pydantic_decorators__
    config = model.model_config
    if (
        model.model_computed_fields
        or decorators.field_serializers
        or decorators.model_serializers
        or config.get("extra") == "allow"
        or config.get("ser_json_inf_nan", "null") != "null"
    ):
        return False
    names = tuple(
        (name, info.serialization_alias or info.alias or name)
        for name, info in model.model_fields.items()
    )
    models[model] = None if all(name == to for name, to in names) else names
    for info in model.model_fields.values():
        if info.exclude or info.metadata or not _is_plain(info.annotation, models):
            del models[model]
            return False
    return True
