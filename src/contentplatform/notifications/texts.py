"""What a notification says: a title, a sentence and a link, in plain text, from the event.

Made from the event's payload (ids, titles, names, statuses; never content), each value cleaned
as names from elsewhere are (`kit.text.cleaned`: no markup, no control or invisible characters,
one line, bounded), so nothing in a notification is markup: a client shows it as text.

Links are paths of the app, relative to wherever it is served: `/drafts/<id>`, `/jobs/<id>`,
`/documents/<id>`, `/publishers/<id>`, `/generation-runs/<id>`, `/media/<id>`,
`/settings/billing` (credits and the subscription), `/team` (members),
`/settings/webhooks/<id>` (an endpoint), `/support/tickets/<id>` (a support ticket); `/activity`
for anything else.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from contentplatform.events import catalog
from contentplatform.kit.text import cleaned
from contentplatform.notifications.routing import uuid_in

TITLE_LENGTH = 200
BODY_LENGTH = 1000
URL_LENGTH = 500
# A value quoted in a sentence (a title, a name, a reason) is cut to this.
VALUE_LENGTH = 160


@dataclass(frozen=True)
class Told:
    """A notification's text, for one recipient."""

    title: str
    body: str
    url: str


@dataclass(frozen=True)
class Said:
    """What the sentences of an event read from it."""

    type: str
    recipient: str
    actor: str | None  # the acting person's or key's name; None for the system
    payload: Mapping[str, Any]

    def value(self, *keys: str) -> str | None:
        """The first of `keys` the payload holds as text (or a number), cleaned."""
        for key in keys:
            found = self.payload.get(key)
            if isinstance(found, bool):
                continue
            if isinstance(found, int | float):
                return str(found)
            if isinstance(found, str):
                text = cleaned(found, VALUE_LENGTH)
                if text:
                    return text
        return None

    def quoted(self, *keys: str, otherwise: str) -> str:
        found = self.value(*keys)
        return f"“{found}”" if found else otherwise

    @property
    def by(self) -> str:
        return f" by {self.actor}" if self.actor else ""

    @property
    def who(self) -> str:
        return self.actor or "Someone"

    def because(self, *keys: str) -> str:
        found = self.value(*keys)
        return f": {found}" if found else ""


def _draft(said: Said) -> str:
    return said.quoted("title", "draft_title", otherwise="A draft")


def _status_changed(said: Said) -> tuple[str, str]:
    before, after = said.value("from"), said.value("to")
    title = f"Draft {after}" if after else "Draft moved"
    moved = f" moved from {before} to {after}" if before and after else " moved"
    return title, f"{_draft(said)}{moved}{said.by}."


def _assigned(said: Said) -> tuple[str, str]:
    if said.payload.get("assignee_id") == said.recipient:
        return "Draft assigned to you", f"{_draft(said)} was assigned to you{said.by}."
    return "Draft assigned", f"{_draft(said)} was assigned for review{said.by}."


def _mentioned(said: Said) -> tuple[str, str]:
    mentions = said.payload.get("mentions")
    if isinstance(mentions, list) and said.recipient in mentions:
        return "You were mentioned", f"{said.who} mentioned you in a comment on {_draft(said)}."
    return "Members were mentioned", f"{said.who} mentioned members in a comment on {_draft(said)}."


def _job(said: Said) -> str:
    return said.quoted("job_name", "name", otherwise="A job")


def _run_completed(said: Said) -> tuple[str, str]:
    count = said.payload.get("drafts_created", said.payload.get("draft_count"))
    if isinstance(count, int) and not isinstance(count, bool):
        wrote = f", writing {count} draft{'' if count == 1 else 's'}"
    else:
        wrote = ""
    return "Job run finished", f"{_job(said)} finished{wrote}."


def _document(said: Said) -> str:
    return said.quoted("name", "filename", "document_name", "title", otherwise="A document")


def _media(said: Said) -> str:
    return said.quoted("filename", otherwise="an image")


def _day(said: Said) -> str:
    return (said.value("expires_at") or "")[:10] or "its end date"


def _used_by(said: Said) -> str:
    drafts = said.payload.get("drafts")
    count = drafts if isinstance(drafts, int) and not isinstance(drafts, bool) else 0
    return "1 draft uses it" if count == 1 else f"{count} drafts use it"


def _low_balance(said: Said) -> tuple[str, str]:
    left = said.value("balance", "available", "remaining")
    return "Credits running low", (
        f"{left} credits left." if left else "The organization's credits are running low."
    )


def _subscription(said: Said) -> tuple[str, str]:
    plan, status = said.value("plan", "plan_name"), said.value("status")
    if plan and status:
        return "Subscription updated", f"The plan is now {plan} ({status})."
    if plan or status:
        return "Subscription updated", f"The subscription is now {plan or status}."
    return "Subscription updated", "The plan or the subscription's status changed."


def _member(verb: str) -> Callable[[Said], tuple[str, str]]:
    def sentence(said: Said) -> tuple[str, str]:
        name = said.value("name", "email", "display_name", "user_id") or "A member"
        title = "New member" if verb == "joined" else "Member left"
        return title, f"{name} {verb} the organization."

    return sentence


# webhooks' disabled_reason codes, in words.
_DISABLED_BECAUSE: dict[str, str] = {
    "failing": "every delivery to it failed, retries included, for a whole retry window",
    "gone": "it answered 410 Gone",
}


SENTENCES: dict[str, Callable[[Said], tuple[str, str]]] = {
    "draft.created": lambda s: ("New draft", f"{_draft(s)} was created{s.by}."),
    "draft.status_changed": _status_changed,
    "draft.assigned": _assigned,
    "draft.commented": lambda s: ("New comment", f"{s.who} commented on {_draft(s)}."),
    "comment.mentioned": _mentioned,
    "draft.published": lambda s: ("Draft published", f"{_draft(s)} was published{s.by}."),
    "draft.unpublished": lambda s: ("Draft unpublished", f"{_draft(s)} was taken down{s.by}."),
    "publish_attempt.failed": lambda s: (
        "Publishing failed",
        f"{_draft(s)} could not be published{s.because('error', 'reason')}.",
    ),
    "job.run_completed": _run_completed,
    "job.run_failed": lambda s: (
        "Job run failed",
        f"A run of {s.quoted('job_name', 'name', otherwise='a job')} failed"
        f"{s.because('error', 'reason')}.",
    ),
    "generation.run_failed": lambda s: (
        "Generation failed",
        f"Writing {s.quoted('title', 'draft_title', otherwise='a draft')} failed"
        f"{s.because('error', 'reason')}.",
    ),
    "document.ready": lambda s: ("Document ready", f"{_document(s)} is processed and searchable."),
    "document.failed": lambda s: (
        "Document failed",
        f"{_document(s)} could not be processed{s.because('error', 'reason')}.",
    ),
    "crawl.started": lambda s: (
        "Crawl started",
        f"A crawl of {s.value('start_url') or 'a site'} started{s.by}.",
    ),
    "crawl.completed": lambda s: (
        "Crawl finished",
        f"The crawl stored {s.value('pages_crawled') or 0} pages and found "
        f"{s.value('broken_links') or 0} broken links.",
    ),
    "crawl.failed": lambda s: (
        "Crawl failed",
        f"A website crawl failed{s.because('reason')}; the pages it fetched are kept.",
    ),
    "crawl.cancelled": lambda s: (
        "Crawl cancelled",
        f"A website crawl was cancelled after {s.value('pages_crawled') or 0} pages.",
    ),
    "media.license_expiring": lambda s: (
        "Licence ending",
        f"The licence of {_media(s)} ends on {_day(s)}; {_used_by(s)}. Renew it or replace "
        "the image before then.",
    ),
    "media.license_expired": lambda s: (
        "Licence ended",
        f"The licence of {_media(s)} ended on {_day(s)}; {_used_by(s)}. No draft can be "
        "published with it until the licence is renewed or the image replaced.",
    ),
    "credits.low_balance": _low_balance,
    "tenant.suspended": lambda s: (
        "Organization suspended",
        f"The platform's operators suspended this organization{s.because('reason')}. Nobody can "
        "act in it, and its schedules and webhooks wait, until it is reactivated.",
    ),
    "tenant.reactivated": lambda s: (
        "Organization reactivated",
        "The platform's operators reactivated this organization: its schedules and webhooks "
        "resume.",
    ),
    "impersonation.started": lambda s: (
        "Support session started",
        f"{s.value('superadmin') or 'A platform operator'} opened a "
        f"{'read-write' if s.value('mode') == 'read_write' else 'read-only'} support session "
        f"in this organization until {s.value('expires_at') or 'within the hour'}"
        f"{s.because('reason')}",
    ),
    "subscription.updated": _subscription,
    "member.added": _member("joined"),
    "member.removed": _member("left"),
    "seo.audit_issue_on_published_page": lambda s: (
        "New SEO error on a published page",
        f"The audit found {s.value('check_summary') or 'an error'} on "
        f"{s.value('url') or 'a page'}, published from the draft "
        f"{s.quoted('title', otherwise='of ours')}: edit or regenerate it.",
    ),
    "seo.connection_needs_reauth": lambda s: (
        "SEO connection needs reauthorization",
        f"{s.value('provider') or 'An SEO provider'} no longer accepts our access"
        f"{s.because('reason')} Connect it again to resume syncing.",
    ),
    "support_ticket.replied": lambda s: (
        "Support replied",
        f"Support answered your ticket #{s.value('number') or '?'}{s.because('subject')}.",
    ),
    "webhook_endpoint.disabled": lambda s: (
        "Webhook endpoint disabled",
        f"{s.value('url') or 'An endpoint'} was disabled: "
        f"{_DISABLED_BECAUSE.get(str(s.value('reason')), 'it kept failing')}. Fix it, then "
        "re-enable it and redeliver what failed.",
    ),
}


def _path(kind: str, value: uuid.UUID | None) -> str | None:
    return f"/{kind}/{value}" if value is not None else None


def url_of(resource_type: str, resource_id: uuid.UUID | None, payload: Mapping[str, Any]) -> str:
    """The app's page of what the event is about (see the module's docstring)."""
    pages = {
        "draft": "drafts",
        "job": "jobs",
        "document": "documents",
        "publisher": "publishers",
        "generation_run": "generation-runs",
        "crawl_run": "website-scan/crawls",
        "media": "media",
    }
    if resource_type == "seo_connection":
        return "/seo/connections"
    if resource_type in pages:
        return _path(pages[resource_type], resource_id) or "/activity"
    if resource_type == "tenant":
        return "/settings/billing"
    if resource_type == "member":
        return "/team"
    if resource_type == "webhook_endpoint":
        return _path("settings/webhooks", resource_id) or "/settings/webhooks"
    if resource_type == "support_ticket":
        return _path("support/tickets", resource_id) or "/support/tickets"
    draft = uuid_in(payload, "draft_id")
    return _path("drafts", draft) or "/activity"


def tell(
    type_: str,
    *,
    recipient: str,
    actor_type: str,
    actor_name: str | None,
    resource_type: str,
    resource_id: uuid.UUID | None,
    payload: Mapping[str, Any],
) -> Told:
    """The notification of an event of `type_` for `recipient`."""
    actor = cleaned(actor_name or "", VALUE_LENGTH) if actor_type != "system" else ""
    said = Said(type=type_, recipient=recipient, actor=actor or None, payload=payload)
    sentence = SENTENCES.get(type_)
    if sentence is None:
        kind = catalog.get(type_)
        title, body = kind.name, kind.summary
    else:
        title, body = sentence(said)
    return Told(
        title=cleaned(title, TITLE_LENGTH),
        body=cleaned(body, BODY_LENGTH),
        url=url_of(resource_type, resource_id, payload)[:URL_LENGTH],
    )
