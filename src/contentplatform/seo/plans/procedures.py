"""Declarations only: seoPlans.list, create, generate, calendar, getById, update, delete,
regenerate, approve, archive, addItem, updateItem, deleteItem, getPerformance."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.documents.errors import DocumentNotFound, DocumentNotReady
from contentplatform.job_instances.errors import InstanceDateTaken
from contentplatform.jobs.errors import JobNotFound
from contentplatform.kit.schemas import Success
from contentplatform.publishers.errors import ConnectionNotFound
from contentplatform.seo.actions.errors import SeoActionNotFound
from contentplatform.seo.plans import approval, items, performance, schemas, service
from contentplatform.seo.plans.errors import (
    DateOutsideMonth,
    IllegalPlanTransition,
    ItemNotEditable,
    NothingToApprove,
    PlanFull,
    PlanKeyUsed,
    PlanMonthTaken,
    SeoPlanItemNotFound,
    SeoPlanNotFound,
)

router = ProcedureRouter("seoPlans", tag="SEO Plans")


@router.get("list", "/v1/seo-plans", access=Access.member)
async def list_plans(ctx: Context, data: schemas.ListSeoPlansInput) -> schemas.SeoPlanPage:
    """Monthly SEO plans, newest month first.

    Archived plans appear only when `status=archived` is asked for; deleted plans never.
    `year` keeps the plans of that year's months. `counts` has every item status; `item_count`
    their sum."""
    return await service.list_plans(ctx.session, ctx.tenant.tenant_id, data)


@router.post("create", "/v1/seo-plans", access=Access.editor, errors=[PlanMonthTaken])
async def create_plan(ctx: Context, data: schemas.CreateSeoPlanInput) -> schemas.SeoPlan:
    """Create an empty plan for a month, to fill by hand.

    `month` (YYYY-MM) is the current month of the organization's time zone up to 12 months
    ahead (400 otherwise). `name` defaults to 'SEO plan <Month YYYY>'. The plan is a draft with
    no items; seoPlans.addItem fills it. One plan per month that is not archived (nor deleted):
    409 naming the existing plan."""
    return await service.create(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.post(
    "generate",
    "/v1/seo-plans/generate",
    access=Access.editor,
    errors=[PlanMonthTaken, PlanKeyUsed, InsufficientCredits, DocumentNotFound, DocumentNotReady],
)
async def generate_plan(ctx: Context, data: schemas.GenerateSeoPlanInput) -> schemas.SeoPlan:
    """Generate a month's plan: scored, de-duplicated topics and keywords with briefs, spread
    over the month's publish days.

    Answers the plan `generating` at once; durable background work (it survives a crash and
    resumes) makes it: collect candidates from the stored signals asked for (`signals`, default
    all: `search_console`, the selected property's query rows of the 28 final days; `rank`,
    active tracked keywords; `actions`, open SEO actions of a content type; `keyword_research`,
    research kept 30 days; `knowledge`, the key terms (YAKE!) of the ready knowledge documents,
    `documentIds` or every one; `ai_visibility` reads nothing yet) -> normalize and
    de-duplicate -> drop what we rank top 3 for, what another plan or a draft targeted in the
    last 6 months, navigational (brand) queries and `excludeKeywords` -> cluster so one page
    serves one intent (keywords whose stored SERPs share 3 or more top-10 URLs, else the same
    stems or stems alike by rapidfuzz) -> score 0-100 (demand, ease, intent, knowledge
    relevance, boosts for open actions, striking distance, `focusTopics`, tracked keywords) ->
    pick `itemCount` to `contentMix` -> spread best first over the month's `publishWeekdays` in
    the organization's time zone (after today; `blackoutDates` left out) -> write each item's
    title, rationale and brief with the offline writer (extractive, deterministic: the same
    signals write the same plan). Each item carries its forecast: search volume (else Search
    Console impressions a month) x CTR at its target position (5; 3 for a refresh already in
    the top 10). `generation` {status, step, percent} shows progress; the plan ends `draft`
    with its items `proposed`, or `failed` with the reason (no publish day left, say).

    Credits (kind `seoPlans.generate`): 1 per started 10 items asked, held at once (402 when
    short), committed for the items written, given back on failure. `idempotencyKey`: the
    same key answers the same plan and is charged once (a key spent on a plan since deleted is
    409). 409 when the month already has a plan that is not archived. Defaults come from
    seo.getSettings' `planning`."""
    return await service.generate(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.get("calendar", "/v1/seo-plans/calendar", access=Access.member)
async def plan_calendar(
    ctx: Context, data: schemas.SeoPlanCalendarInput
) -> list[schemas.SeoPlanCalendarEntry]:
    """Plan items on a calendar window, with the live state of their job instances and drafts.

    Items of plans that are not archived dated `startDate`..`endDate` (inclusive; at most 366
    days, else 400), by date; `status` keeps one item status. Mirrors jobs.calendar (an array,
    one object per item)."""
    return await service.calendar_of(ctx.session, ctx.tenant.tenant_id, data)


@router.get("getById", "/v1/seo-plans/{id}", access=Access.member, errors=[SeoPlanNotFound])
async def get_plan(ctx: Context, data: schemas.SeoPlanIdInput) -> schemas.SeoPlanDetail:
    """One plan with all its items.

    Items by target date, then position (a plan holds at most 100, so they come inline).
    `rationale` cites the evidence, e.g. 'Ranks #14 for "x" with 3,100 impressions in 28
    days'. An approved plan's items show the state of their job instances and drafts."""
    return await service.detail(ctx.session, ctx.tenant.tenant_id, data.id)


@router.patch(
    "update",
    "/v1/seo-plans/{id}",
    access=Access.editor,
    errors=[SeoPlanNotFound, IllegalPlanTransition, ConnectionNotFound],
)
async def update_plan(ctx: Context, data: schemas.UpdateSeoPlanInput) -> schemas.SeoPlan:
    """Rename a plan or edit its goals, notes and default publisher.

    Only what is sent changes (`goals`, `notes` and `publisherConnectionId` null clear them).
    Not while generating or archived (409). `publisherConnectionId` must be this
    organization's (404)."""
    return await service.update(ctx.session, ctx.tenant.tenant_id, data)


@router.delete(
    "delete",
    "/v1/seo-plans/{id}",
    access=Access.admin,
    errors=[SeoPlanNotFound, IllegalPlanTransition],
)
async def delete_plan(ctx: Context, data: schemas.SeoPlanIdInput) -> Success:
    """Delete a plan that is not running.

    A soft delete of a draft, failed, completed or archived plan (it frees its month); an
    approved plan must be archived first and a generating one must end (409), so scheduled work
    is never orphaned."""
    return await service.delete(ctx.session, ctx.tenant.tenant_id, data.id)


@router.post(
    "regenerate",
    "/v1/seo-plans/{id}/regenerate",
    access=Access.editor,
    errors=[SeoPlanNotFound, IllegalPlanTransition, InsufficientCredits],
)
async def regenerate_plan(ctx: Context, data: schemas.RegenerateSeoPlanInput) -> schemas.SeoPlan:
    """Re-propose a draft plan's open items, keeping what the team accepted or wrote.

    Draft or failed plans only (409 otherwise). Keeps manual and locked items, and accepted
    ones unless `keepAccepted` is false; every other item is proposed anew by generation's
    rules (seoPlans.generate) up to `itemCount` items in all, and never a rejected keyword.
    Credits as generate (kind `seoPlans.generate`); the same `idempotencyKey` twice runs once.
    Inputs not sent keep the settings' defaults (`signals`: the plan's last ones)."""
    return await service.regenerate(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "approve",
    "/v1/seo-plans/{id}/approve",
    access=Access.editor,
    errors=[
        SeoPlanNotFound,
        IllegalPlanTransition,
        NothingToApprove,
        JobNotFound,
        ConnectionNotFound,
        InstanceDateTaken,
        SeoActionNotFound,
    ],
)
async def approve_plan(ctx: Context, data: schemas.ApproveSeoPlanInput) -> schemas.SeoPlanApproved:
    """Approve a plan: its accepted items become scheduled job instances that feed generation.

    draft -> approved (409 otherwise, and when no item is accepted). `new_job` (the default)
    creates one active job (job_type scheduled, topic_source seo_plan, scheduled_dates the
    items' times, topics their titles, `publisherConnectionId`, `autoPublish`,
    `autoPublishThreshold`); `existing_job` adds to `jobId` (default
    settings.planning.default_job_id; 404 when not this organization's). Each accepted item (and
    proposed ones with `includeProposed`) gets its own job instance at 09:00 of its target date
    in the organization's time zone (a second item that day 15 minutes later, and so on),
    carrying its title as the topic, its keywords, its brief as contentInstructions and its
    documentIds; the item becomes `scheduled` with `job_instance_id`, and its status then
    follows the instance and draft (in_progress, drafted, published with its URL, skipped,
    failed). An item from an SEO action keeps `seo_action_id`; that action goes in_progress and
    done when the item is published. With settings.planning.auto_track_keywords (the default)
    the scheduled items' primary keywords are tracked (rank tracking), tagged plan:YYYY-MM,
    without a check now. The plan is `completed` once every scheduled item ended.
    A refresh item's instance writes a new draft told to revise `target_url`: revising the
    page's existing draft as a new revision is not built yet."""
    return await approval.approve(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.post(
    "archive",
    "/v1/seo-plans/{id}/archive",
    access=Access.editor,
    errors=[SeoPlanNotFound, IllegalPlanTransition],
)
async def archive_plan(ctx: Context, data: schemas.ArchiveSeoPlanInput) -> schemas.SeoPlan:
    """Archive a plan; for an approved plan, unstarted items are skipped.

    Any status but generating (409; archiving an archived plan is 409 too). Job instances of
    items not yet started are skipped with reason 'plan archived' (the items `skipped`);
    running and finished work is untouched. Frees the month for a new plan."""
    return await service.archive(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "addItem",
    "/v1/seo-plans/{id}/items",
    access=Access.editor,
    errors=[
        SeoPlanNotFound,
        IllegalPlanTransition,
        PlanFull,
        DateOutsideMonth,
        DocumentNotFound,
        DocumentNotReady,
        InstanceDateTaken,
    ],
)
async def add_item(ctx: Context, data: schemas.AddSeoPlanItemInput) -> schemas.SeoPlanItem:
    """Add a topic to a plan by hand.

    Source `manual`, `accepted` and `locked` (regeneration keeps it). `targetDate` must be a day
    of the plan's month (400); a refresh needs `targetUrl` (400). On an approved plan the item
    is scheduled at once on the plan's job. 409 on generating, archived or completed plans; 400
    past 100 items."""
    return await items.add_item(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.patch(
    "updateItem",
    "/v1/seo-plans/{id}/items/{itemId}",
    access=Access.editor,
    errors=[
        SeoPlanNotFound,
        SeoPlanItemNotFound,
        IllegalPlanTransition,
        ItemNotEditable,
        DateOutsideMonth,
        DocumentNotFound,
        DocumentNotReady,
    ],
)
async def update_item(ctx: Context, data: schemas.UpdateSeoPlanItemInput) -> schemas.SeoPlanItem:
    """Edit, accept/reject, lock or reschedule (drag on the calendar) a plan item.

    Only what is sent changes. Before approval: edit freely; `status` moves between proposed,
    accepted and rejected. After approval: only while the item's job instance is pending (not
    taken by a run), and the change is mirrored to it (scheduled_date, topic, keywords,
    instructions, documents); otherwise 409 naming the instance status. `status` no longer
    moves once scheduled (409). 409 on generating, archived or completed plans."""
    return await items.update_item(ctx.session, ctx.tenant.tenant_id, data)


@router.delete(
    "deleteItem",
    "/v1/seo-plans/{id}/items/{itemId}",
    access=Access.editor,
    errors=[SeoPlanNotFound, SeoPlanItemNotFound, IllegalPlanTransition, ItemNotEditable],
)
async def delete_item(ctx: Context, data: schemas.SeoPlanItemIdInput) -> Success:
    """Remove an item from a plan.

    Removing a line is an edit of the plan (deleting the plan itself is admin's). After
    approval only while its job instance is pending; that instance is then skipped (409
    naming the instance status otherwise)."""
    return await items.delete_item(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "getPerformance",
    "/v1/seo-plans/{id}/performance",
    access=Access.member,
    errors=[SeoPlanNotFound],
)
async def get_performance(
    ctx: Context, data: schemas.SeoPlanPerformanceInput
) -> schemas.SeoPlanPerformance:
    """Results of a plan: what was published and how it performs in search, rank tracking and
    AI answers.

    From stored data only: each published item's Search Console page rows (web, its URL as
    published) from its publication day to `endDate` (default today in the organization's
    zone), in all and at 30, 60 and 90 days after publishing (`milestones`: `reached` once the
    window ended), each against the forecast (monthly clicks x days / 30); `rank_position` the
    tracked position of its primary keyword; `ai_mentions` and `ai_citations` 0 until AI
    visibility exists. `totals` sums the items, and their milestones. Items without traction
    are candidates for next month's refresh."""
    return await performance.performance(ctx.session, ctx.tenant.tenant_id, data)
