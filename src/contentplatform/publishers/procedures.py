"""The Publishers operations: declarations only; the rules live in service.py."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.schemas import SUCCESS, Success
from contentplatform.publishers import attempts, schemas, service
from contentplatform.publishers.errors import (
    ConnectionConfigRefused,
    ConnectionNotFound,
    NotAWebhook,
    TargetRefused,
    TargetUnavailable,
)

router = ProcedureRouter("publishers", tag="Publishers")

CREDENTIALS = "Credentials are stored encrypted and never returned: `credentials_hint` masks them."


@router.get("list", "/v1/publishers", access=Access.member, description=CREDENTIALS)
async def list_connections(
    ctx: Context, data: schemas.ListConnectionsInput
) -> schemas.ConnectionPage:
    """Publisher connections of the organization, oldest first."""
    return await service.list_connections(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "create",
    "/v1/publishers",
    access=Access.admin,
    description="`config` and `credentials` are validated per type (400 naming the field). Every "
    "URL is resolved and must be a public https address (400 otherwise: loopback, private, "
    "link-local, CGNAT, metadata addresses are refused before anything is stored). A webhook "
    "connection answers its `whsec_` signing secret this once. The first connection of an "
    "organization, or one created with `isDefault`, becomes its default. " + CREDENTIALS,
    errors=[ConnectionConfigRefused, PlanLimitReached],
)
async def create(ctx: Context, data: schemas.CreateConnectionInput) -> schemas.CreatedConnection:
    """Connect a CMS (WordPress, Ghost, Shopify, Webflow) or a signed webhook."""
    return await service.create(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)


@router.get(
    "getById",
    "/v1/publishers/{id}",
    access=Access.member,
    description=CREDENTIALS,
    errors=[ConnectionNotFound],
)
async def get_by_id(ctx: Context, data: schemas.ConnectionIdInput) -> schemas.Connection:
    """One publisher connection."""
    return schemas.Connection.model_validate(
        await service.require(ctx.session, ctx.tenant.tenant_id, data.id)
    )


@router.patch(
    "update",
    "/v1/publishers/{id}",
    access=Access.admin,
    errors=[ConnectionConfigRefused, ConnectionNotFound],
)
async def update(ctx: Context, data: schemas.UpdateConnectionInput) -> schemas.Connection:
    """Rename, reconfigure, replace credentials, make default, disable or enable.

    The type cannot change. A new config passes the same checks as on create. A disabled connection
    publishes nothing (409)."""
    return await service.update(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)


@router.delete("delete", "/v1/publishers/{id}", access=Access.admin, errors=[ConnectionNotFound])
async def delete(ctx: Context, data: schemas.ConnectionIdInput) -> Success:
    """Remove a connection (soft).

    Jobs still pointing at it hold their drafts for review, with the reason recorded."""
    await service.delete(ctx.session, ctx.tenant.tenant_id, data.id)
    return SUCCESS


@router.post("test", "/v1/publishers/{id}/test", access=Access.admin, errors=[ConnectionNotFound])
async def test(ctx: Context, data: schemas.ConnectionIdInput) -> schemas.TestOutcome:
    """Check the credentials and rights against the target.

    Answers 200 either way: `ok` false with the target's words in `warnings` when it refuses, and
    the connection is marked `error` until a test or publish succeeds."""
    return await service.test(ctx.session, ctx.settings, ctx.tenant.tenant_id, data.id)


@router.get(
    "listAttempts",
    "/v1/publishers/{id}/attempts",
    access=Access.member,
    errors=[ConnectionNotFound],
)
async def list_attempts(ctx: Context, data: schemas.ListAttemptsInput) -> schemas.AttemptPage:
    """Publish attempts through one connection, newest first.

    Every draft's attempts on this connection, optionally of one `status`: what a connection's
    health looks like over time. Another organization's connection is 404."""
    return await attempts.connection_attempts(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "listTargets",
    "/v1/publishers/{id}/targets",
    access=Access.editor,
    errors=[ConnectionNotFound, TargetRefused, TargetUnavailable],
)
async def list_targets(ctx: Context, data: schemas.ListTargetsInput) -> schemas.Targets:
    """Read the remote options a connection can publish into (blogs, collections and fields,
    categories, tags, authors).

    Read live from the target with the stored credentials, through the same guarded client as
    publishing: WordPress categories, tags and authors (users who may write posts); Ghost tags
    and staff users; Shopify blogs; the Webflow collection's fields (slug, type, required); a
    webhook has none (`{type, fetched_at}`). Long lists are read a page at a time, up to 10
    pages. The answer is kept for 5 minutes per connection (`fetched_at` says when it was read;
    `refresh` reads again; a change to the connection reads again). The target refusing the
    credentials is 409 with its words, and marks the connection `error`; anything else it
    refuses is 409 too; a target that cannot be reached or fails is 503 (`retryable`)."""
    return await service.targets(ctx.session, ctx.runtime, ctx.tenant.tenant_id, data)


@router.post(
    "rotateSecret",
    "/v1/publishers/{id}/rotate-secret",
    access=Access.admin,
    errors=[NotAWebhook, ConnectionNotFound],
)
async def rotate_secret(
    ctx: Context, data: schemas.RotateConnectionSecretInput
) -> schemas.RotatedConnectionSecret:
    """Issue a new signing secret for a webhook connection.

    Answers the new `whsec_` secret this once. Until `previous_secret_expires_at`
    (`expireCurrentInSeconds`, 0-604800, default 86400) every delivery carries two `v1,`
    signatures in `webhook-signature`, the new secret's and the previous one's, so the receiver
    can switch without missing one; then only the new one. A second rotation retires a secret
    still overlapping at once. Webhook connections only (400). Recorded in the audit trail
    (`publisher.secret_rotated`, never with a secret)."""
    return await service.rotate_secret(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)
