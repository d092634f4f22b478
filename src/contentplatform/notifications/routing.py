"""Who hears of an event: the rules of watches, in one place and without a database.

Two ways lead an event to a user:

1. **A watch on a resource** (a draft, a job, a publisher connection, a document): the event is
   about it (its `resource_type`/`resource_id`), or names it in its payload (`draft_id`,
   `job_id`, `publisher_connection_id`, `document_id`: a job's watch hears of the job's drafts and
   generation runs, a connection's of what is published through it). The watch's `events`
   choose among the types that fit its kind (`FITTING`); none chosen is all of them.
2. **The tenant watch** (one per member; it doubles as notification preferences): its `events`
   are the types the member hears of across the tenant, each through its role rule
   (`TENANT_RULES`): a draft's events reach its assignee, a mention the members it names,
   failures the job's creator and the admins, billing the admins; a type without a rule
   (document.ready, member.added, ...) reaches every member whose tenant watch lists it. None
   chosen is the defaults of the member's role (`tenant_defaults`). A deleted (muted) tenant
   watch brings nothing.

Never to the actor of the event, never to anyone without an active membership of the tenant.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from contentplatform.events import catalog

TENANT = "tenant"
IN_APP, EMAIL = "in_app", "email"
ADMIN = "admin"

# The types that notify: the activity trail's (the audit trail's are for admins to read, not
# to be told of), but the sample an endpoint's test sends.
NOTIFYING: tuple[str, ...] = tuple(
    name
    for name, kind in catalog.TYPES.items()
    if kind.scope == "activity" and name != "webhook.test"
)

# The payload key by which an event names a resource of each watchable kind.
RESOURCE_KEYS: dict[str, str] = {
    "draft": "draft_id",
    "job": "job_id",
    "publisher": "publisher_connection_id",
    "document": "document_id",
}
RESOURCE_TYPES: tuple[str, ...] = (TENANT, *RESOURCE_KEYS)

_DRAFT_TYPES = tuple(name for name in NOTIFYING if catalog.get(name).resource == "draft")
_JOB_TYPES = tuple(name for name in NOTIFYING if catalog.get(name).resource == "job")
_DOCUMENT_TYPES = tuple(name for name in NOTIFYING if catalog.get(name).resource == "document")

# What a watch on each kind may choose: the types an event of which can be about it.
FITTING: dict[str, tuple[str, ...]] = {
    TENANT: NOTIFYING,
    "draft": (*_DRAFT_TYPES, "generation.run_failed"),
    "job": (*_JOB_TYPES, *_DRAFT_TYPES, "generation.run_failed"),
    "publisher": ("draft.published", "draft.unpublished", "publish_attempt.failed"),
    "document": _DOCUMENT_TYPES,
}


class Rule(StrEnum):
    """Whom the tenant watch brings an event of a type to."""

    assignee = "assignee"  # the draft's assignee (payload `assignee_id`)
    mentioned = "mentioned"  # the members a comment mentions (payload `mentions`)
    job_owner = "job_owner"  # who created the job (payload `job_id`)
    creator = "creator"  # who opened it (payload `created_by`: a support ticket's)
    admins = "admins"
    everyone = "everyone"  # every member whose tenant watch lists the type


_FAILURES = {
    "publish_attempt.failed",
    "seo.audit_issue_on_published_page",
    "job.run_failed",
    "generation.run_failed",
    "document.failed",
    "crawl.failed",
}
_FOR_ADMINS = {
    "credits.low_balance",
    "subscription.updated",
    "webhook_endpoint.disabled",
    "media.license_expiring",
    "media.license_expired",
    "seo.connection_needs_reauth",
    "tenant.suspended",
    "tenant.reactivated",
    # A superadmin acting in the organization: its admins are told (impersonation guardrails).
    "impersonation.started",
}

TENANT_RULES: dict[str, frozenset[Rule]] = {
    **{name: frozenset({Rule.assignee}) for name in _DRAFT_TYPES},
    "comment.mentioned": frozenset({Rule.mentioned}),
    "publish_attempt.failed": frozenset({Rule.assignee, Rule.admins}),
    "seo.audit_issue_on_published_page": frozenset({Rule.assignee, Rule.admins}),
    "job.run_completed": frozenset({Rule.job_owner}),
    "job.run_failed": frozenset({Rule.job_owner, Rule.admins}),
    "generation.run_failed": frozenset({Rule.job_owner, Rule.admins}),
    "document.failed": frozenset({Rule.admins}),
    "crawl.failed": frozenset({Rule.admins}),
    "support_ticket.replied": frozenset({Rule.creator}),
    **{name: frozenset({Rule.admins}) for name in _FOR_ADMINS},
}

# The tenant watch every membership starts with: its drafts (assigned to me), mentions, my
# jobs' failures, support's answers to my tickets; admins also every failure and billing.
_MEMBER_DEFAULTS = frozenset(
    {*_DRAFT_TYPES, "job.run_failed", "generation.run_failed", "support_ticket.replied"}
)
_ADMIN_DEFAULTS = _MEMBER_DEFAULTS | _FAILURES | _FOR_ADMINS


def tenant_defaults(role: str) -> tuple[str, ...]:
    """The types a tenant watch that chose none brings, for a member of `role`, in the
    catalog's order."""
    chosen = _ADMIN_DEFAULTS if role == ADMIN else _MEMBER_DEFAULTS
    return tuple(name for name in NOTIFYING if name in chosen)


def unfit(resource_type: str, events: Iterable[str]) -> list[str]:
    """The types among `events` a watch on `resource_type` may not choose."""
    fitting = FITTING[resource_type]
    return [name for name in events if name not in fitting]


@dataclass(frozen=True)
class WatchView:
    """A stored watch, as the rules read it."""

    subject: str
    resource_type: str
    resource_id: uuid.UUID
    events: tuple[str, ...] | None
    channels: tuple[str, ...]
    muted: bool = False

    def chosen(self, role: str) -> tuple[str, ...]:
        if self.events:
            return self.events
        return (
            tenant_defaults(role) if self.resource_type == TENANT else FITTING[self.resource_type]
        )


@dataclass(frozen=True)
class EventView:
    """What the rules read of an event (the events' row, with the job's creator looked up)."""

    type: str
    actor_id: str | None
    resource_type: str
    resource_id: uuid.UUID | None
    payload: Mapping[str, Any]
    job_owner: str | None = None


def uuid_in(payload: Mapping[str, Any], key: str) -> uuid.UUID | None:
    """The id a payload names under `key`, if it is one (payloads are JSON: ids are strings)."""
    value = payload.get(key)
    if isinstance(value, uuid.UUID):
        return value
    if not isinstance(value, str):
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def named_ids(resource_id: uuid.UUID | None, payload: Mapping[str, Any]) -> set[uuid.UUID]:
    """Every resource id an event is about or names: whose watches may hear of it."""
    found = {uuid_in(payload, key) for key in RESOURCE_KEYS.values()}
    found.add(resource_id)
    return {value for value in found if value is not None}


def _ties(event: EventView, watch: WatchView) -> bool:
    if event.resource_type == watch.resource_type and event.resource_id == watch.resource_id:
        return True
    return uuid_in(event.payload, RESOURCE_KEYS[watch.resource_type]) == watch.resource_id


def _named(event: EventView, rule: Rule, members: Mapping[str, str]) -> Iterable[str]:
    if rule is Rule.assignee:
        assignee = event.payload.get("assignee_id")
        return [assignee] if isinstance(assignee, str) else []
    if rule is Rule.mentioned:
        mentions = event.payload.get("mentions")
        if not isinstance(mentions, list):
            return []
        return [subject for subject in mentions if isinstance(subject, str)]
    if rule is Rule.job_owner:
        return [event.job_owner] if event.job_owner else []
    if rule is Rule.creator:
        creator = event.payload.get("created_by")
        return [creator] if isinstance(creator, str) else []
    if rule is Rule.admins:
        return [subject for subject, role in members.items() if role == ADMIN]
    return members.keys()


DEFAULT_CHANNELS: tuple[str, ...] = (IN_APP,)


def _by_tenant_watch(watch: WatchView | None, role: str, type_: str) -> tuple[str, ...]:
    """The channels a member's tenant watch brings an event of `type_` by; none: it does not
    (muted, or the type is not among its events). No watch yet is the defaults."""
    if watch is None:
        return DEFAULT_CHANNELS if type_ in tenant_defaults(role) else ()
    if watch.muted or type_ not in watch.chosen(role):
        return ()
    return watch.channels


def recipients(
    event: EventView,
    *,
    members: Mapping[str, str],
    resource_watches: Iterable[WatchView],
    tenant_watches: Mapping[str, WatchView],
) -> dict[str, set[str]]:
    """Who hears of `event`, each with the channels their watches chose.

    `members`: the tenant's active members (subject -> role); `resource_watches`: the tenant's
    watches on the resources the event names (others are skipped); `tenant_watches`: the
    members' tenant watches by subject (a member without one has the defaults)."""
    if event.type not in NOTIFYING:
        return {}
    chosen: dict[str, set[str]] = {}
    for watch in resource_watches:
        if watch.resource_type == TENANT or not _ties(event, watch):
            continue
        if event.type in watch.chosen(members.get(watch.subject, "")):
            chosen.setdefault(watch.subject, set()).update(watch.channels)
    rules = TENANT_RULES.get(event.type, frozenset({Rule.everyone}))
    for rule in rules:
        for subject in _named(event, rule, members):
            role = members.get(subject)
            if role is not None:
                channels = _by_tenant_watch(tenant_watches.get(subject), role, event.type)
                if channels:
                    chosen.setdefault(subject, set()).update(channels)
    return {
        subject: channels
        for subject, channels in chosen.items()
        if subject in members and subject != event.actor_id
    }
