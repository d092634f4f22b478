"""The API document's tags: one per group of the reference (a `ProcedureRouter`'s `tag`), and one
for the requests a webhook publisher connection sends, each with the description a reader of the
docs sees above its operations. The service's document describes every tag it uses
(tests/test_openapi_document.py, and Spectral in CI)."""

from __future__ import annotations

from typing import Any

PUBLISHING_WEBHOOKS = "Webhook publishing"

DESCRIPTIONS: dict[str, str] = {
    "System": "Liveness, the service's version, and who the caller is (whoami).",
    "Documents": (
        "Knowledge documents: upload (a signed URL, then confirm), parsing, chunking and "
        "indexing for retrieval, status and content, archive and delete."
    ),
    "Jobs": (
        "Content-generation jobs: topics, schedule (cron in the organization's time zone), "
        "target and review rules; trigger, pause, clone, bulk actions, calendar and analytics."
    ),
    "Job instances": (
        "One planned or running execution of a job: its topic, its progress and the draft it wrote."
    ),
    "Generation": (
        "Generation runs: the pipeline that writes a draft grounded in the knowledge, its steps, "
        "progress stream (SSE) and cancellation."
    ),
    "Drafts": (
        "Drafts and their review: versions, comments and mentions, assignment, approval, "
        "archive, and publishing to a connection."
    ),
    "Publishers": (
        "Connections to the organization's CMSs (WordPress, Ghost, Shopify, Webflow, a signed "
        "webhook): credentials kept encrypted, connection tests, targets, publish attempts."
    ),
    PUBLISHING_WEBHOOKS: (
        "The requests a webhook publisher connection (publishers.create with type `webhook`) "
        "sends: one per article published, updated, put up as a draft or taken down, and its "
        "connection test. They are not events: a webhook endpoint cannot subscribe to them."
    ),
    "Chat": (
        "Questions over the organization's knowledge: conversations, answers streamed over SSE "
        "with their sources, resumable after a disconnect."
    ),
    "Billing and Credits": (
        "Credits (balance, ledger, holds, packs), the plan and its limits, the subscription, "
        "invoices, checkout and the billing portal, and the payment provider's events."
    ),
    "Website Scan": (
        "Crawls of the organization's website: configurations, runs, snapshots, diffs, page "
        "imports into the knowledge, discovery and the site profile."
    ),
    "Workflows": (
        "Generation pipelines as versioned workflows of steps (research, outline, write, fact "
        "check, review gate, ...), their runs and the default."
    ),
    "Media": (
        "The media library: uploads, stock photos with their licences and attribution, "
        "renditions, and where each image is used."
    ),
    "Notifications": (
        "In-app notifications and their preferences, watches on resources, and the activity "
        "trail of who did what."
    ),
    "Team and Settings": (
        "Members, roles and invitations; organization settings, brand voice, content strategy, "
        "content rules and API keys."
    ),
    "Features": "Feature flags as the organization sees them, and opting in or out of betas.",
    "Public": "What anyone may read without a token: a published post's public page and feed.",
    "Webhooks": (
        "Outbound webhook endpoints subscribed to the event catalog (deliveries signed per "
        "Standard Webhooks, retried, redeliverable), and the inbound events of the identity "
        "and payment providers."
    ),
    "SEO": "Search performance, audits, actions, rank tracking and AI visibility.",
    "SEO Plans": "Monthly content plans from the organization's own search signals.",
    "Analytics": "Content, automation and AI-usage analytics.",
    "Dashboard": "The organization's home: summary, activity, what is next and what needs me.",
    "Support": "Support tickets between an organization and the platform's staff.",
    "Admin": "The platform's staff: tenants, credits, feature flags, impersonation.",
}


def document_tags(used: list[str]) -> list[dict[str, Any]]:
    """The document's top-level `tags`: each tag in `used` (in that order) with its
    description."""
    described = [{"name": name, "description": DESCRIPTIONS.get(name)} for name in used]
    return [{key: value for key, value in tag.items() if value} for tag in described]
