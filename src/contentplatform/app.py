"""create_app(): middleware, error handling, every router, probes and the OpenAPI document."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.routing import BaseRoute

from contentplatform import API_VERSION, domains
from contentplatform.admin.impersonations import service as impersonations
from contentplatform.ai.base import ProviderError
from contentplatform.auth import devkeys
from contentplatform.config import Settings
from contentplatform.core import quickstart, runtime, sent_requests, tags, uploads
from contentplatform.core.examples import PLAUSIBLE
from contentplatform.core.openapi_document import security_schemes, stream_components
from contentplatform.core.procedures import ORG_HEADER, ProcedureRouter, declared_headers
from contentplatform.core.routing import mount
from contentplatform.features import flags
from contentplatform.kit import docs, durable, examples
from contentplatform.kit.errors import Busy, InternalError, NotFound, Problem, ServiceUnavailable
from contentplatform.kit.http import (
    REQUEST_ID_HEADER,
    BodyLimitMiddleware,
    CrossOriginMiddleware,
    Failure,
    RequestContextMiddleware,
    install_error_handlers,
    problem_response,
    strip_default_validation_responses,
)
from contentplatform.settings import keys
from contentplatform.support import request_log
from contentplatform.tenants.guard import Guard, authorize

log = logging.getLogger(__name__)

# What a page of an allowed origin may send (docs/guides/chat-and-streams.md, "Browsers: CORS
# and stream URLs"), besides the input headers operations declare; no credentials (cookies):
# callers send bearer tokens.
CORS_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
CORS_HEADERS = {"authorization", "content-type", "last-event-id", ORG_HEADER, REQUEST_ID_HEADER}


def description(api: str) -> str:
    """The API document's description: the quick start against the service at `api` first."""
    return f"""
Multi-tenant API for AI-assisted content production.

## Quick start

From clone to a post published on a signed webhook on this machine. Start the service with
`CONTENTPLATFORM_OUTBOUND_ALLOW_HTTP=true CONTENTPLATFORM_OUTBOUND_ALLOW_LOOPBACK=true python3
dev.py serve` (the receiver below is plain http on loopback, which only that allows), then in
bash, from the repository's directory:

```sh
{quickstart.script(api, "dev.py")}```

Every operation is available two ways: the REST path listed here, and
`POST /api/rpc/<operationId>` with the whole input (path, query and body fields) as one JSON
object, which returns exactly what the REST form returns.

**Authentication**: `Authorization: Bearer <JWT>` from the identity provider (security scheme
`bearerAuth`). Tenant-scoped operations also need `{ORG_HEADER}`, the organization to act in
(security scheme `organization`); in Swagger UI, "Authorize" holds both. Operations that list
`apiKeyAuth` also take an API key alone (`Authorization: Bearer cpk_...`, made by an admin with
settings.createApiKey), which names its organization itself.

**Errors** are `application/problem+json` with `type`, `title`, `status`, `detail`, `code`
(UNAUTHORIZED, FORBIDDEN, NOT_FOUND, BAD_REQUEST, CONFLICT, TOO_MANY_REQUESTS,
PAYMENT_REQUIRED, INTERNAL_SERVER_ERROR), `request_id`, and `errors: [{{path, message}}]` for
invalid input. Every response carries `x-request-id`.

**Webhooks**: outbound webhook endpoints (webhooks.createEndpoint) receive the signed events
they subscribe to, listed under Webhooks; a webhook publisher connection receives the requests
listed under Webhook publishing.
"""


def create_app(
    settings: Settings,
    *,
    routers: Sequence[ProcedureRouter] | None = None,
    durable_workers: bool = True,
) -> FastAPI:
    """ValueError when the settings name a feature flag that is not declared."""
    flags.check_config(settings.features)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        current = runtime.Runtime.create(settings)
        try:
            await current.verify()
        except BaseException:
            await current.close()
            raise
        app.state.runtime = current
        app.state.guard = Guard(
            current,
            resolve_key=keys.resolve,
            resolve_impersonation=impersonations.resolve,
            record_superadmin=impersonations.record_superadmin,
        )
        reconciler: asyncio.Task[None] | None = None
        if durable_workers:
            # Workflows reach the database through the process runtime, as DBOS is process-wide.
            runtime.install(current)
            durable.launch(settings)
            await durable.configure(settings)
            reconciler = asyncio.create_task(durable.run_forever(current.db, settings))
        if gc.get_freeze_count() == 0:
            # What start-up made lives as long as the process: out of the cycle collector's way,
            # so its full collections stop walking it under load (they took 150-450 ms each).
            gc.collect()
            gc.freeze()
        try:
            yield
        finally:
            if reconciler is not None:
                reconciler.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reconciler
                # Off the loop: workflows in flight run on it and may finish in the grace time.
                await asyncio.to_thread(durable.shutdown, settings.shutdown_grace_seconds)
                runtime.install(None)
            await request_log.settled()
            await current.close()

    app = FastAPI(
        title="Content Platform API",
        version=API_VERSION,
        description=description(settings.public_base_url),
        lifespan=lifespan,
        # Served by kit/docs.py instead: FastAPI's own pages load a CDN, and its document route
        # makes the document on the event loop.
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.state.durable_workers = durable_workers
    # Importing the domains imported their durable modules too: DBOS knows every workflow.
    mounted = domains.routers() if routers is None else routers
    app.add_middleware(BodyLimitMiddleware, limit_for=_body_limits(settings))
    app.add_middleware(RequestContextMiddleware, on_failure=_failed_requests(app))
    if settings.cors_origins:
        # Outermost: every answer gets its CORS headers, a 500 of RequestContextMiddleware too.
        app.add_middleware(
            CrossOriginMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=CORS_METHODS,
            allow_headers=sorted(CORS_HEADERS | declared_headers(mounted)),
            expose_headers=[REQUEST_ID_HEADER, "retry-after"],
            max_age=settings.cors_max_age_seconds,
        )
    install_error_handlers(app)
    _install_dependency_errors(app)
    documented = mount(app, mounted, authorize)
    _add_probes(app, settings, durable_workers)
    app.include_router(uploads.router)
    docs.install(app)

    sent = sent_requests.router(
        tuple(request for domain in domains.DOMAINS for request in domain.sent_requests)
    )
    contact = _contact(settings)
    app.openapi = lambda: openapi(app, documented, sent.routes, contact)  # type: ignore[method-assign]
    return app


def _failed_requests(app: FastAPI) -> Callable[[Failure], None]:
    """Each failed request, to the log support tickets resolve the ids they cite from
    (support/request_log.py: it keeps an organization's member's, written off the request's
    path)."""

    def note(failure: Failure) -> None:
        current: runtime.Runtime | None = getattr(app.state, "runtime", None)
        if current is not None:
            request_log.note(current.db, failure)

    return note


def _contact(settings: Settings) -> dict[str, str]:
    contact = {"name": settings.api_contact_name}
    if settings.api_contact_email:
        contact["email"] = settings.api_contact_email
    if settings.api_contact_url:
        contact["url"] = settings.api_contact_url
    return contact


def openapi(
    app: FastAPI,
    routes: Sequence[BaseRoute],
    sent: Sequence[BaseRoute] = (),
    contact: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The API document: the operations of `routes`, the sent requests of `sent` (its
    `webhooks` section), every security scheme, each tag with its description, and an example
    for each object schema (kit/examples.py)."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title,
            version=API_VERSION,
            openapi_version="3.1.0",
            description=app.description,
            routes=routes,
            webhooks=sent,
            contact=contact,
            # Relative: the service wherever it is reached (the docs' "Try it out" too).
            servers=[{"url": "/", "description": "this service"}],
        )
        schema["tags"] = tags.document_tags(_tags_in(schema))
        strip_default_validation_responses(schema)
        components = schema.setdefault("components", {})
        found = components.setdefault("schemas", {})
        found["Problem"] = Problem.model_json_schema()
        for name, model in stream_components(routes).items():
            found.setdefault(name, model)
        components["securitySchemes"] = security_schemes()
        examples.add_examples(schema, PLAUSIBLE)
        app.openapi_schema = schema
    return app.openapi_schema


def _install_dependency_errors(app: FastAPI) -> None:
    """What a request answers when something it depends on gives out, rather than a 500: every
    database connection busy past the pool's wait is 503 with Retry-After; a language model or
    embeddings server that failed where no domain caught it is 503 too (with Retry-After when
    trying again may help)."""

    async def on_busy_pool(_: Request, error: Exception) -> JSONResponse:
        log.warning("no database connection came free in time: %s", error)
        return problem_response(Busy())

    async def on_provider_error(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, ProviderError)
        log.warning("a model provider failed: %s", error.message)
        retry = {"Retry-After": "5"} if error.retryable else {}
        return problem_response(
            ServiceUnavailable(
                error.message, headers=retry, extensions={"retryable": error.retryable}
            )
        )

    async def on_database_error(_: Request, error: Exception) -> JSONResponse:
        if not _database_unreachable(error):
            log.error("a database statement failed", exc_info=error)
            return problem_response(InternalError("An unexpected error occurred."))
        log.warning("the database could not be reached: %s", error)
        return problem_response(
            ServiceUnavailable(
                "The database cannot take this request now (it is unreachable or at its "
                "connection limit). Nothing was changed; try again shortly.",
                headers={"Retry-After": "5"},
                extensions={"retryable": True},
            )
        )

    app.add_exception_handler(PoolTimeout, on_busy_pool)
    app.add_exception_handler(ProviderError, on_provider_error)
    app.add_exception_handler(DBAPIError, on_database_error)


# PostgreSQL's classes of error that say a connection could not be made or was lost:
# too_many_connections, cannot_connect_now, admin_shutdown, and the connection exceptions (08).
_UNREACHABLE_STATES = ("53300", "57P03", "57P01", "08")


def _database_unreachable(error: BaseException) -> bool:
    """Whether a database error says the server could not be reached or would take no more
    connections (then a 503 is the answer), rather than that a statement failed (a 500)."""
    if getattr(error, "connection_invalidated", False):
        return True  # SQLAlchemy saw the connection drop (and renews the pool's connections)
    seen: BaseException | None = error
    for _ in range(8):  # the DBAPI error, the driver's, and what it was raised from
        if seen is None:
            break
        if isinstance(seen, ConnectionError | TimeoutError):
            return True
        state = getattr(seen, "sqlstate", None) or getattr(seen, "pgcode", None)
        if isinstance(state, str) and state.startswith(_UNREACHABLE_STATES):
            return True
        seen = seen.__cause__ or getattr(seen, "orig", None)
    return False


def _body_limits(settings: Settings) -> Callable[[str], int | None]:
    """The largest body each kind of route takes: an upload counts its own (the signed URL's
    size), an inbound provider event max_inbound_event_bytes, everything else
    max_request_bytes."""

    def limit_for(path: str) -> int | None:
        if path.startswith(uploads.UPLOADS_PREFIX):
            return None
        if path.startswith("/api/webhooks/"):
            return settings.max_inbound_event_bytes
        return settings.max_request_bytes

    return limit_for


def _tags_in(schema: dict[str, Any]) -> list[str]:
    """Every tag the document's operations and webhooks use, in the order they first appear."""
    used: dict[str, None] = {}
    for section in (schema.get("paths", {}), schema.get("webhooks", {})):
        for item in section.values():
            for operation in item.values():
                if isinstance(operation, dict):
                    used.update(dict.fromkeys(operation.get("tags", [])))
    return list(used)


def _add_probes(app: FastAPI, settings: Settings, durable_workers: bool) -> None:
    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    async def readyz(request: Request) -> JSONResponse:
        current: runtime.Runtime = request.app.state.runtime
        checks: dict[str, str] = {}
        for name, probe in (
            ("database", current.db.ping),
            ("dbos", durable.ping if durable_workers else None),
            ("redis", current.limiter.ping if settings.redis_url else None),
            ("storage", current.store.ping),
        ):
            if probe is None:
                continue
            try:
                await asyncio.wait_for(probe(), timeout=5)
                checks[name] = "ok"
            except Exception as error:
                log.warning("readiness check %s failed: %s", name, type(error).__name__)
                checks[name] = "unavailable"
        if all(value == "ok" for value in checks.values()):
            return JSONResponse({"status": "ready", "checks": checks})
        return problem_response(
            InternalError("Not ready.", status=503, extensions={"checks": checks})
        )

    @app.get("/.well-known/jwks.json", include_in_schema=False)
    async def jwks() -> JSONResponse:
        if not settings.is_local:
            return problem_response(NotFound("No development keys outside the local environment."))
        return JSONResponse(devkeys.jwks_document(settings.data_dir))
