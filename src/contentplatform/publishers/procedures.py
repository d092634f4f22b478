"""The Publishers operations: declarations only; the rules live in service.py."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.publishers import attempts, schemas, service
from contentplatform.publishers.errors import ConnectionConfigRefused, ConnectionNotFound

router = ProcedureRouter("publishers", tag="Publishers")

CREDENTIALS = "Credentials are stored encrypted and never returned: `credentials_hint` masks them."


@router.procedure(
    "list",
    "GET",
    "/v1/publishers",
    access=Access.member,
    input=schemas.ListConnectionsInput,
    output=schemas.ConnectionPage,
    summary="Publisher connections of the organization, oldest first.",
    description=CREDENTIALS,
)
async def list_connections(
    ctx: Context, data: schemas.ListConnectionsInput
) -> schemas.ConnectionPage:
    return await service.list_connections(ctx.session, ctx.tenant.tenant_id, data)


@router.procedure(
    "create",
    "POST",
    "/v1/publishers",
    access=Access.admin,
    input=schemas.CreateConnectionInput,
    output=schemas.CreatedConnection,
    summary="Connect a CMS (WordPress, Ghost, Shopify, Webflow) or a signed webhook.",
    description="`config` and `credentials` are validated per type (400 naming the field). Every "
    "URL is resolved and must be a public https address (400 otherwise: loopback, private, "
    "link-local, CGNAT, metadata addresses are refused before anything is stored). A webhook "
    "connection answers its `whsec_` signing secret this once. The first connection of an "
    "organization, or one created with `isDefault`, becomes its default. " + CREDENTIALS,
    errors=[ConnectionConfigRefused],
)
async def create(ctx: Context, data: schemas.CreateConnectionInput) -> schemas.CreatedConnection:
    return await service.create(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)


@router.procedure(
    "getById",
    "GET",
    "/v1/publishers/{id}",
    access=Access.member,
    input=schemas.ConnectionIdInput,
    output=schemas.Connection,
    summary="One publisher connection.",
    description=CREDENTIALS,
    errors=[ConnectionNotFound],
)
async def get_by_id(ctx: Context, data: schemas.ConnectionIdInput) -> schemas.Connection:
    return service.to_schema(await service.require(ctx.session, ctx.tenant.tenant_id, data.id))


@router.procedure(
    "update",
    "PATCH",
    "/v1/publishers/{id}",
    access=Access.admin,
    input=schemas.UpdateConnectionInput,
    output=schemas.Connection,
    summary="Rename, reconfigure, replace credentials, make default, disable or enable.",
    description="The type cannot change. A new config passes the same checks as on create. "
    "A disabled connection publishes nothing (409).",
    errors=[ConnectionConfigRefused, ConnectionNotFound],
)
async def update(ctx: Context, data: schemas.UpdateConnectionInput) -> schemas.Connection:
    return await service.update(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)


@router.procedure(
    "delete",
    "DELETE",
    "/v1/publishers/{id}",
    access=Access.admin,
    input=schemas.ConnectionIdInput,
    output=schemas.Success,
    summary="Remove a connection (soft).",
    description="Jobs still pointing at it hold their drafts for review, with the reason recorded.",
    errors=[ConnectionNotFound],
)
async def delete(ctx: Context, data: schemas.ConnectionIdInput) -> schemas.Success:
    await service.delete(ctx.session, ctx.tenant.tenant_id, data.id)
    return schemas.Success(success=True)


@router.procedure(
    "test",
    "POST",
    "/v1/publishers/{id}/test",
    access=Access.admin,
    input=schemas.ConnectionIdInput,
    output=schemas.TestOutcome,
    summary="Check the credentials and rights against the target.",
    description="Answers 200 either way: `ok` false with the target's words in `warnings` when "
    "it refuses, and the connection is marked `error` until a test or publish succeeds.",
    errors=[ConnectionNotFound],
)
async def test(ctx: Context, data: schemas.ConnectionIdInput) -> schemas.TestOutcome:
    return await service.test(ctx.session, ctx.settings, ctx.tenant.tenant_id, data.id)


@router.procedure(
    "listAttempts",
    "GET",
    "/v1/publishers/{id}/attempts",
    access=Access.member,
    input=schemas.ListAttemptsInput,
    output=schemas.AttemptPage,
    summary="Publish attempts through one connection, newest first.",
    errors=[ConnectionNotFound],
)
async def list_attempts(ctx: Context, data: schemas.ListAttemptsInput) -> schemas.AttemptPage:
    return await attempts.connection_attempts(ctx.session, ctx.tenant.tenant_id, data)
