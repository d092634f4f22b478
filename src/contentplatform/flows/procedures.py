"""The operations whose rule crosses domains: declarations only; each flow module holds the rule.

Each is named and tagged with its group, as the reference lists it (drafts.publish is a Drafts
operation), and mounted beside that group's own.
"""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.billing import schemas as billing_schemas
from contentplatform.billing import service as billing
from contentplatform.billing.errors import (
    AlreadySubscribed,
    BillingUnavailable,
    NoCustomer,
    NotForSale,
    PlanNotFound,
    RedirectNotAllowed,
)
from contentplatform.billing.provider import Stripe
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.documents.errors import DocumentNotFound, DocumentNotReady
from contentplatform.drafts import schemas as draft_schemas
from contentplatform.drafts.errors import DraftNotFound, IllegalDraftTransition
from contentplatform.drafts.procedures import author_of
from contentplatform.flows import drafting, job_actions, publishing, quota, topics
from contentplatform.generation import schemas as generation_schemas
from contentplatform.job_instances import schemas as instance_schemas
from contentplatform.job_instances.errors import (
    InstanceDateTaken,
    InstanceNotRunnable,
    InstanceOfAnotherJob,
    JobInstanceNotFound,
    NothingToSelect,
)
from contentplatform.jobs import schemas as job_schemas
from contentplatform.jobs.errors import JobBusy, JobNotFound, NoTopic
from contentplatform.kit.schemas import Empty
from contentplatform.media.errors import LicenseForbidsUse
from contentplatform.publishers import attempts
from contentplatform.publishers import schemas as publishing_schemas
from contentplatform.publishers.errors import (
    AttemptUnderWay,
    BadScheduledAt,
    ConnectionNotFound,
    NoConnectionChosen,
    NothingToUnpublish,
    PublishedAsDraft,
    PublisherDisabled,
)
from contentplatform.settings import service as settings

drafts_router = ProcedureRouter("drafts", tag="Drafts")
generation_router = ProcedureRouter("generation", tag="Generation")
jobs_router = ProcedureRouter("jobs", tag="Jobs")
instances_router = ProcedureRouter("jobInstances", tag="Job instances")
billing_router = ProcedureRouter("billing", tag="Billing and Credits")


# --- Drafts -------------------------------------------------------------------------------------


@drafts_router.post(
    "createDraft",
    "/v1/drafts",
    access=Access.editor,
    errors=[InstanceOfAnotherJob, JobNotFound, JobInstanceNotFound],
)
async def create_draft(ctx: Context, data: draft_schemas.CreateDraftInput) -> draft_schemas.Draft:
    """Write a draft by hand; it starts in reviewing as version 1.

    Content is HTML, sanitized (scripts, event handlers and javascript: URLs are removed). `jobId`
    and `instanceId`, when given, must be a job and an instance of it of the organization (404 /
    400); an instanceId alone sets jobId to its job."""
    return await drafting.create_draft(ctx.session, ctx.tenant.tenant_id, author_of(ctx), data)


@drafts_router.post(
    "publish",
    "/v1/drafts/{id}/publish",
    access=Access.editor,
    errors=[
        BadScheduledAt,
        NoConnectionChosen,
        DraftNotFound,
        ConnectionNotFound,
        AttemptUnderWay,
        IllegalDraftTransition,
        PublishedAsDraft,
        PublisherDisabled,
        LicenseForbidsUse,
    ],
)
async def publish(
    ctx: Context, data: publishing_schemas.PublishDraftInput
) -> publishing_schemas.Published:
    """Publish an approved draft to a connection (or republish a published one).

    Records a publish attempt and runs it in the background with retries and backoff on transient
    failures; answers at once with the draft and the attempt (pending, or scheduled with `mode`
    schedule). Follow it with drafts.listPublishAttempts. The draft becomes published, with
    `published_url`, when the target accepts it; a failed attempt leaves it approved with the
    attempt's error. Republishing updates the copy on the target, never duplicates it. A request
    the target needs nothing for (this version already went there, or is going there now, with the
    same outcome) sends nothing and answers with that attempt; `force` sends it again. Only approved
    or published drafts (409); a disabled connection, or another attempt to the same connection
    still under way, is 409. Default connection: the draft's job's, else the organization's default
    (400 when there is none). A featured image whose licence has expired or rules out commercial
    use is 409 with the reason (media.attach): replace or detach it first. The featured image
    goes to each target the way it takes one (docs/guides/publishing.md)."""
    return await publishing.publish(
        ctx.session, ctx.tenant.tenant_id, data, by=ctx.identity.subject
    )


@drafts_router.get(
    "listPublishAttempts",
    "/v1/drafts/{id}/publish-attempts",
    access=Access.member,
    errors=[DraftNotFound],
)
async def list_publish_attempts(
    ctx: Context, data: publishing_schemas.DraftAttemptsInput
) -> publishing_schemas.DraftAttemptPage:
    """Publish attempts of a draft, newest first, with their tries and errors.

    Each attempt to publish, update or take down the draft on a connection: its status, each try
    with its outcome, the error that ended it, and the remote post's id and URL."""
    return await attempts.draft_attempts(ctx.session, ctx.tenant.tenant_id, data)


@drafts_router.post(
    "unpublish",
    "/v1/drafts/{id}/unpublish",
    access=Access.editor,
    errors=[
        DraftNotFound,
        ConnectionNotFound,
        AttemptUnderWay,
        NothingToUnpublish,
        PublisherDisabled,
    ],
)
async def unpublish(
    ctx: Context, data: publishing_schemas.UnpublishDraftInput
) -> publishing_schemas.Unpublished:
    """Take a published draft down from its targets, or cancel a scheduled publish.

    From the named connection, else from every connection the draft is live or scheduled on.
    Each live copy gets an unpublish attempt (`mode` unpublish), run in the background with
    retries like drafts.publish and listed by drafts.listPublishAttempts: WordPress and Ghost
    make the post a draft again, Shopify hides the article (`isPublished: false`), Webflow
    takes the item's live copy down (and marks it a draft), a webhook receives a signed
    `article.unpublished` event. A copy already deleted on the target counts as taken down.
    Scheduled publishes there are cancelled. The draft goes from published back to approved
    once no target keeps it live; republishing puts the same copy back. Answers at once with
    the draft and the attempts (pending, and cancelled). Neither live nor scheduled there: 409;
    an attempt to that connection still under way, or a copy on a disabled connection: 409."""
    return await publishing.unpublish(
        ctx.session, ctx.tenant.tenant_id, data, by=ctx.identity.subject
    )


@drafts_router.post(
    "archive",
    "/v1/drafts/{id}/archive",
    access=Access.editor,
    errors=[DraftNotFound, AttemptUnderWay, IllegalDraftTransition, PublisherDisabled],
)
async def archive(ctx: Context, data: publishing_schemas.ArchiveDraftInput) -> draft_schemas.Draft:
    """Archive a draft (any status but generating).

    It leaves the public blog feed at once and its scheduled publishes are cancelled; the
    copies on the targets stay, unless `unpublishRemote`: then each is taken down as
    drafts.unpublish does (attempts started once the archive commits, listed by
    drafts.listPublishAttempts). Generating or already archived: 409 (drafts.unarchive brings
    it back to review)."""
    return await publishing.archive(
        ctx.session, ctx.tenant.tenant_id, data, by=ctx.identity.subject
    )


# --- Jobs ---------------------------------------------------------------------------------------


@jobs_router.post(
    "bulk",
    "/v1/jobs/bulk/{action}",
    access=Access.admin,
    description=(
        "Each id is handled on its own: `results` says, per id, whether it changed and if not "
        "why (a problem code: NOT_FOUND for a missing id or another organization's, CONFLICT "
        "for a status that does not allow the action, PAYMENT_REQUIRED for a trigger without "
        "credits)."
    ),
)
async def bulk(ctx: Context, data: job_schemas.BulkJobsInput) -> job_schemas.BulkOutcome:
    """Pause, resume, trigger or delete up to 50 jobs at once."""
    return await job_actions.bulk(ctx.session, ctx.runtime, ctx.tenant.tenant_id, data)


@jobs_router.post(
    "trigger",
    "/v1/jobs/{id}/trigger",
    access=Access.member,
    errors=[
        NoTopic,
        DocumentNotReady,
        InsufficientCredits,
        JobNotFound,
        DocumentNotFound,
        JobBusy,
        NothingToSelect,
    ],
)
async def trigger(ctx: Context, data: job_schemas.JobIdInput) -> instance_schemas.JobInstance:
    """Run a job now: returns the new pending instance, whose generation run has started.

    Any job can be triggered, paused and completed ones too (their status does not change). One run
    at a time per job: 409 while a run is in flight. 402 when the organization lacks the credits a
    run holds. Follow the run with jobInstances.getProgress."""
    return await job_actions.trigger(ctx.session, ctx.runtime, ctx.tenant.tenant_id, data.id)


# --- Job instances ------------------------------------------------------------------------------


@instances_router.post(
    "create",
    "/v1/job-instances",
    access=Access.editor,
    errors=[DocumentNotReady, JobNotFound, DocumentNotFound, InstanceDateTaken],
)
async def create_instance(
    ctx: Context, data: instance_schemas.CreateInstanceInput
) -> instance_schemas.JobInstance:
    """Plan one occurrence of a job with its own keywords, instructions and documents.

    The scheduler runs it when its date comes (at once when the date has passed) unless the job is
    paused. `select_existing` takes an approved draft instead of generating. 409 when the job
    already has an instance at that date."""
    return await job_actions.plan_instance(ctx.session, ctx.tenant.tenant_id, data)


@instances_router.post(
    "generate",
    "/v1/job-instances/{id}/generate",
    access=Access.member,
    errors=[
        NoTopic,
        DocumentNotReady,
        InsufficientCredits,
        JobInstanceNotFound,
        DocumentNotFound,
        InstanceNotRunnable,
        JobBusy,
        NothingToSelect,
    ],
)
async def generate(
    ctx: Context, data: instance_schemas.InstanceIdInput
) -> instance_schemas.JobInstance:
    """Run an instance now with its own overrides; returns it.

    For a pending instance, or again for a failed or skipped one. A `generate` instance starts a
    generation run (follow it with getProgress); a `select_existing` one takes an approved draft
    (409 when none is left). 409 while it, or another run of its job, is in flight; 402 without the
    credits a run holds."""
    return await job_actions.generate_instance(
        ctx.session, ctx.runtime, ctx.tenant.tenant_id, data.id
    )


# --- Generation ---------------------------------------------------------------------------------


@generation_router.post(
    "suggestTopics",
    "/v1/generation/topics",
    access=Access.editor,
    errors=[DocumentNotFound, DocumentNotReady],
    feature="topic_suggestions",
)
async def suggest_topics(
    ctx: Context, data: generation_schemas.SuggestTopicsInput
) -> generation_schemas.TopicList:
    """Propose article topics from the organization's knowledge.

    Section headings and key phrases of the ready documents' passages (only `documentIds` when
    given, else the 100 newest ready documents), ranked by how much of the knowledge each stands
    for and, when given, by the `seedKeywords` (in the topic, and in the passages that best match
    them). Each names the passages it comes from (`source_documents`) and says why
    (`rationale`). With `excludeCovered` (the default), topics an existing draft (its title or
    the topic it was generated from) or a job's topic already covers are left out; without it
    they are listed too, with `covered_by_draft_id` naming the covering draft. No model is
    called and no credits are used; 20 calls an hour per organization (429 past them)."""
    return await topics.suggest_topics(ctx.session, ctx.runtime, ctx.tenant, data)


# --- Billing ------------------------------------------------------------------------------------


@billing_router.get("getQuota", "/v1/billing/quota", access=Access.member)
async def get_quota(ctx: Context, _: Empty) -> quota.Quota:
    """Plan limits against current usage.

    Items: credits (this period's debits against the plan's monthly credits), members (active
    members and pending invitations), documents, storage_bytes, active_jobs (active or running),
    publishers, webhook_endpoints and api_keys (live keys). `limit` null is unlimited. The same
    counts guard the writes: a create past a count limit is 403 naming the limit; credits short
    are 402 PAYMENT_REQUIRED."""
    return await quota.quota(ctx.session, ctx.tenant.tenant_id)


BILLING_PROVIDER = (
    " Billing not configured (CONTENTPLATFORM_STRIPE_SECRET_KEY: no plan is for sale, so an "
    "unknown plan is 404 and a tenant without a customer 409 first), or Stripe unreachable or "
    "failing: 503 with `retryable`, and nothing changed. Return URLs must be https URLs on an "
    "allowed origin, the operator's (CONTENTPLATFORM_BILLING_REDIRECT_ORIGINS) or the "
    "organization's (settings: security.allowedRedirectOrigins): else 400."
)


@billing_router.post(
    "createCheckoutSession",
    "/v1/billing/checkout-sessions",
    access=Access.admin,
    api_keys=False,
    description=(
        "A Stripe Checkout Session: subscription mode for a plan, one-time payment for a credit "
        "pack (`quantity` 1-10, packs only). The tenant id goes as `client_reference_id` and "
        "metadata; its Stripe customer is made on first need. Already subscribed and asking for "
        "a plan: 409 (change plans in the portal). An unknown or retired plan: 404; the free "
        "plan: 409." + BILLING_PROVIDER
    ),
    errors=[
        PlanNotFound,
        AlreadySubscribed,
        NotForSale,
        RedirectNotAllowed,
        BillingUnavailable,
    ],
)
async def create_checkout_session(
    ctx: Context, data: billing_schemas.CheckoutInput
) -> billing_schemas.CheckoutSession:
    """Start a hosted checkout for a plan or a credit pack."""
    return await billing.create_checkout(
        ctx.session,
        Stripe(ctx.settings),
        ctx.settings,
        ctx.tenant.tenant_id,
        data,
        tenant_origins=await settings.redirect_origins(ctx.session, ctx.tenant.tenant_id),
    )


@billing_router.post(
    "createPortalSession",
    "/v1/billing/portal-sessions",
    access=Access.admin,
    api_keys=False,
    description=(
        "A Stripe Customer Portal session (payment method, plan change, cancel, invoices), "
        "optionally deep-linked to a `flow`. No customer at the provider yet: 409. The URL is a "
        "single-use bearer credential: never logged or cached." + BILLING_PROVIDER
    ),
    errors=[NoCustomer, RedirectNotAllowed, BillingUnavailable],
)
async def create_portal_session(
    ctx: Context, data: billing_schemas.PortalInput
) -> billing_schemas.PortalSession:
    """Open the provider's customer portal."""
    return await billing.create_portal(
        ctx.session,
        Stripe(ctx.settings),
        ctx.settings,
        ctx.tenant.tenant_id,
        data,
        tenant_origins=await settings.redirect_origins(ctx.session, ctx.tenant.tenant_id),
    )
