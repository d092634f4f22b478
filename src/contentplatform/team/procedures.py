"""team.* (members and invitations, kept in step with the identity provider) and the provider's
inbound events (webhooks.receiveIdentityEvent)."""

from __future__ import annotations

import json
import logging
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from contentplatform.auth.context import Access
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.config import Settings
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.inbound import start_processing
from contentplatform.kit.schemas import SUCCESS, Empty, Success
from contentplatform.team import durable as team_durable
from contentplatform.team import schemas, service
from contentplatform.team.errors import (
    AlreadyInvited,
    AlreadyMember,
    EventRefused,
    InvitationNotFound,
    LastAdmin,
    MemberNotFound,
    NotPending,
    ProviderRefused,
    ProviderUnavailable,
    RedirectNotAllowed,
    WebhookNotConfigured,
)
from contentplatform.team.idp import Directory

log = logging.getLogger(__name__)

router = ProcedureRouter("team", tag="Team and Settings", api_keys=False)
# The provider's inbound events. The API files them under the `webhooks` group and
# /api/webhooks/ paths (the contract); in the code they are inbound, apart from the outbound
# webhook endpoints of the `webhooks` domain.
inbound = ProcedureRouter("webhooks", tag="Webhooks", api_keys=False)

PROVIDER_FIRST = (
    "Written to the identity provider first, then here: when the provider cannot be reached "
    "(or is not configured) the answer is 503 with `retryable`, and nothing changed; its own "
    "refusals come back as 400, 404 or 409. Every process enforces the change at once. (A "
    "local service without CONTENTPLATFORM_IDP_API_URL applies writes here alone.)"
)


@router.get("listMembers", "/v1/team/members", access=Access.member)
async def list_members(ctx: Context, data: schemas.ListMembersInput) -> schemas.MemberPage:
    """Members of the tenant.

    Kept in step with the identity provider by its events, just-in-time provisioning and
    team.sync. Active members first; removed ones stay listed with `status: removed`."""
    return await service.list_members(ctx.session, ctx.tenant.tenant_id, data)


@router.patch(
    "updateMemberRole",
    "/v1/team/members/{userId}",
    access=Access.admin,
    description=PROVIDER_FIRST + " Leaving the organization without an admin: 409.",
    errors=[MemberNotFound, LastAdmin, ProviderRefused, ProviderUnavailable],
)
async def update_member_role(ctx: Context, data: schemas.UpdateRoleInput) -> schemas.Member:
    """Change a member's role."""
    return await service.update_role(
        ctx.session, Directory(ctx.settings), ctx.runtime.invalidations, ctx.tenant, data
    )


@router.delete(
    "removeMember",
    "/v1/team/members/{userId}",
    access=Access.admin,
    description=PROVIDER_FIRST
    + " Their drafts are unassigned; their conversations stay theirs alone. Removing the last "
    "admin (yourself included): 409.",
    errors=[MemberNotFound, LastAdmin, ProviderRefused, ProviderUnavailable],
)
async def remove_member(ctx: Context, data: schemas.MemberIdInput) -> Success:
    """Remove a member from the organization."""
    await service.remove_member(
        ctx.session, Directory(ctx.settings), ctx.runtime.invalidations, ctx.tenant, data
    )
    return SUCCESS


@router.get("listInvitations", "/v1/team/invitations", access=Access.admin)
async def list_invitations(
    ctx: Context, data: schemas.ListInvitationsInput
) -> schemas.InvitationPage:
    """Invitations of the tenant, newest first (a pending one past its expiry is `expired`).

    Optionally of one `status` (pending, accepted, revoked, expired), with who invited whom,
    with which role, and when it expires."""
    return await service.list_invitations(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "invite",
    "/v1/team/invitations",
    access=Access.admin,
    description=PROVIDER_FIRST
    + " The provider sends the email; you are its inviter. Already a member, or a pending "
    "invitation for that email: 409.",
    errors=[
        AlreadyMember,
        AlreadyInvited,
        RedirectNotAllowed,
        ProviderRefused,
        ProviderUnavailable,
        PlanLimitReached,
    ],
)
async def invite(ctx: Context, data: schemas.InviteInput) -> schemas.Invitation:
    """Invite someone by email with a role."""
    return await service.invite(
        ctx.session, Directory(ctx.settings), ctx.settings, ctx.tenant, ctx.identity.subject, data
    )


@router.post(
    "revokeInvitation",
    "/v1/team/invitations/{id}/revoke",
    access=Access.admin,
    description=PROVIDER_FIRST + " An invitation that is not pending: 409.",
    errors=[InvitationNotFound, NotPending, ProviderRefused, ProviderUnavailable],
)
async def revoke_invitation(ctx: Context, data: schemas.InvitationIdInput) -> schemas.Invitation:
    """Revoke a pending invitation."""
    return await service.revoke_invitation(
        ctx.session, Directory(ctx.settings), ctx.tenant, ctx.identity.subject, data
    )


@router.post(
    "sync",
    "/v1/team/sync",
    access=Access.admin,
    description=(
        "Pulls the organization's memberships and invitations through the provider's Backend "
        "API, as the nightly reconcile does, for events that never arrived: members it lists "
        "are added or updated, active members it does not list are removed. Once a minute per "
        "tenant (429 with Retry-After); the provider unreachable: 503."
    ),
    errors=[ProviderUnavailable],
)
async def sync(ctx: Context, data: Empty) -> schemas.SyncResult:
    """Reconcile members and invitations with the identity provider now."""
    tenant = ctx.tenant
    await ctx.runtime.limiter.check(
        ctx.settings.team_sync_rate_limit, f"team-sync:{tenant.tenant_id}"
    )
    pulled = await service.pull(Directory(ctx.settings), tenant.org_id)
    return await service.sync(
        ctx.session, ctx.runtime.invalidations, tenant.tenant_id, tenant.org_id, pulled
    )


# --- the provider's events ----------------------------------------------------------------------

SIGNATURE_HEADERS = ("id", "timestamp", "signature")


@inbound.post(
    "receiveIdentityEvent",
    "/api/webhooks/identity",
    access=Access.public,
    description=(
        'No token: the body (`{type, object: "event", data, timestamp}` as Clerk sends it) is '
        "verified on its raw bytes against the Svix signature (`svix-id`, `svix-timestamp`, "
        "`svix-signature`; the `webhook-*` names of Standard Webhooks are accepted too): an "
        "HMAC-SHA256 keyed by CONTENTPLATFORM_IDP_WEBHOOK_SECRET, any `v1` entry may match, "
        "the timestamp within 5 minutes. A bad signature, a stale timestamp (a replay) or a "
        "verified body that is not an event: 400, nothing stored. The event is stored once per "
        "id (sent again: `duplicate: true`, nothing changes), then applied by a durable "
        "workflow: organization.created|updated|deleted, organizationMembership.created|"
        "updated|deleted, organizationInvitation.created|accepted|revoked, user.updated|"
        "deleted; an event older than what was applied changes nothing; other types are "
        "stored as ignored. No secret configured: 400 (and an error in the log)."
    ),
    errors=[EventRefused, WebhookNotConfigured],
)
async def receive_identity_event(
    ctx: Context, data: schemas.IdentityEventInput
) -> schemas.EventReceipt:
    """Inbound events from the identity provider (Clerk via Svix)."""
    body = await ctx.request.body()
    event_id, event = verified_event(ctx.settings, data, body)
    stored = await service.receive_event(ctx.session, event_id, event["type"], event)
    new = start_processing(
        ctx.session, stored, team_durable.process_event, team_durable.event_workflow_id
    )
    return schemas.EventReceipt(received=True, duplicate=not new)


def verified_event(
    settings: Settings, data: schemas.IdentityEventInput, body: bytes
) -> tuple[str, dict[str, Any]]:
    """The event id and the event, once the signature over the raw bytes holds."""
    secret = settings.idp_webhook_secret
    if secret is None:
        # No signature can hold; the operator is told in the log, the sender by the 400.
        log.error("an identity event arrived but CONTENTPLATFORM_IDP_WEBHOOK_SECRET is not set")
        raise EventRefused(
            "Identity events are not accepted here: no signing secret is configured "
            "(CONTENTPLATFORM_IDP_WEBHOOK_SECRET)."
        )
    headers = {
        "webhook-id": data.svix_id or data.webhook_id or "",
        "webhook-timestamp": data.svix_timestamp or data.webhook_timestamp or "",
        "webhook-signature": data.svix_signature or data.webhook_signature or "",
    }
    try:
        verifier = Webhook(secret.get_secret_value())
    except Exception:
        raise WebhookNotConfigured(
            "CONTENTPLATFORM_IDP_WEBHOOK_SECRET is not a signing secret (whsec_<base64>)."
        ) from None
    try:
        verifier.verify(body, headers, json_parse=False)
    except (WebhookVerificationError, ValueError) as error:
        raise EventRefused(f"The event's signature does not hold: {error}.") from None
    try:
        event = json.loads(body)
    except ValueError:
        raise EventRefused("The signed body is not JSON.") from None
    if not (isinstance(event, dict) and isinstance(event.get("type"), str)):
        raise EventRefused("The signed body is not an event (an object with a `type`).")
    if len(event["type"]) > 100 or len(headers["webhook-id"]) > 255:
        raise EventRefused("The event's type or id is too long.")
    return headers["webhook-id"], event
