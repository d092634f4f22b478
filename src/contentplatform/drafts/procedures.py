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
from contentplatform.kit.schemas import Empty

router = ProcedureRouter("drafts", tag="Drafts")

STATE_MACHINE = (
    "Moves: reviewing -> approved | rejected; an edit takes rejected and approved drafts back "
    "to reviewing; a published draft stays published when edited. Any other move is 409 "
    "CONFLICT naming the current status."
)


def author_of(ctx: Context) -> Author:
    return Author.human(ctx.identity.subject)


@router.procedure(
    "list",
    "GET",
    "/v1/drafts",
    access=Access.member,
    input=schemas.ListDraftsInput,
    output=schemas.DraftPage,
    summary="Drafts of the tenant, newest first, filtered and paginated.",
    description="`search` matches the title or the text of the content, ignoring case.",
)
async def list_drafts(ctx: Context, data: schemas.ListDraftsInput) -> schemas.DraftPage:
    return await service.list_drafts(ctx.session, ctx.tenant.tenant_id, data)


@router.procedure(
    "getStats",
    "GET",
    "/v1/drafts/stats",
    access=Access.member,
    output=schemas.DraftStats,
    summary="How many drafts are in each status; every status is present.",
)
async def get_stats(ctx: Context, _: Empty) -> schemas.DraftStats:
    return await service.stats(ctx.session, ctx.tenant.tenant_id)


@router.procedure(
    "publishable",
    "GET",
    "/v1/drafts/publishable",
    access=Access.member,
    output=list[schemas.Draft],
    summary="Approved drafts, ready to publish: the 100 most recently approved.",
)
async def publishable(ctx: Context, _: Empty) -> list[schemas.Draft]:
    return await service.publishable(ctx.session, ctx.tenant.tenant_id)


@router.procedure(
    "getById",
    "GET",
    "/v1/drafts/{id}",
    access=Access.member,
    input=schemas.DraftIdInput,
    output=schemas.Draft,
    summary="One draft.",
    errors=[DraftNotFound],
)
async def get_by_id(ctx: Context, data: schemas.DraftIdInput) -> schemas.Draft:
    return service.to_schema(await service.require(ctx.session, ctx.tenant.tenant_id, data.id))


@router.procedure(
    "update",
    "PATCH",
    "/v1/drafts/{id}",
    access=Access.editor,
    input=schemas.UpdateDraftInput,
    output=schemas.Draft,
    summary="Edit title, content, excerpt or SEO metadata; returns the draft.",
    description="A change stores a new revision (version + 1) and recomputes the SEO score; "
    "an edit that changes nothing stores none. With `expectedVersion`, a draft that moved on is "
    "409. Generating and archived drafts cannot be edited (409). " + STATE_MACHINE,
    errors=[SeoMetaInvalid, DraftNotFound, IllegalDraftTransition, StaleDraftVersion],
)
async def update(ctx: Context, data: schemas.UpdateDraftInput) -> schemas.Draft:
    return await service.update(ctx.session, ctx.tenant.tenant_id, author_of(ctx), data)


@router.procedure(
    "delete",
    "DELETE",
    "/v1/drafts/{id}",
    access=Access.admin,
    input=schemas.DraftIdInput,
    output=schemas.Success,
    summary="Soft-delete a draft; a generation writing it stops and releases its credits.",
    errors=[DraftNotFound],
)
async def delete(ctx: Context, data: schemas.DraftIdInput) -> schemas.Success:
    await service.delete(ctx.session, ctx.tenant.tenant_id, data.id)
    return schemas.Success(success=True)


@router.procedure(
    "approve",
    "POST",
    "/v1/drafts/{id}/approve",
    access=Access.editor,
    input=schemas.DraftIdInput,
    output=schemas.Draft,
    summary="Approve a draft in review; returns the draft.",
    description=STATE_MACHINE,
    errors=[DraftNotFound, IllegalDraftTransition],
)
async def approve(ctx: Context, data: schemas.DraftIdInput) -> schemas.Draft:
    return await service.approve(ctx.session, ctx.tenant.tenant_id, data.id, ctx.identity.subject)


@router.procedure(
    "reject",
    "POST",
    "/v1/drafts/{id}/reject",
    access=Access.editor,
    input=schemas.RejectDraftInput,
    output=schemas.Draft,
    summary="Reject a draft in review with a reason; returns the draft.",
    description=STATE_MACHINE,
    errors=[DraftNotFound, IllegalDraftTransition],
)
async def reject(ctx: Context, data: schemas.RejectDraftInput) -> schemas.Draft:
    return await service.reject(ctx.session, ctx.tenant.tenant_id, data.id, data.reason)


@router.procedure(
    "assign",
    "POST",
    "/v1/drafts/{id}/assignment",
    access=Access.editor,
    input=schemas.AssignDraftInput,
    output=None,
    summary="Assign a reviewer, who must be a member of the organization; empty body.",
    errors=[AssigneeNotMember, DraftNotFound],
)
async def assign(ctx: Context, data: schemas.AssignDraftInput) -> None:
    await service.assign(ctx.session, ctx.tenant.tenant_id, data.id, data.assignee_id)


@router.procedure(
    "listVersions",
    "GET",
    "/v1/drafts/{id}/versions",
    access=Access.member,
    input=schemas.ListVersionsInput,
    output=schemas.VersionPage,
    summary="Revisions of a draft, newest first: who, when, what changed, AI or human.",
    errors=[DraftNotFound],
)
async def list_versions(ctx: Context, data: schemas.ListVersionsInput) -> schemas.VersionPage:
    return await service.list_versions(ctx.session, ctx.tenant.tenant_id, data)


@router.procedure(
    "getVersion",
    "GET",
    "/v1/drafts/{id}/versions/{version}",
    access=Access.member,
    input=schemas.VersionInput,
    output=schemas.Version,
    summary="One revision with its content and provenance.",
    errors=[DraftNotFound, DraftVersionNotFound],
)
async def get_version(ctx: Context, data: schemas.VersionInput) -> schemas.Version:
    return await service.get_version(ctx.session, ctx.tenant.tenant_id, data.id, data.version)


@router.procedure(
    "restoreVersion",
    "POST",
    "/v1/drafts/{id}/versions/{version}/restore",
    access=Access.editor,
    input=schemas.RestoreVersionInput,
    output=schemas.Draft,
    summary="Restore a revision as a new revision; returns the draft.",
    description="Same rules as drafts.update: an approved draft returns to reviewing, "
    "`expectedVersion` guards against a draft that moved on (409).",
    errors=[DraftNotFound, DraftVersionNotFound, IllegalDraftTransition, StaleDraftVersion],
)
async def restore_version(ctx: Context, data: schemas.RestoreVersionInput) -> schemas.Draft:
    return await service.restore_version(ctx.session, ctx.tenant.tenant_id, author_of(ctx), data)
