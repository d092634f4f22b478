"""The features.* operations over REST and RPC: the flags as a member sees them, an admin's
opt-out and opt-in of a beta and what it changes at once, each refusal (403 for member and
editor, 404 for an unknown flag, 403 naming a flag that allows no opt-in, 409 over the
operator's override) and a second organization that keeps its own flags."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from contentplatform.features.models import FeatureOverride
from contentplatform.kit.db import Database, utcnow
from tests.conftest import Run
from tests.support.orgs import Org
from tests.support.problems import problem

CHAT = {
    "key": "chat",
    "enabled": True,
    "source": "default",
    "stage": "ga",
    "opt_in_allowed": False,
    "description": "Chat over the tenant's knowledge (chat.*)",
}
TOPICS = {
    "key": "topic_suggestions",
    "enabled": True,
    "source": "default",
    "stage": "beta",
    "opt_in_allowed": True,
    "description": "Topic suggestions from the knowledge base (generation.suggestTopics)",
}


def flags_of(org: Org, role: str = "member") -> dict[str, dict[str, Any]]:
    listed = org.ok("features.list", role=role)
    assert listed["total"] == len(listed["data"])
    return {flag["key"]: flag for flag in listed["data"]}


def opt(org: Org, key: str, enabled: bool, role: str = "admin"):
    return org.request("features.setOptIn", {"key": key, "enabled": enabled}, role=role)


def test_a_member_sees_every_flag_as_evaluated_for_the_organization(tenant: Org) -> None:
    listed = tenant.ok("features.list", role="member")
    assert listed == {"data": [CHAT, TOPICS], "total": 2}


def test_an_admin_opts_out_of_a_beta_and_back_in(tenant: Org) -> None:
    assert flags_of(tenant)["topic_suggestions"]["enabled"] is True  # cached now

    out = opt(tenant, "topic_suggestions", False)
    assert out.status_code == 200, out.text
    assert out.json() == {**TOPICS, "enabled": False, "source": "opt_in"}
    # The cached evaluation was retired at once.
    assert flags_of(tenant) == {
        "chat": CHAT,
        "topic_suggestions": {**TOPICS, "enabled": False, "source": "opt_in"},
    }

    back = opt(tenant, "topic_suggestions", True)
    assert back.status_code == 200, back.text
    assert back.json() == {**TOPICS, "enabled": True, "source": "opt_in"}
    assert flags_of(tenant, role="editor")["topic_suggestions"] == back.json()
    # Opting in twice is no change.
    assert opt(tenant, "topic_suggestions", True).json() == back.json()


@pytest.mark.parametrize("role", ["member", "editor"])
def test_only_an_admin_opts_in_or_out(tenant: Org, role: str) -> None:
    body = problem(opt(tenant, "topic_suggestions", False, role=role), 403, "FORBIDDEN")
    assert "admin" in body["detail"]
    assert flags_of(tenant)["topic_suggestions"] == TOPICS


def test_an_unknown_flag_is_404(tenant: Org) -> None:
    body = problem(opt(tenant, "teleportation", False), 404, "NOT_FOUND")
    assert "teleportation" in body["detail"]


def test_a_flag_that_allows_no_opt_in_is_403_naming_it(tenant: Org) -> None:
    for enabled in (False, True):
        body = problem(opt(tenant, "chat", enabled), 403, "FORBIDDEN")
        assert "'chat'" in body["detail"]
        assert body["feature"] == "chat"
    assert flags_of(tenant)["chat"] == CHAT


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"key": "topic_suggestions"}, "enabled"),
        ({"key": "topic_suggestions", "enabled": "sometimes"}, "enabled"),
        ({"key": "topic_suggestions", "enabled": False, "colour": "blue"}, "colour"),
        ({"key": "x" * 101, "enabled": False}, "key"),
    ],
)
def test_a_bad_input_is_400_naming_the_field(tenant: Org, data: dict, field: str) -> None:
    body = problem(tenant.request("features.setOptIn", data), 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}


def test_another_organization_keeps_its_own_flags(tenant: Org, other_tenant: Org) -> None:
    assert flags_of(other_tenant)["topic_suggestions"] == TOPICS  # cached for the other one
    assert opt(tenant, "topic_suggestions", False).status_code == 200

    assert flags_of(tenant)["topic_suggestions"]["enabled"] is False
    assert flags_of(other_tenant) == {"chat": CHAT, "topic_suggestions": TOPICS}
    # And the other one's choice is its own too.
    assert opt(other_tenant, "topic_suggestions", True).json()["source"] == "opt_in"
    assert flags_of(tenant)["topic_suggestions"]["enabled"] is False


def store(run: Run, tenant_id: uuid.UUID, key: str, enabled: bool, source: str) -> None:
    """A stored choice as the operator's tools (to come) would write it."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            now = utcnow()
            session.add(
                FeatureOverride(
                    tenant_id=tenant_id,
                    key=key,
                    enabled=enabled,
                    source=source,
                    set_by="operator",
                    set_at=now,
                )
            )

    run(scenario)


def test_the_operators_override_wins_and_no_opt_in_changes_it(tenant: Org, run: Run) -> None:
    # Stored before anything read the organization's flags (nothing cached yet).
    store(run, tenant.tenant_id, "topic_suggestions", False, "override")
    store(run, tenant.tenant_id, "chat", False, "override")

    flags = flags_of(tenant)
    assert flags["topic_suggestions"] == {**TOPICS, "enabled": False, "source": "override"}
    assert flags["chat"] == {**CHAT, "enabled": False, "source": "override"}

    body = problem(opt(tenant, "topic_suggestions", True), 409, "CONFLICT")
    assert "'topic_suggestions'" in body["detail"]
    assert flags_of(tenant)["topic_suggestions"]["source"] == "override"


def test_a_stored_opt_in_of_a_flag_that_allows_none_is_ignored(tenant: Org, run: Run) -> None:
    store(run, tenant.tenant_id, "chat", False, "opt_in")
    assert flags_of(tenant)["chat"] == CHAT
