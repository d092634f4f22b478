"""The Drafts operations: declarations only; the rules live in service.py and states.py.

drafts.createDraft (it checks the job and instance a draft names), drafts.publish and
drafts.listPublishAttempts cross into jobs and publishers: flows/procedures.py declares them."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.drafts import schemas, service
from contentplatform.drafts.errors import (
    AssigneeNotMember,
    DraftNotFound,
    DraftVersionNotFound,
    IllegalDraftTransition,
    SeoMetaInvalid,
    StaleDraftVersion,
)
from contentplatform.drafts.service import Author
from contentplatform.kit.schemas import SUCCESS, Empty, Success

router = ProcedureRouter("drafts", tag="Drafts")

STATE_MACHINE = (
    "Moves: reviewing -> approved | rejected; an edit takes rejected and approved drafts back "
    "to reviewing; a published draft stays published when edited. Any other move is 409 "
    "CONFLICT naming the current status."
)


def author_of(ctx: Context) -> Author:
    return Author.human(ctx.identity.subject)


@router.get(
    "list",
    "/v1/drafts",
    access=Access.member,
    description="`search` matches the title or the text of the content, ignoring case.",
)
async def list_drafts(ctx: Context, data: schemas.ListDraftsInput) -> schemas.DraftPage:
    """Drafts of the tenant, newest first, filtered and paginated."""
    return await service.list_drafts(ctx.session, ctx.tenant.tenant_id, data)


@router.get("getStats", "/v1/drafts/stats", access=Access.member)
async def get_stats(ctx: Context, _: Empty) -> schemas.DraftStats:
    """How many drafts are in each status; every status is present."""
    return await service.stats(ctx.session, ctx.tenant.tenant_id)


@router.get("publishable", "/v1/drafts/publishable", access=Access.member)
async def publishable(ctx: Context, _: Empty) -> list[schemas.Draft]:
    """Approved drafts, ready to publish: the 100 most recently approved."""
    return await service.publishable(ctx.session, ctx.tenant.tenant_id)


@router.get("getById", "/v1/drafts/{id}", access=Access.member, errors=[DraftNotFound])
async def get_by_id(ctx: Context, data: schemas.DraftIdInput) -> schemas.Draft:
    """One draft."""
    draft = await service.require(ctx.session, ctx.tenant.tenant_id, data.id)
    return schemas.Draft.model_validate(draft)


@router.patch(
    "update",
    "/v1/drafts/{id}",
    access=Access.editor,
    description="A change stores a new revision (version + 1) and recomputes the SEO score; "
    "an edit that changes nothing stores none. With `expectedVersion`, a draft that moved on is "
    "409. Generating and archived drafts cannot be edited (409). " + STATE_MACHINE,
    errors=[SeoMetaInvalid, DraftNotFound, IllegalDraftTransition, StaleDraftVersion],
)
async def update(ctx: Context, data: schemas.UpdateDraftInput) -> schemas.Draft:
    """Edit title, content, excerpt or SEO metadata; returns the draft."""
    return await service.update(ctx.session, ctx.tenant.tenant_id, author_of(ctx), data)


@router.delete("delete", "/v1/drafts/{id}", access=Access.admin, errors=[DraftNotFound])
async def delete(ctx: Context, data: schemas.DraftIdInput) -> Success:
    """Soft-delete a draft; a generation writing it stops and releases its credits."""
    await service.delete(ctx.session, ctx.tenant.tenant_id, data.id)
    return SUCCESS


@router.post(
    "approve",
    "/v1/drafts/{id}/approve",
    access=Access.editor,
    description=STATE_MACHINE,
    errors=[DraftNotFound, IllegalDraftTransition],
)
async def approve(ctx: Context, data: schemas.DraftIdInput) -> schemas.Draft:
    """Approve a draft in review; returns the draft."""
    return await service.approve(ctx.session, ctx.tenant.tenant_id, data.id, ctx.identity.subject)


@router.post(
    "reject",
    "/v1/drafts/{id}/reject",
    access=Access.editor,
    description=STATE_MACHINE,
    errors=[DraftNotFound, IllegalDraftTransition],
)
async def reject(ctx: Context, data: schemas.RejectDraftInput) -> schemas.Draft:
    """Reject a draft in review with a reason; returns the draft."""
    return await service.reject(ctx.session, ctx.tenant.tenant_id, data.id, data.reason)


@router.post(
    "assign",
    "/v1/drafts/{id}/assignment",
    access=Access.editor,
    errors=[AssigneeNotMember, DraftNotFound],
)
async def assign(ctx: Context, data: schemas.AssignDraftInput) -> None:
    """Assign a reviewer, who must be a member of the organization; empty body."""
    await service.assign(ctx.session, ctx.tenant.tenant_id, data.id, data.assignee_id)


@router.get(
    "listVersions", "/v1/drafts/{id}/versions", access=Access.member, errors=[DraftNotFound]
)
async def list_versions(ctx: Context, data: schemas.ListVersionsInput) -> schemas.VersionPage:
    """Revisions of a draft, newest first: who, when, what changed, AI or human."""
    return await service.list_versions(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "getVersion",
    "/v1/drafts/{id}/versions/{version}",
    access=Access.member,
    errors=[DraftNotFound, DraftVersionNotFound],
)
async def get_version(ctx: Context, data: schemas.VersionInput) -> schemas.Version:
    """One revision with its content and provenance."""
    return await service.get_version(ctx.session, ctx.tenant.tenant_id, data.id, data.version)


@router.post(
    "restoreVersion",
    "/v1/drafts/{id}/versions/{version}/restore",
    access=Access.editor,
    errors=[DraftNotFound, DraftVersionNotFound, IllegalDraftTransition, StaleDraftVersion],
)
async def restore_version(ctx: Context, data: schemas.RestoreVersionInput) -> schemas.Draft:
    """Restore a revision as a new revision; returns the draft.

    Same rules as drafts.update: an approved draft returns to reviewing, `expectedVersion` guards
    against a draft that moved on (409)."""
    return await service.restore_version(ctx.session, ctx.tenant.tenant_id, author_of(ctx), data)
