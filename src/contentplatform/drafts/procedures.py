"""The Drafts operations: declarations only; the rules live in service.py, states.py and the
modules beside them by concern (revisions, comments, bulk_actions, publication).

drafts.createDraft (it checks the job and instance a draft names), drafts.publish and
drafts.listPublishAttempts cross into jobs and publishers: flows/procedures.py declares them."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.drafts import bulk_actions, comments, revisions, schemas, service
from contentplatform.drafts.errors import (
    AnchorOutOfRange,
    AssigneeNotMember,
    BulkActionNeedsField,
    BulkDeleteNeedsAdmin,
    CommentNotFound,
    CommentThreadFull,
    DraftNotFound,
    DraftVersionNotFound,
    IllegalDraftTransition,
    MentionNotMember,
    ReplyToReply,
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
    """How many drafts are in each status; every status is present.

    Counts of the organization's drafts that are not deleted, by status (`byStatus`, 0 where
    none), and their `total`."""
    return await service.stats(ctx.session, ctx.tenant.tenant_id)


@router.get("publishable", "/v1/drafts/publishable", access=Access.member)
async def publishable(ctx: Context, _: Empty) -> list[schemas.Draft]:
    """Approved drafts, ready to publish: the 100 most recently approved.

    What a publishing screen offers: approved drafts not yet published, newest approval first."""
    return await service.publishable(ctx.session, ctx.tenant.tenant_id)


@router.get("getById", "/v1/drafts/{id}", access=Access.member, errors=[DraftNotFound])
async def get_by_id(ctx: Context, data: schemas.DraftIdInput) -> schemas.Draft:
    """One draft.

    Its title, content (HTML), excerpt, SEO metadata, status, assignee, job and version. Another
    organization's draft, or a deleted one, is 404."""
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
    """Soft-delete a draft; a generation writing it stops and releases its credits.

    It leaves every list at once; copies already published on a target stay there
    (drafts.unpublish takes them down first). Deleted or another organization's: 404."""
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
    """Assign a reviewer, who must be a member of the organization; empty body.

    The assignee hears of it (draft.assigned); assigning the member already assigned changes
    nothing. A user who is not a member of this organization is 400."""
    await service.assign(ctx.session, ctx.tenant.tenant_id, data.id, data.assignee_id)


@router.get(
    "listVersions", "/v1/drafts/{id}/versions", access=Access.member, errors=[DraftNotFound]
)
async def list_versions(ctx: Context, data: schemas.ListVersionsInput) -> schemas.VersionPage:
    """Revisions of a draft, newest first: who, when, what changed, AI or human.

    One row per saved version, without the content (drafts.getVersion has it);
    drafts.compareVersions shows what changed between two."""
    return await revisions.list_versions(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "getVersion",
    "/v1/drafts/{id}/versions/{version}",
    access=Access.member,
    errors=[DraftNotFound, DraftVersionNotFound],
)
async def get_version(ctx: Context, data: schemas.VersionInput) -> schemas.Version:
    """One revision with its content and provenance.

    The version's title, content and metadata as saved, who or what wrote it (a member, or the
    generation pipeline with its sources). An unknown version of the draft is 404."""
    return await revisions.get_version(ctx.session, ctx.tenant.tenant_id, data.id, data.version)


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
    return await revisions.restore_version(ctx.session, ctx.tenant.tenant_id, author_of(ctx), data)


@router.get(
    "compareVersions",
    "/v1/drafts/{id}/diff",
    access=Access.member,
    errors=[DraftNotFound, DraftVersionNotFound],
)
async def compare_versions(ctx: Context, data: schemas.CompareVersionsInput) -> schemas.VersionDiff:
    """Word-level diff between two revisions, with how much AI text survived editing.

    `content_diff` is HTML-aware: the content is compared as words, whitespace and whole tags (a
    tag is never split), and each operation (`equal`, `delete`, `insert`) holds a piece of HTML;
    equal + delete pieces in order give `from`'s content, equal + insert pieces `to`'s.
    `title_diff` and `excerpt_diff` are the same operations over plain text (`text`).
    `seo_meta_changes` is `{key: {from, to}}` for each key that differs. `stats` counts the
    content's words added and removed, and `ai_words_retained_pct` is the share of the words of
    the latest AI revision at or before `to` that `to` keeps in place (null when no AI wrote a
    revision up to then). A version the draft does not have is 404."""
    return await revisions.compare_versions(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "unarchive",
    "/v1/drafts/{id}/unarchive",
    access=Access.editor,
    description=STATE_MACHINE,
    errors=[DraftNotFound, IllegalDraftTransition],
)
async def unarchive(ctx: Context, data: schemas.DraftIdInput) -> schemas.Draft:
    """Bring an archived draft back to review; returns the draft.

    Archived drafts only (409 naming the status otherwise); it needs approving again."""
    return await service.unarchive(ctx.session, ctx.tenant.tenant_id, data.id)


@router.post(
    "bulk",
    "/v1/drafts/bulk/{action}",
    access=Access.editor,
    errors=[BulkActionNeedsField, AssigneeNotMember, BulkDeleteNeedsAdmin],
)
async def bulk(ctx: Context, data: schemas.BulkDraftsInput) -> schemas.DraftBulkOutcome:
    """Apply one review action to up to 50 drafts.

    `approve`, `reject` (with `reason`), `archive` (optional `reason`), `assign` (with
    `assigneeId`, a member: 400 otherwise, and nothing changes) or `delete` (admins only: 403
    for editors). Each draft goes through the state machine on its own: `results` says, per id
    and in the order given, whether it changed and if not why (`error.code` NOT_FOUND for a
    missing id or another organization's, CONFLICT for a status that does not allow the
    action, with the `detail` a single operation would give). `success` is true when every
    draft changed; `affected` counts those that did."""
    return await bulk_actions.bulk(
        ctx.session, ctx.tenant.tenant_id, ctx.tenant.role, ctx.identity.subject, data
    )


@router.get(
    "listComments", "/v1/drafts/{id}/comments", access=Access.member, errors=[DraftNotFound]
)
async def list_comments(ctx: Context, data: schemas.ListCommentsInput) -> schemas.CommentPage:
    """Review comments on a draft, threaded.

    Paged by thread, oldest first: each thread's first comment is followed by its replies
    (oldest first; `parent_id` names the thread), and `total` and `limit` count threads.
    Resolved threads are left out unless `includeResolved`."""
    return await comments.list_comments(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "addComment",
    "/v1/drafts/{id}/comments",
    access=Access.member,
    errors=[
        AnchorOutOfRange,
        MentionNotMember,
        ReplyToReply,
        DraftNotFound,
        CommentNotFound,
        CommentThreadFull,
    ],
)
async def add_comment(ctx: Context, data: schemas.AddCommentInput) -> schemas.Comment:
    """Comment on a draft, optionally anchored to a passage; a reply can resolve its thread.

    `body` is plain text kept as typed (1-5000 characters; never read as markup, so escape it
    where HTML is written). `@<user id>` mentions a member (the identity provider's user id,
    e.g. `@user_2abc`): every one must be an active member of the organization (400 naming the
    others); `mentions` lists them. `anchor` ({quote, start, end}: character offsets in the
    draft's text) is stamped with the draft's current version. `parentId` makes it a reply to
    a thread of this draft (its first comment: replies are one level deep; at most 100 per
    thread); with `resolve` the reply resolves the thread, and any other reply reopens it.
    Comments never change the draft's status."""
    return await comments.add_comment(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)
