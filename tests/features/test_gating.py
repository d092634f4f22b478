"""Operations declared behind a flag: 403 FORBIDDEN naming the flag while it is off for the
organization, whether its admin opted out (generation.suggestTopics) or the operator turned the
flag off for everyone (CONTENTPLATFORM_FEATURES, on a second service), and back at once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from contentplatform import domains
from contentplatform.features.flags import FLAGS
from tests.conftest import Caller, Token
from tests.support.orgs import Org, new_org
from tests.support.problems import problem
from tests.support.servers import second_service


def opt(org: Org, key: str, enabled: bool) -> None:
    org.ok("features.setOptIn", {"key": key, "enabled": enabled}, role="admin")


def refused_for(response: httpx.Response, key: str) -> None:
    body = problem(response, 403, "FORBIDDEN")
    assert f"'{key}'" in body["detail"], body
    assert body["feature"] == key


def test_every_gated_operation_names_a_declared_flag() -> None:
    gated = {
        procedure.operation_id: procedure.feature
        for router in domains.routers()
        for procedure in router.procedures
        if procedure.feature is not None
    }
    assert set(gated.values()) <= FLAGS.keys()
    chat = {
        procedure.operation_id
        for router in domains.routers()
        for procedure in router.procedures
        if procedure.operation_id.startswith("chat.")
    }
    assert chat and all(gated.get(operation) == "chat" for operation in chat)
    assert gated["generation.suggestTopics"] == "topic_suggestions"


def test_topic_suggestions_answer_403_once_the_organization_opts_out(tenant: Org) -> None:
    tenant.ok("generation.suggestTopics", {"count": 5}, role="editor")  # its evaluation cached

    opt(tenant, "topic_suggestions", False)
    refused_for(
        tenant.request("generation.suggestTopics", {"count": 5}, role="editor"), "topic_suggestions"
    )
    tenant.ok("chat.listConversations", role="member")  # other flags unaffected

    opt(tenant, "topic_suggestions", True)
    tenant.ok("generation.suggestTopics", {"count": 5}, role="editor")


def test_another_organizations_opt_out_leaves_its_suggestions_on(
    tenant: Org, other_tenant: Org
) -> None:
    opt(tenant, "topic_suggestions", False)
    refused_for(tenant.request("generation.suggestTopics", {}, role="editor"), "topic_suggestions")
    other_tenant.ok("generation.suggestTopics", {}, role="editor")


# --- the operator's config ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def configured(settings_with) -> Iterator[tuple[httpx.Client, dict[str, Any]]]:
    """A second service whose operator turned chat off and rolls topic suggestions out to no
    organization."""
    settings = settings_with(features={"chat": False, "topic_suggestions": 0})
    with second_service(settings) as running, running.client() as http:
        document = http.get("/openapi.json").json()
        yield http, document


@pytest.fixture(params=["rest", "rpc"])
def operated(request, configured, token: Token) -> Org:
    """An organization of the configured service, through one transport."""
    http, document = configured
    return Org(Caller(http, document, request.param), http, token, new_org())


def test_chat_answers_403_while_the_operator_turns_it_off(operated: Org) -> None:
    refused_for(operated.request("chat.listConversations", role="member"), "chat")
    refused_for(operated.request("chat.retrieve", {"query": "soil"}, role="editor"), "chat")
    listed = {flag["key"]: flag for flag in operated.ok("features.list")["data"]}
    assert (listed["chat"]["enabled"], listed["chat"]["source"]) == (False, "default")


def test_an_opt_in_wins_over_a_rollout_that_leaves_the_organization_out(operated: Org) -> None:
    listed = {flag["key"]: flag for flag in operated.ok("features.list")["data"]}
    topics = listed["topic_suggestions"]
    assert (topics["enabled"], topics["source"]) == (False, "rollout")
    refused_for(
        operated.request("generation.suggestTopics", {}, role="editor"), "topic_suggestions"
    )

    opt(operated, "topic_suggestions", True)
    operated.ok("generation.suggestTopics", {}, role="editor")
    listed = {flag["key"]: flag for flag in operated.ok("features.list")["data"]}
    assert (listed["topic_suggestions"]["enabled"], listed["topic_suggestions"]["source"]) == (
        True,
        "opt_in",
    )
