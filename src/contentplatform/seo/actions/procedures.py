"""Declarations only: seo.listActions, createAction, getAction, updateAction, dismissAction,
generateActions, createJobFromAction, bulkActions."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.documents.errors import DocumentNotFound, DocumentNotReady
from contentplatform.job_instances.errors import InstanceDateTaken
from contentplatform.jobs.errors import JobNotFound
from contentplatform.publishers.errors import ConnectionNotFound
from contentplatform.seo.actions import generation, schemas, service
from contentplatform.seo.actions.errors import (
    ActionNotForContent,
    AssigneeNotMember,
    IllegalActionTransition,
    SeoActionNotFound,
)
from contentplatform.seo.audits.errors import AuditNotCompleted, AuditNotFound

router = ProcedureRouter("seo", tag="SEO")


@router.get("listActions", "/v1/seo/actions", access=Access.member)
async def list_actions(ctx: Context, data: schemas.ListActionsInput) -> schemas.SeoActionPage:
    """The prioritized SEO to-do list generated from audits, Search Console, inspections, rank,
    AI visibility and GEO.

    `status` `active` (the default) is open and in_progress; `all` every status. Filters:
    `type`, `source`, `priority`, `assigneeId` (a member's user id), `pageId` (actions whose
    target URLs include that page of seo.listPages), `search` (contained in the title, any
    case). Sorted by `sortBy`: `priority` (then impact_score), `impact`, `created_at` or
    `due_date` (actions without one last), `sortOrder` desc by default, then id. priority
    derives from impact_score (0-100): critical from 80 or an indexing blocker on a page with
    clicks, high from 60, medium from 30, else low; a person may change it. `evidence` holds the
    numbers that made the action (affected URLs, clicks, impressions, positions) and its
    `subject`; `fingerprint` (a hash of type and subject) is what generation knows it by."""
    return await service.list_actions(ctx.session, ctx.tenant.tenant_id, data)


@router.post("createAction", "/v1/seo/actions", access=Access.editor, errors=[AssigneeNotMember])
async def create_action(ctx: Context, data: schemas.CreateActionInput) -> schemas.SeoAction:
    """Add a manual SEO task.

    Source `manual`, status `open`. The title is plain text (markup is stripped; one that was
    nothing but markup, a control character or NUL is 400). `priority` defaults to medium, and
    impact_score is the floor of its band (critical 80, high 60, medium 30, low 0); effort
    follows the type. An `assigneeId` that is not a member of the organization is 400. A manual
    action is about nothing generation finds, so generation never touches it."""
    return await service.create(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.get("getAction", "/v1/seo/actions/{id}", access=Access.member, errors=[SeoActionNotFound])
async def get_action(ctx: Context, data: schemas.ActionIdInput) -> schemas.SeoActionDetail:
    """One action with its evidence, history, linked job/draft and verification result.

    `history` lists every move, oldest first: when, who (a user id, or `system` for
    generation and a published draft), from and to which status, and why. `job` is the job
    made for it (null once deleted), `draft` the draft whose publication completed it;
    `verification` what the last generation found of it once done: `fixed` (the signal is gone:
    verified) or `still_present`."""
    return await service.get_action(ctx.session, ctx.tenant.tenant_id, data.id)


@router.patch(
    "updateAction",
    "/v1/seo/actions/{id}",
    access=Access.editor,
    errors=[SeoActionNotFound, IllegalActionTransition, AssigneeNotMember],
)
async def update_action(ctx: Context, data: schemas.UpdateActionInput) -> schemas.SeoAction:
    """Edit, assign, schedule or move an action through its states.

    Only what is sent changes; `assigneeId` and `dueDate` null clear them. Allowed moves:
    open <-> in_progress; open | in_progress -> done; done -> open (reopen); dismissed -> open
    (restore). verified is set only by the system, when the next audit or sync no longer shows
    the evidence (and a regression reopens it); any other move is 409 naming the current
    status. A `status` equal to the current one is no move. Each move is in the history."""
    return await service.update(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.post(
    "dismissAction",
    "/v1/seo/actions/{id}/dismiss",
    access=Access.editor,
    errors=[SeoActionNotFound, IllegalActionTransition],
)
async def dismiss_action(ctx: Context, data: schemas.DismissActionInput) -> schemas.SeoAction:
    """Dismiss an action as won't-fix or not applicable, with a reason.

    From open or in_progress only (409 from done, verified or dismissed, naming the status).
    A dismissed fingerprint is not re-created by generation until it is restored
    (seo.updateAction status open). To silence a whole check use seo.updateAuditCheck."""
    return await service.dismiss(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.post(
    "generateActions",
    "/v1/seo/actions/generate",
    access=Access.editor,
    errors=[AuditNotFound, AuditNotCompleted],
)
async def generate_actions(
    ctx: Context, data: schemas.GenerateActionsInput
) -> schemas.GeneratedActions:
    """Recompute recommended actions from the latest local signals (idempotent).

    Reads what is stored, never a provider. Rules, deduplicated by fingerprint (a hash of type
    and subject):

    - `audit` (the newest completed audit, or `auditId`: 404 when not this organization's,
      409 when not completed): one `fix_technical_issue` per check failing at error or warning
      severity (not per URL); evidence: affected URLs, sample URLs, the pages' clicks.
    - `url_inspection`: one `fix_indexing` per URL whose newest inspection is FAIL or whose
      Google-chosen canonical differs from the declared one.
    - `search_console` (the insights of seo.listSearchInsights over the last 28 final days,
      100 impressions at least): `improve_snippet` per low_ctr query and page,
      `target_striking_distance` per striking-distance query and page, `refresh_content` per
      decaying page, `resolve_cannibalization` per cannibalized query.
    - `rank`: `recover_ranking` when a tracked keyword in the top 20 at the first of its last
      three checks is 5 or more places worse at the newest (not ranking counts as 100).
    - `geo` (the newest complete scan): `improve_geo` per AI search or user agent robots.txt
      blocks, and for a missing or invalid llms.txt.
    - `ai_visibility` (the newest run's reading of each active prompt): `close_ai_gap` per
      prompt whose answers named competitors and never the brand. Low citability makes no
      action yet.

    impact_score (0-100) = severity (error 40, warning 20; an opportunity 10) + clicks (or the
    clicks at stake; 10 a decade, at most 30) + impressions (5 a decade, at most 20) + search
    volume (5 a decade, at most 20) + URLs affected (10 a decade, at most 20) + positions lost
    (1 each, at most 20). At most 50 new actions per type per generation, highest impact
    first. A signal already acted on is refreshed (open or in progress: its evidence and
    impact), counted `updated` or `unchanged`; a dismissed one stays dismissed; a verified one
    whose signal is back is reopened (a regression). A done action whose signal an evaluated
    source no longer shows is `verified` (verification `fixed`); one still shown stays done
    (verification `still_present`). A source with nothing stored yet (no audit, no Search
    Console property or final day, no scan) is not evaluated: it creates and verifies nothing.
    Also runs, for its own source, after each completed audit, Search Console sync,
    URL-inspection run and rank check while the SEO settings' `actions.auto_generate` is on
    (the default). `data`: the actions created or reopened, at most 50, highest impact first."""
    return await generation.generate(
        ctx.session,
        ctx.tenant.tenant_id,
        sources=data.sources or schemas.SIGNAL_SOURCES,
        audit_id=data.audit_id,
    )


@router.post(
    "createJobFromAction",
    "/v1/seo/actions/{id}/job",
    access=Access.editor,
    errors=[
        SeoActionNotFound,
        ActionNotForContent,
        JobNotFound,
        InstanceDateTaken,
        DocumentNotFound,
        DocumentNotReady,
        ConnectionNotFound,
        PlanLimitReached,
    ],
)
async def create_job_from_action(
    ctx: Context, data: schemas.CreateJobFromActionInput
) -> schemas.ActionJobCreated:
    """Turn a content action into a content job (new one-off job or an instance on an existing
    job).

    Only an open or in-progress action of a content type (create_content, close_ai_gap,
    target_striking_distance, improve_snippet, improve_geo) becomes a job, else 409.
    refresh_content is 409 too: a refresh must revise the page's existing draft as a new
    revision of it, which generation cannot do yet.

    `new_job` (the default) creates an active one-off job with `seo_action_id` set to the
    action, topic_source manual and topics [the action's title], `name` (default the title),
    `keywords` (default the action's), `contentInstructions` (default built from the action's
    title, description, target URLs and evidence), `documentIds`, `publisherConnectionId`,
    `autoPublish` and `autoPublishThreshold`, as jobs.create takes them (and refuses them), and
    plans its one instance at `scheduledDate` (default now; the scheduler runs it at its next
    tick from then). `existing_job` plans an instance of `jobId` (404 when not this
    organization's) at `scheduledDate` with those keywords, instructions and documents as its
    overrides (the job's next topic is written; 409 when the job already has an instance then;
    a paused job does not run it). The action moves to in_progress (history says which job)
    with `job_id` set. When the draft that job instance writes (or any draft of the new job) is
    published, the action moves to done with its `draft_id`; the next audit or sync that no
    longer shows the signal verifies it."""
    return await service.create_job(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.post(
    "bulkActions", "/v1/seo/actions/bulk", access=Access.editor, errors=[AssigneeNotMember]
)
async def bulk_actions(
    ctx: Context, data: schemas.BulkActionsInput
) -> schemas.SeoActionBulkOutcome:
    """Start, complete, reopen, dismiss or assign many actions at once.

    Up to 100 ids, each on its own by the single operations' rules: `start` (-> in_progress),
    `complete` (-> done), `reopen` (-> open: a done one reopened, a dismissed one restored, an
    in-progress one stopped), `dismiss` (`reason` required), `assign` (`assigneeId` required: a
    member, else 400 for the whole request). `results` says per id whether it changed and if
    not why (a problem code: NOT_FOUND for an unknown id or another organization's, which is
    never touched; CONFLICT for a move its status does not allow)."""
    return await service.bulk(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)
