"""The Notifications operations (notifications.*, watches.*): declarations only; who hears of
what is in routing.py, the rules of each operation in service.py.

Every member reads and marks their own notifications and keeps their own watches; nobody sees
another member's. They are a person's: API keys are refused (403).
"""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.documents.errors import DocumentNotFound
from contentplatform.drafts.errors import DraftNotFound
from contentplatform.jobs.errors import JobNotFound
from contentplatform.kit.schemas import SUCCESS, Success
from contentplatform.notifications import schemas, service
from contentplatform.notifications.errors import TooManyWatches, WatchNotFound
from contentplatform.publishers.errors import ConnectionNotFound

notifications = ProcedureRouter("notifications", tag="Notifications", api_keys=False)
watches = ProcedureRouter("watches", tag="Notifications", api_keys=False)


@notifications.get("list", "/v1/notifications", access=Access.member)
async def list_notifications(
    ctx: Context, data: schemas.ListNotificationsInput
) -> schemas.NotificationPage:
    """The caller's in-app notifications in this tenant.

    Newest first, with `unread_count` (all the caller's unread ones here, whatever the
    filters). Made from the activity events the caller's watches choose (watches.list), never
    from the caller's own actions; title and body are plain text, `url` a path of the app.
    Kept 90 days."""
    return await service.list_notifications(
        ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data
    )


@notifications.post("markRead", "/v1/notifications/read", access=Access.member)
async def mark_read(ctx: Context, data: schemas.MarkReadInput) -> schemas.MarkReadResult:
    """Mark notifications read: by ids, up to a time, or all.

    Exactly one of `ids` (1-100), `before` (those that happened at or before it; with a time
    zone) or `all: true`; otherwise 400. Ids of other users or organizations are ignored, not
    errors. `updated` counts those that were unread."""
    return await service.mark_read(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@watches.get("list", "/v1/watches", access=Access.member)
async def list_watches(ctx: Context, data: schemas.ListWatchesInput) -> schemas.WatchList:
    """The caller's watches (tenant-wide preferences and per-resource watches).

    The tenant watch comes first: every membership starts with one (its drafts, mentions, its
    jobs' failures; admins also every failure and billing), and it doubles as notification
    preferences; deleted, it is not listed. A watch's `events` are the ones it brings (the
    defaults when none were chosen)."""
    return await service.list_watches(ctx.session, ctx.tenant, ctx.identity.subject, data)


@watches.procedure(
    "upsert",
    "PUT",
    "/v1/watches",
    access=Access.member,
    errors=[DraftNotFound, JobNotFound, ConnectionNotFound, DocumentNotFound, TooManyWatches],
)
async def upsert_watch(ctx: Context, data: schemas.UpsertWatchInput) -> schemas.Watch:
    """Create or replace the caller's watch on a resource or on the tenant.

    One watch per (user, resource): a second upsert replaces its `events` and `channels`. A
    resource the caller cannot see (absent, deleted, another organization's) is 404. `events`
    are types of the event catalog that fit the resource (400 naming `events` otherwise; a job
    watch also hears of its drafts and runs, a publisher watch of what is published through
    it); absent or empty, the defaults. `channels`: `in_app` is delivered; `email` is recorded
    for a mailer to come, none is sent yet. Upserting the tenant watch after deleting it makes
    it again. At most 500 watched resources per member (409)."""
    return await service.upsert_watch(ctx.session, ctx.tenant, ctx.identity.subject, data)


@watches.delete("delete", "/v1/watches/{id}", access=Access.member, errors=[WatchNotFound])
async def delete_watch(ctx: Context, data: schemas.WatchIdInput) -> Success:
    """Stop watching.

    Deleting the tenant watch mutes tenant-wide notifications (role defaults and tenant-wide
    event types); it is made again, with the defaults, only on request (watches.upsert). Another
    member's watch is 404."""
    await service.delete_watch(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data.id)
    return SUCCESS
