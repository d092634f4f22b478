"""The event types: what each one means, who may subscribe to it, and where it lands.

`SUBSCRIBABLE` types are the public catalog: outbound webhook endpoints and watches choose
among them, and the API document publishes them as OpenAPI `webhooks`. The others are written
to the activity trail only (`scope` audit: security and settings changes, which `activity.list`
shows to admins under `scope=audit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Scope = Literal["activity", "audit"]
Category = Literal["review", "publishing", "generation", "ingestion", "billing", "team", "system"]


@dataclass(frozen=True)
class EventType:
    name: str
    summary: str
    category: Category
    # The kind of resource the event is about (its `resource_type`).
    resource: str
    subscribable: bool = True
    scope: Scope = "activity"


_TYPES = (
    EventType(
        "document.ready",
        "A document finished processing and is searchable.",
        "ingestion",
        "document",
    ),
    EventType("document.failed", "A document could not be processed.", "ingestion", "document"),
    EventType("draft.created", "A draft was created (generated or by hand).", "review", "draft"),
    EventType(
        "draft.status_changed",
        "A draft moved in the review flow (`from`, `to`).",
        "review",
        "draft",
    ),
    EventType("draft.assigned", "A draft was assigned to a member for review.", "review", "draft"),
    EventType("draft.commented", "Someone commented on a draft.", "review", "draft"),
    EventType("comment.mentioned", "A comment mentioned members (`mentions`).", "review", "draft"),
    EventType("draft.published", "A draft went live on a connection.", "publishing", "draft"),
    EventType(
        "draft.unpublished", "A draft was taken down from a connection.", "publishing", "draft"
    ),
    EventType(
        "publish_attempt.failed", "A publish or unpublish attempt failed.", "publishing", "draft"
    ),
    EventType("job.run_completed", "A job run finished and wrote its drafts.", "generation", "job"),
    EventType("job.run_failed", "A job run failed.", "generation", "job"),
    EventType("generation.run_failed", "A generation run failed.", "generation", "generation_run"),
    EventType(
        "credits.low_balance",
        "Credits fell to 10 % of the monthly grant, or to zero.",
        "billing",
        "tenant",
    ),
    EventType(
        "subscription.updated",
        "The plan or the subscription's status changed.",
        "billing",
        "tenant",
    ),
    EventType(
        "crawl.started",
        "A website crawl was queued (`trigger`: manual or schedule).",
        "ingestion",
        "crawl_run",
    ),
    EventType(
        "crawl.completed",
        "A website crawl finished; its snapshot is ready (`pages_crawled`, `broken_links`).",
        "ingestion",
        "crawl_run",
    ),
    EventType(
        "crawl.failed",
        "A website crawl failed (`error`); what it fetched is kept as a partial snapshot.",
        "ingestion",
        "crawl_run",
    ),
    EventType(
        "crawl.cancelled",
        "A website crawl was cancelled; what it fetched is kept as a partial snapshot.",
        "ingestion",
        "crawl_run",
    ),
    EventType(
        "media.license_expiring",
        "The licence of a media asset drafts use ends within 30 days (`expires_at`, `drafts`, "
        "`published_drafts`): renew it or replace the asset.",
        "publishing",
        "media",
    ),
    EventType(
        "media.license_expired",
        "The licence of a media asset drafts use has ended (`expires_at`, `drafts`, "
        "`published_drafts`): it can no longer be attached or published.",
        "publishing",
        "media",
    ),
    EventType("member.added", "A member joined the organization.", "team", "member"),
    EventType("member.removed", "A member left or was removed.", "team", "member"),
    EventType(
        "webhook.test",
        "A sample event sent by `webhooks.testEndpoint`.",
        "system",
        "webhook_endpoint",
    ),
    EventType(
        "webhook_endpoint.disabled",
        "An outbound webhook endpoint was disabled after failing (`reason`).",
        "system",
        "webhook_endpoint",
        subscribable=False,
    ),
    EventType(
        "seo.connection_needs_reauth",
        "An SEO provider's grant stopped working (revoked or expired, `provider`, `reason`): "
        "an admin must connect it again.",
        "system",
        "seo_connection",
        subscribable=False,
    ),
    EventType(
        "seo.audit_issue_on_published_page",
        "A technical SEO audit found a new error on the page of a draft published within 30 "
        "days (`draft_id`, `title`, `url`, `check_ids`, `checks`, `audit_id`).",
        "publishing",
        "draft",
        subscribable=False,
    ),
    # The audit trail: security and settings changes, for admins.
    EventType("member.role_changed", "A member's role changed.", "team", "member", False, "audit"),
    EventType("invitation.created", "Someone was invited.", "team", "invitation", False, "audit"),
    EventType(
        "invitation.revoked", "An invitation was revoked.", "team", "invitation", False, "audit"
    ),
    EventType(
        "settings.updated",
        "Settings changed (`changes` holds the diff).",
        "system",
        "settings",
        False,
        "audit",
    ),
    EventType("api_key.created", "An API key was created.", "system", "api_key", False, "audit"),
    EventType("api_key.revoked", "An API key was revoked.", "system", "api_key", False, "audit"),
    EventType(
        "feature.opt_in_changed",
        "A beta feature was opted in or out.",
        "system",
        "feature",
        False,
        "audit",
    ),
    # The platform's operators (admin.*, superadmins): the actor is the superadmin.
    EventType(
        "tenant.suspended",
        "The platform's operators suspended the organization (`reason`): nobody may act in it, "
        "its schedules and outbound webhooks wait.",
        "system",
        "tenant",
        subscribable=False,
    ),
    EventType(
        "tenant.reactivated",
        "The platform's operators reactivated the organization (`reason`).",
        "system",
        "tenant",
        subscribable=False,
    ),
    EventType(
        "impersonation.started",
        "A platform superadmin opened a support session acting in the organization "
        "(`superadmin`, `mode`, `reason`, `user_id`, `ticket_id`, `expires_at`).",
        "system",
        "impersonation",
        subscribable=False,
    ),
    EventType(
        "impersonation.ended",
        "A support session in the organization was ended (`superadmin`, `ended_by`).",
        "system",
        "impersonation",
        False,
        "audit",
    ),
    EventType(
        "tenant.overridden",
        "An operator overrode the organization's plan or limits (`note`, `changes`).",
        "billing",
        "tenant",
        False,
        "audit",
    ),
    EventType(
        "credits.adjusted",
        "An operator granted or clawed back credits (`amount`, `reason`).",
        "billing",
        "credit_ledger_entry",
        False,
        "audit",
    ),
    EventType(
        "feature.overridden",
        "An operator set or cleared a feature flag for the organization (`key`, `enabled`).",
        "system",
        "feature",
        False,
        "audit",
    ),
    EventType(
        "inbound_event.replayed",
        "An operator had a provider's event about the organization processed again.",
        "system",
        "inbound_event",
        False,
        "audit",
    ),
    EventType(
        "publisher.secret_rotated",
        "A connection's signing secret was rotated.",
        "system",
        "publisher",
        False,
        "audit",
    ),
    EventType(
        "webhook_endpoint.created",
        "An outbound webhook endpoint was added.",
        "system",
        "webhook_endpoint",
        False,
        "audit",
    ),
    EventType(
        "webhook_endpoint.updated",
        "An outbound webhook endpoint changed.",
        "system",
        "webhook_endpoint",
        False,
        "audit",
    ),
    EventType(
        "webhook_endpoint.deleted",
        "An outbound webhook endpoint was deleted.",
        "system",
        "webhook_endpoint",
        False,
        "audit",
    ),
    EventType(
        "webhook_endpoint.secret_rotated",
        "An endpoint's signing secret was rotated.",
        "system",
        "webhook_endpoint",
        False,
        "audit",
    ),
    EventType(
        "support_ticket.replied",
        "Platform support answered a ticket (told to the member who opened it).",
        "system",
        "support_ticket",
        False,
    ),
)

TYPES: dict[str, EventType] = {event.name: event for event in _TYPES}
SUBSCRIBABLE: tuple[str, ...] = tuple(event.name for event in _TYPES if event.subscribable)


def get(name: str) -> EventType:
    """The declared type; an undeclared name is a programming error, caught by the tests."""
    return TYPES[name]
