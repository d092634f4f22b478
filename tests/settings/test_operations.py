"""The settings.* operations over REST and RPC: tenant settings, brand voice, content strategy
and content rules: each one's answer, its errors (400 bounds and references, 404 of another
organization's rule or draft, 409 on a stale version, 403 at the hundredth rule), who may call
it (every member reads and lints, only admins write) and a second organization that sees none of
the first's."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from tests.publishers.test_publishing import Desk, webhook_to
from tests.support.orgs import Org

WRITES = [
    ("settings.update", {"name": "Acme"}),
    ("settings.updateBrandVoice", {"tone": ["warm"]}),
    ("settings.updateStrategy", {"goals": ["Grow"]}),
    ("settings.createRule", {"name": "x", "type": "banned_phrase", "config": {"phrases": ["x"]}}),
]
READS = [
    ("settings.get", {}),
    ("settings.getBrandVoice", {}),
    ("settings.getStrategy", {}),
    ("settings.listRules", {}),
    ("settings.checkRules", {"content": "<p>Hello.</p>"}),
]


def problem(org: Org, operation: str, data: dict[str, Any], status: int, role: str = "admin"):
    response = org.request(operation, data, role=role)
    assert response.status_code == status, (operation, response.text)
    assert response.headers["content-type"].startswith("application/problem+json")
    return response.json()


def rule(org: Org, **fields: Any) -> dict[str, Any]:
    data = {"name": "No hype", "type": "banned_phrase", "config": {"phrases": ["world-class"]}}
    return org.ok("settings.createRule", {**data, **fields})


# --- roles --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("operation", "data"), READS)
def test_every_member_reads_the_settings_and_lints(tenant: Org, operation: str, data: dict) -> None:
    tenant.ok(operation, data, role="member")


@pytest.mark.parametrize(("operation", "data"), WRITES)
@pytest.mark.parametrize("role", ["member", "editor"])
def test_only_an_admin_changes_them(tenant: Org, operation: str, data: dict, role: str) -> None:
    assert problem(tenant, operation, data, 403, role=role)["code"] == "FORBIDDEN"
    tenant.ok(operation, data, role="admin")


# --- tenant settings ----------------------------------------------------------------------------


def test_settings_read_as_defaults_until_changed_and_change_field_by_field(tenant: Org) -> None:
    first = tenant.ok("settings.get", role="member")
    assert first["tenant_id"] == str(tenant.tenant_id)
    assert first["default_language"] == "en"
    assert first["blog"]["posts_per_page"] == 10
    assert first["generation"]["target_word_count"] == 1200
    assert first["updated_at"] is None

    changed = tenant.ok(
        "settings.update",
        {
            "name": "<b>Acme</b> Gardens",
            "defaultLanguage": "en-GB",
            "blog": {"title": "The Acme blog", "canonicalBaseUrl": "https://blog.acme.test"},
            "generation": {"targetWordCount": 900},
            "security": {"allowedRedirectOrigins": ["https://App.Acme.test/"]},
            "notifications": {"emailDigest": "weekly"},
        },
    )
    assert changed["name"] == "Acme Gardens"  # plain text: the markup is stripped
    assert changed["default_language"] == "en-GB"
    assert changed["blog"]["title"] == "The Acme blog"
    assert changed["blog"]["posts_per_page"] == 10  # the group's other fields kept
    assert changed["generation"]["target_word_count"] == 900
    assert changed["generation"]["include_citations"] is True
    assert changed["security"]["allowed_redirect_origins"] == ["https://app.acme.test"]
    assert changed["notifications"]["email_digest"] == "weekly"
    assert changed["updated_by"] == tenant.users["admin"]

    again = tenant.ok("settings.update", {"blog": {"canonicalBaseUrl": None, "postsPerPage": 5}})
    assert again["blog"]["canonical_base_url"] is None
    assert again["blog"]["title"] == "The Acme blog"
    assert again["blog"]["posts_per_page"] == 5
    assert tenant.ok("settings.get", role="member") == again


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "Acme\u0000"}, "name"),
        ({"defaultLanguage": "english please"}, "defaultLanguage"),
        ({"blog": {"canonicalBaseUrl": "http://blog.acme.test"}}, "blog.canonicalBaseUrl"),
        ({"blog": {"postsPerPage": 51}}, "blog.postsPerPage"),
        ({"generation": {"targetWordCount": 299}}, "generation.targetWordCount"),
        (
            {"generation": {"defaultDocumentIds": [str(uuid.uuid4()) for _ in range(51)]}},
            "generation.defaultDocumentIds",
        ),
        ({"security": {"allowedRedirectOrigins": ["https://a.test/path"]}}, "security"),
        (
            {"security": {"allowedRedirectOrigins": [f"https://{i}.test" for i in range(21)]}},
            "security.allowedRedirectOrigins",
        ),
        ({"notifications": {"emailDigest": "hourly"}}, "notifications.emailDigest"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_settings_out_of_bounds_are_400_naming_the_field(
    tenant: Org, data: dict, field: str
) -> None:
    body = problem(tenant, "settings.update", data, 400)
    assert any(error["path"].startswith(field) for error in body["errors"]), body


def test_settings_may_only_name_this_organizations_documents_connections_and_members(
    tenant: Org, other_tenant: Org
) -> None:
    with webhook_to(Desk.of(other_tenant)) as (_, theirs), webhook_to(Desk.of(tenant)) as (_, ours):
        body = problem(
            tenant,
            "settings.update",
            {
                "generation": {"defaultDocumentIds": [str(uuid.uuid4())]},
                "publishing": {"defaultPublisherConnectionId": theirs["id"]},
                "review": {"defaultReviewerId": other_tenant.users["admin"]},
            },
            400,
        )
        paths = {error["path"] for error in body["errors"]}
        assert paths == {
            "generation.defaultDocumentIds.0",
            "publishing.defaultPublisherConnectionId",
            "review.defaultReviewerId",
        }
        assert tenant.ok("settings.get")["updated_at"] is None  # nothing changed

        tenant.whoami("editor")
        changed = tenant.ok(
            "settings.update",
            {
                "publishing": {"defaultPublisherConnectionId": ours["id"]},
                "review": {"defaultReviewerId": tenant.users["editor"]},
            },
        )
        assert changed["publishing"]["default_publisher_connection_id"] == ours["id"]
        assert changed["review"]["default_reviewer_id"] == tenant.users["editor"]


# --- brand voice and strategy -------------------------------------------------------------------

VOICE = {
    "tone": ["warm", "practical"],
    "formality": "casual",
    "person": "first_plural",
    "readingGrade": 7,
    "audiences": [{"name": "Home gardeners", "description": "Busy, small plots"}],
    "styleGuide": "Short paragraphs.\nNo jargon.",
    "vocabulary": {
        "preferred": [{"term": "plant", "insteadOf": "specimen"}],
        "banned": ["synergy"],
    },
    "examples": [{"title": "Hello", "content": "We water at dawn."}],
}


def test_the_brand_voice_is_versioned_and_a_stale_update_is_409(tenant: Org) -> None:
    default = tenant.ok("settings.getBrandVoice", role="member")
    assert default["version"] == 0
    assert default["formality"] == "neutral"

    first = tenant.ok("settings.updateBrandVoice", {**VOICE, "expectedVersion": 0})
    assert first["version"] == 1
    assert first["tone"] == ["warm", "practical"]
    assert first["vocabulary"]["preferred"] == [{"term": "plant", "instead_of": "specimen"}]
    assert first["updated_by"] == tenant.users["admin"]
    second = tenant.ok("settings.updateBrandVoice", {"formality": "formal"})
    assert second["version"] == 2
    assert second["tone"] == []  # a replacement: what is not sent is the default

    stale = problem(tenant, "settings.updateBrandVoice", {**VOICE, "expectedVersion": 1}, 409)
    assert stale["code"] == "CONFLICT"
    assert "2" in stale["detail"]
    assert tenant.ok("settings.getBrandVoice", role="member") == second


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"tone": ["a", "b", "c", "d", "e", "f"]}, "tone"),
        ({"readingGrade": 4}, "readingGrade"),
        ({"readingGrade": 17}, "readingGrade"),
        ({"audiences": [{"name": "x"}] * 11}, "audiences"),
        ({"styleGuide": "x" * 10001}, "styleGuide"),
        ({"vocabulary": {"banned": ["x"] * 201}}, "vocabulary.banned"),
        ({"examples": [{"title": "t", "content": "x" * 5001}]}, "examples"),
        ({"examples": [{"title": "t", "content": "c"}] * 6}, "examples"),
        ({"formality": "shouty"}, "formality"),
        ({"styleGuide": "nul\u0000"}, "styleGuide"),
    ],
)
def test_a_voice_out_of_bounds_is_400(tenant: Org, data: dict, field: str) -> None:
    body = problem(tenant, "settings.updateBrandVoice", data, 400)
    assert any(error["path"].startswith(field) for error in body["errors"]), body


def test_the_strategy_is_versioned_and_bounded(tenant: Org) -> None:
    assert tenant.ok("settings.getStrategy", role="member")["version"] == 0
    strategy = {
        "goals": ["Grow organic traffic"],
        "pillars": [{"name": "Watering", "keywords": ["irrigation", "drip"], "weight": 0.8}],
        "personas": [{"name": "Gardener", "pains": "Dry summers", "goals": "Healthy crops"}],
        "funnelMix": {"awareness": 60, "consideration": 30, "decision": 10},
        "cadence": {"postsPerWeek": 3},
        "competitors": [{"name": "Rival", "url": "https://rival.test"}],
        "excludedTopics": ["pricing"],
    }
    saved = tenant.ok("settings.updateStrategy", strategy)
    assert saved["version"] == 1
    assert saved["pillars"][0]["weight"] == 0.8
    assert saved["funnel_mix"] == {"awareness": 60, "consideration": 30, "decision": 10}
    assert saved["cadence"] == {"posts_per_week": 3}
    assert problem(tenant, "settings.updateStrategy", {"expectedVersion": 0}, 409)
    for data in (
        {"funnelMix": {"awareness": 60, "consideration": 30, "decision": 20}},
        {"pillars": [{"name": "p", "weight": 1.5}]},
        {"pillars": [{"name": "p", "keywords": ["k"] * 31}]},
        {"cadence": {"postsPerWeek": 51}},
        {"competitors": [{"name": "x", "url": "ftp://x.test"}]},
        {"excludedTopics": ["t"] * 101},
        {"goals": ["g"] * 11},
    ):
        problem(tenant, "settings.updateStrategy", data, 400)
    assert tenant.ok("settings.getStrategy")["version"] == 1


# --- content rules ------------------------------------------------------------------------------


def test_rules_are_created_listed_changed_and_deleted(tenant: Org) -> None:
    banned = rule(tenant, severity="error", stages=["publish", "review", "publish"])
    assert banned["type"] == "banned_phrase"
    assert banned["config"] == {"phrases": ["world-class"], "case_sensitive": False}
    assert banned["stages"] == ["review", "publish"]
    assert banned["enabled"] is True
    count = rule(tenant, name="Short", type="word_count", config={"minWords": 5})
    assert count["severity"] == "warning"
    assert count["stages"] == ["generation", "review", "publish"]

    listed = tenant.ok("settings.listRules", role="member")
    assert [r["id"] for r in listed["data"]] == [banned["id"], count["id"]]
    assert listed["total"] == 2
    only = tenant.ok("settings.listRules", {"type": "word_count"}, role="member")
    assert [r["id"] for r in only["data"]] == [count["id"]]

    changed = tenant.ok(
        "settings.updateRule",
        {"id": count["id"], "enabled": False, "config": {"minWords": 1, "maxWords": 10}},
    )
    assert changed["enabled"] is False
    assert changed["config"] == {"min_words": 1, "max_words": 10}
    enabled = tenant.ok("settings.listRules", {"enabled": True})
    assert [r["id"] for r in enabled["data"]] == [banned["id"]]

    assert tenant.ok("settings.deleteRule", {"id": count["id"]}) == {"success": True}
    assert problem(tenant, "settings.deleteRule", {"id": count["id"]}, 404)["code"] == "NOT_FOUND"
    assert tenant.ok("settings.listRules")["total"] == 1


@pytest.mark.parametrize(
    ("type_", "config", "field"),
    [
        ("banned_phrase", {}, "config.phrases"),
        ("banned_phrase", {"phrases": []}, "config.phrases"),
        ("banned_phrase", {"phrases": ["x"], "colour": "red"}, "config.colour"),
        ("regex", {"pattern": "(unclosed"}, "config"),
        ("regex", {"pattern": "x" * 1001}, "config.pattern"),
        ("max_sentence_words", {"maxWords": 2}, "config.maxWords"),
        ("word_count", {}, "config"),
        ("word_count", {"minWords": 10, "maxWords": 5}, "config"),
        ("link_policy", {"blockedDomains": ["not a domain"]}, "config.blockedDomains"),
        ("disclaimer", {"text": ""}, "config.text"),
        ("llm_check", {}, "config.instruction"),
    ],
)
def test_a_config_that_does_not_fit_its_type_is_400(
    tenant: Org, type_: str, config: dict, field: str
) -> None:
    body = problem(
        tenant, "settings.createRule", {"name": "r", "type": type_, "config": config}, 400
    )
    assert any(error["path"].startswith(field) for error in body["errors"]), body
    if type_ == "regex" and "unclosed" in config["pattern"]:
        assert "does not compile" in body["detail"]


@pytest.mark.parametrize(
    "data",
    [
        {"name": "", "type": "banned_phrase", "config": {"phrases": ["x"]}},
        {"name": "r", "type": "spelling", "config": {}},
        {"name": "r", "type": "banned_phrase", "config": {"phrases": ["x"]}, "stages": []},
        {"name": "r", "type": "banned_phrase", "config": {"phrases": ["x"]}, "severity": "fatal"},
        {"name": "r", "type": "banned_phrase", "config": {"phrases": ["x\u0000"]}},
    ],
)
def test_a_rule_out_of_bounds_is_400(tenant: Org, data: dict) -> None:
    problem(tenant, "settings.createRule", data, 400)


def test_an_update_checks_the_config_against_the_rules_type(tenant: Org) -> None:
    created = rule(tenant, type="regex", config={"pattern": "foo"})
    body = problem(
        tenant, "settings.updateRule", {"id": created["id"], "config": {"pattern": "("}}, 400
    )
    assert "does not compile" in body["detail"]
    problem(tenant, "settings.updateRule", {"id": str(uuid.uuid4()), "name": "x"}, 404)


def test_the_hundred_and_first_rule_is_403_naming_the_limit(tenant: Org) -> None:
    for index in range(100):
        rule(tenant, name=f"Rule {index}")
    body = problem(
        tenant,
        "settings.createRule",
        {"name": "one more", "type": "banned_phrase", "config": {"phrases": ["x"]}},
        403,
    )
    assert "100" in body["detail"]
    assert tenant.ok("settings.listRules")["total"] == 100


# --- checkRules ---------------------------------------------------------------------------------


def test_check_rules_lints_content_with_excerpts_and_offsets(tenant: Org) -> None:
    banned = rule(tenant, severity="error")
    required = rule(tenant, name="Brand", type="required_phrase", config={"phrases": ["Acme"]})
    sentences = rule(
        tenant, name="Short sentences", type="max_sentence_words", config={"maxWords": 8}
    )
    rule(tenant, name="Review only", type="word_count", config={"maxWords": 1}, stages=["publish"])
    rule(tenant, name="Off", type="word_count", config={"maxWords": 1}, enabled=False)
    judged = rule(tenant, name="Judge", type="llm_check", config={"instruction": "Be kind."})
    content = (
        "<h2>Why</h2><p>Our world-class hoses last.</p>"
        "<p>This sentence is far too long to read in one single breath today.</p>"
    )

    result = tenant.ok("settings.checkRules", {"title": "Hoses", "content": content}, role="member")

    assert result["passed"] is False
    assert result["checked"] == 3
    assert result["skipped"] == [
        {"rule_id": judged["id"], "rule_name": "Judge", "reason": result["skipped"][0]["reason"]}
    ]
    assert "offline" in result["skipped"][0]["reason"]
    by_rule = {}
    for violation in result["violations"]:
        by_rule.setdefault(violation["rule_id"], []).append(violation)
    [hype] = by_rule[banned["id"]]
    checked = "Hoses\n\nWhy\n\nOur world-class hoses last.\n\nThis sentence"
    assert hype["severity"] == "error"
    assert checked[hype["start"] : hype["end"]] == "world-class"
    assert "world-class" in hype["excerpt"]
    [missing] = by_rule[required["id"]]
    assert missing["start"] is None and "Acme" in missing["message"]
    [long] = by_rule[sentences["id"]]
    assert "This sentence is far too long" in long["excerpt"]

    warnings_only = tenant.ok("settings.checkRules", {"content": "<p>Acme hoses.</p>"})
    assert warnings_only["passed"] is True


def test_check_rules_lints_a_draft_of_this_organization_only(
    tenant: Org, other_tenant: Org
) -> None:
    rule(tenant, severity="error")
    draft = tenant.ok(
        "drafts.createDraft",
        {"title": "A world-class title", "content": "<p>Plain words.</p>"},
        role="editor",
    )
    result = tenant.ok("settings.checkRules", {"draftId": draft["id"], "stage": "publish"})
    assert result["passed"] is False
    [violation] = result["violations"]
    assert violation["start"] == 2 and violation["end"] == 13

    assert problem(other_tenant, "settings.checkRules", {"draftId": draft["id"]}, 404)
    for data in ({}, {"draftId": draft["id"], "content": "<p>x</p>"}, {"content": "x" * 200_001}):
        problem(tenant, "settings.checkRules", data, 400)


def test_a_catastrophic_regex_is_cut_off_by_its_timeout(tenant: Org) -> None:
    fine = rule(
        tenant, name="Fine", type="regex", config={"pattern": r"\bhoses?\b", "ignoreCase": True}
    )
    hostile = rule(
        tenant, name="Hostile", type="regex", config={"pattern": "(a|aa)+$"}, severity="error"
    )
    nested = rule(tenant, name="Nested", type="regex", config={"pattern": "(a+)+$"})
    content = f"<p>{'a' * 5000}!</p><p>Hoses.</p>"

    started = time.monotonic()
    result = tenant.ok("settings.checkRules", {"content": content}, role="member")
    took = time.monotonic() - started

    assert took < 5, took  # cut off after its timeout, never hung
    skipped = {s["rule_id"]: s["reason"] for s in result["skipped"]}
    assert "cut off" in skipped[hostile["id"]]
    assert "cut off" in skipped[nested["id"]]
    [found] = [v for v in result["violations"] if v["rule_id"] == fine["id"]]
    assert found["excerpt"].endswith("Hoses.")
    assert result["passed"] is True  # a skipped error rule is not a violation
    assert result["checked"] == 1


# --- a second organization ----------------------------------------------------------------------


def test_a_second_organization_sees_nothing_of_the_first(tenant: Org, other_tenant: Org) -> None:
    mine = rule(tenant)
    tenant.ok("settings.updateBrandVoice", VOICE)
    tenant.ok("settings.updateStrategy", {"excludedTopics": ["pricing"]})
    tenant.ok("settings.update", {"blog": {"title": "Mine"}})

    assert other_tenant.ok("settings.listRules") == {"data": [], "total": 0}
    assert other_tenant.ok("settings.getBrandVoice")["version"] == 0
    assert other_tenant.ok("settings.getStrategy")["excluded_topics"] == []
    assert other_tenant.ok("settings.get")["blog"]["title"] == ""
    for operation, data in (
        ("settings.updateRule", {"id": mine["id"], "name": "Taken"}),
        ("settings.deleteRule", {"id": mine["id"]}),
    ):
        assert problem(other_tenant, operation, data, 404)["code"] == "NOT_FOUND"
    assert tenant.ok("settings.listRules")["data"][0]["name"] == "No hype"
