"""Who hears of what (routing.py) and what they read (texts.py), below the API: the rules over
members that have left, muted and email-only watches, and what a payload may hold."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from contentplatform.events import catalog
from contentplatform.notifications import routing, texts
from contentplatform.notifications.routing import EventView, WatchView

TENANT_ID = uuid.uuid4()
MEMBERS = {"ann": "member", "bob": "editor", "cy": "admin"}


def event(type_: str, actor: str | None = None, **payload: Any) -> EventView:
    kind = catalog.get(type_)
    resource_id = payload.pop("resource_id", uuid.uuid4())
    return EventView(
        type=type_,
        actor_id=actor,
        resource_type=kind.resource,
        resource_id=resource_id,
        payload=payload,
        job_owner=payload.pop("job_owner", None),
    )


def tenant_watch(subject: str, **changes: Any) -> WatchView:
    values: dict[str, Any] = {
        "subject": subject,
        "resource_type": "tenant",
        "resource_id": TENANT_ID,
        "events": None,
        "channels": ("in_app",),
    }
    return WatchView(**{**values, **changes})


def told(
    seen: EventView,
    *,
    members: dict[str, str] = MEMBERS,
    resource_watches: tuple[WatchView, ...] = (),
    tenant_watches: dict[str, WatchView] | None = None,
) -> dict[str, set[str]]:
    return routing.recipients(
        seen,
        members=members,
        resource_watches=resource_watches,
        tenant_watches=tenant_watches or {},
    )


def test_the_catalog_and_the_rules_agree() -> None:
    assert "webhook.test" not in routing.NOTIFYING
    assert all(catalog.get(name).scope == "activity" for name in routing.NOTIFYING)
    for kind, fitting in routing.FITTING.items():
        assert set(fitting) <= set(routing.NOTIFYING), kind
    assert set(routing.TENANT_RULES) <= set(routing.NOTIFYING)
    assert set(texts.SENTENCES) == set(routing.NOTIFYING)
    assert set(routing.tenant_defaults("member")) < set(routing.tenant_defaults("admin"))
    assert "credits.low_balance" not in routing.tenant_defaults("editor")


def test_a_member_who_left_hears_nothing_whatever_they_watch() -> None:
    draft_id = uuid.uuid4()
    watch = WatchView("dee", "draft", draft_id, None, ("in_app",))
    seen = event("draft.assigned", "bob", resource_id=draft_id, assignee_id="dee")
    assert told(seen, resource_watches=(watch,)) == {}
    assert told(seen, members={**MEMBERS, "dee": "member"}, resource_watches=(watch,)) == {
        "dee": {"in_app"}
    }


def test_no_tenant_watch_yet_is_the_defaults_and_a_muted_one_is_silence() -> None:
    seen = event("draft.status_changed", "bob", assignee_id="ann")
    assert told(seen) == {"ann": {"in_app"}}
    muted = tenant_watch("ann", muted=True)
    assert told(seen, tenant_watches={"ann": muted}) == {}
    # Muting the tenant watch leaves the watches on resources alone.
    draft = WatchView("ann", "draft", seen.resource_id or uuid.uuid4(), None, ("email",))
    assert told(seen, resource_watches=(draft,), tenant_watches={"ann": muted}) == {
        "ann": {"email"}
    }


def test_channels_of_every_watch_that_chose_it_are_joined() -> None:
    job_id = uuid.uuid4()
    seen = event("job.run_failed", resource_id=job_id, job_id=str(job_id), job_owner="bob")
    job = WatchView("bob", "job", job_id, ("job.run_failed",), ("email",))
    assert told(seen, resource_watches=(job,)) == {"bob": {"in_app", "email"}, "cy": {"in_app"}}


def test_a_tenant_wide_event_type_reaches_whoever_chose_it() -> None:
    seen = event("member.added", "dee", name="Dee")
    assert told(seen) == {}
    chosen = {
        "ann": tenant_watch("ann", events=("member.added",)),
        "cy": tenant_watch("cy", events=("member.added",), muted=True),
    }
    assert told(seen, tenant_watches=chosen) == {"ann": {"in_app"}}


@pytest.mark.parametrize(
    "payload",
    [
        {"mentions": "ann"},
        {"mentions": [None, 3, {"x": 1}]},
        {"assignee_id": ["ann"]},
        {"job_id": "not-a-uuid", "draft_id": 7},
    ],
)
def test_a_payload_of_unexpected_shapes_tells_nobody_and_breaks_nothing(payload: dict) -> None:
    for type_ in ("comment.mentioned", "draft.assigned", "draft.created"):
        assert told(event(type_, "bob", **payload)) == {}


def tell(type_: str, recipient: str = "ann", **payload: Any) -> texts.Told:
    kind = catalog.get(type_)
    return texts.tell(
        type_,
        recipient=recipient,
        actor_type="user",
        actor_name="Bob <b>Builder</b>",
        resource_type=kind.resource,
        resource_id=uuid.UUID(int=1),
        payload=payload,
    )


@pytest.mark.parametrize("type_", routing.NOTIFYING)
def test_every_type_is_told_in_plain_text_even_from_an_empty_payload(type_: str) -> None:
    said = tell(type_)
    assert said.title and said.body
    assert "<" not in said.title + said.body
    assert said.url.startswith("/")


def test_what_a_payload_holds_is_cleaned_and_bounded() -> None:
    said = tell(
        "draft.status_changed",
        title="A\u202e <i>long</i> title\n" + "x" * 400,
        **{"from": "reviewing", "to": "approved"},
    )
    assert said.title == "Draft approved"
    assert said.body.startswith("“A long title ")
    assert said.body.endswith("” moved from reviewing to approved by Bob Builder.")
    assert "\u202e" not in said.body and "\n" not in said.body
    assert len(said.body) < texts.VALUE_LENGTH + 80


def test_the_links_of_each_kind() -> None:
    one = uuid.UUID(int=1)
    assert tell("draft.published").url == f"/drafts/{one}"
    assert tell("job.run_completed").url == f"/jobs/{one}"
    assert tell("document.ready").url == f"/documents/{one}"
    assert tell("generation.run_failed").url == f"/generation-runs/{one}"
    assert tell("credits.low_balance").url == "/settings/billing"
    assert tell("member.removed").url == "/team"
    assert tell("webhook_endpoint.disabled").url == f"/settings/webhooks/{one}"


def test_what_the_recipient_reads_depends_on_whether_it_is_about_them() -> None:
    assert tell("draft.assigned", assignee_id="ann", title="T").title == "Draft assigned to you"
    assert tell("draft.assigned", assignee_id="bob", title="T").body == (
        "“T” was assigned for review by Bob Builder."
    )
    assert tell("comment.mentioned", mentions=["ann"]).title == "You were mentioned"
    assert tell("comment.mentioned", mentions=["bob"]).title == "Members were mentioned"
    assert tell("job.run_completed", job_name="Weekly", drafts_created=1).body == (
        "“Weekly” finished, writing 1 draft."
    )
