"""create_app(): middleware, error handling, every router, probes and the OpenAPI document."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.routing import BaseRoute

from contentplatform import API_VERSION, domains
from contentplatform.auth import devkeys
from contentplatform.config import Settings
from contentplatform.core import runtime, uploads, webhooks
from contentplatform.core.examples import PLAUSIBLE
from contentplatform.core.procedures import (
    ORG_HEADER,
    ProcedureRouter,
    mount,
    security_schemes,
    stream_components,
)
from contentplatform.features import flags
from contentplatform.kit import docs, durable, examples
from contentplatform.kit.errors import InternalError, NotFound, Problem
from contentplatform.kit.http import (
    RequestContextMiddleware,
    install_error_handlers,
    problem_response,
    strip_default_validation_responses,
)
from contentplatform.settings import keys
from contentplatform.tenants.guard import Guard, authorize

log = logging.getLogger(__name__)

BASE = "http://127.0.0.1:8000"
DESCRIPTION = f"""
Multi-tenant API for AI-assisted content production.

## Quick start

Against a local service (`python3 dev.py serve`), from the repository's directory:

```sh
# 1. A token (the local service trusts its development key) and the headers of every call
TOKEN=$(.venv/bin/contentplatform dev-token --org org_a --user u1 --role admin)
H=(-H "Authorization: Bearer $TOKEN" -H "{ORG_HEADER}: org_a" -H "content-type: application/json")
json() {{ python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }}

# 2. Who am I?
curl -s {BASE}/v1/system/whoami "${{H[@]}}"

# 3. Upload a document: where to PUT it, the bytes, then confirm (ingestion starts)
printf '# Watering\\n\\nWater early in the morning, twice a week, and deeply.\\n' > notes.md
UPLOAD=$(curl -s {BASE}/v1/documents/upload-url "${{H[@]}}" \\
  -d '{{"filename": "notes.md", "fileType": "md", "contentLength": '$(wc -c < notes.md)'}}')
curl -s -X PUT "$(echo "$UPLOAD" | json "['uploadUrl']")" --data-binary @notes.md \\
  -H "Content-Type: $(echo "$UPLOAD" | json "['headers']['Content-Type']")"
STORED=$(echo "$UPLOAD" | json "['storagePath']")
DOC_ID=$(curl -s {BASE}/v1/documents/confirm-upload "${{H[@]}}" \\
  -d '{{"filename": "notes.md", "fileType": "md", "storagePath": "'$STORED'"}}' | json "['id']")
until curl -s {BASE}/v1/documents/$DOC_ID "${{H[@]}}" | grep -q '"status":"ready"'; do sleep 1; done

# 4. A job, run now: its instance writes a draft
JOB_ID=$(curl -s {BASE}/v1/jobs "${{H[@]}}" \\
  -d '{{"name": "Watering notes", "topics": ["Watering"]}}' | json "['id']")
curl -s -X POST {BASE}/v1/jobs/$JOB_ID/trigger "${{H[@]}}"

# 5. The draft, listed under its job: `generating`, then `reviewing` once written
curl -s "{BASE}/v1/drafts?jobId=$JOB_ID" "${{H[@]}}"
```

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
PAYMENT_REQUIRED, INTERNAL_SERVER_ERROR), `requestId`, and `errors: [{{path, message}}]` for invalid
input. Every response carries `x-request-id`.

**Webhooks**: a webhook publisher connection receives the signed events listed under Webhooks.
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
        app.state.guard = Guard(current, resolve_key=keys.resolve)
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
            await current.close()

    app = FastAPI(
        title="Content Platform API",
        version=API_VERSION,
        description=DESCRIPTION,
        lifespan=lifespan,
        # Served from package files instead (kit/docs.py): FastAPI's own pages load a CDN.
        docs_url=None,
        redoc_url=None,
    )
    app.state.durable_workers = durable_workers
    app.add_middleware(RequestContextMiddleware)
    install_error_handlers(app)
    # Importing the domains imported their durable modules too: DBOS knows every workflow.
    documented = mount(app, domains.routers() if routers is None else routers, authorize)
    _add_probes(app, settings, durable_workers)
    app.include_router(uploads.router)
    docs.install(app)

    sent = webhooks.router(tuple(hook for domain in domains.DOMAINS for hook in domain.webhooks))
    app.openapi = lambda: openapi(app, documented, sent.routes)  # type: ignore[method-assign]
    return app


def openapi(
    app: FastAPI, routes: Sequence[BaseRoute], sent: Sequence[BaseRoute] = ()
) -> dict[str, Any]:
    """The API document: the operations of `routes`, the webhooks of `sent`, every security
    scheme, and an example for each object schema (kit/examples.py)."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title,
            version=API_VERSION,
            openapi_version="3.1.0",
            description=app.description,
            routes=routes,
            webhooks=sent,
            # Relative: the service wherever it is reached (the docs' "Try it out" too).
            servers=[{"url": "/", "description": "this service"}],
        )
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
