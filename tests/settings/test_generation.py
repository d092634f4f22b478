"""What generation and the jobs make of the settings, through real job runs on the offline
writer (REST and RPC): an error-level content rule the draft breaks holds a job's auto-publish
(the draft stays in review, the reason naming the rule), however high its SEO score; every
generated draft's provenance records the brand voice version it was written with; the content
strategy keeps excluded topics out of job rotation and topic suggestions and names the pillar a
suggestion serves."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.jobs.support import Planner
from tests.publishers.test_auto_publish import Newsroom
from tests.publishers.test_publishing import Desk, webhook_to
from tests.support.orgs import Org

RULE = {
    "name": "Say the brand",
    "type": "required_phrase",
    "config": {"phrases": ["Fernleaf guarantee"]},
    "severity": "error",
    "stages": ["publish"],
}


@pytest.fixture
def newsroom(tenant: Org) -> Iterator[Newsroom]:
    desk = Desk.of(tenant)
    answer = {"id": "hook-1", "url": "https://blog.example/hook-1"}
    with webhook_to(desk, answer=lambda event: answer) as (receiver, connection):
        yield Newsroom(Planner.of(tenant), desk, receiver, connection)


def test_a_draft_breaking_an_error_rule_is_held_above_the_seo_threshold(
    newsroom: Newsroom,
) -> None:
    planner = newsroom.planner
    voice = planner.ok("settings.updateBrandVoice", {"tone": ["warm"], "formality": "casual"})
    rule = planner.ok("settings.createRule", RULE)
    # A warning at publish and an error of another stage do not hold it.
    planner.ok("settings.createRule", {**RULE, "name": "Soft", "severity": "warning"})
    planner.ok("settings.createRule", {**RULE, "name": "Review", "stages": ["review"]})

    draft = newsroom.run(
        autoPublish=True, autoPublishThreshold=10, publisherConnectionId=newsroom.connection["id"]
    )

    assert draft["seo_score"] >= 10  # it would have been published
    assert draft["status"] == "reviewing"
    assert draft["approved_by"] is None
    decision = draft["auto_publish"]
    assert decision["decision"] == "held"
    assert "Say the brand" in decision["reason"]
    assert "Fernleaf guarantee" in decision["reason"]
    assert "Soft" not in decision["reason"] and "Review" not in decision["reason"]
    assert decision["rules"]["passed"] is False
    assert decision["rules"]["checked"] == 2
    assert {v["rule_name"] for v in decision["rules"]["violations"]} == {"Say the brand", "Soft"}
    assert rule["id"] in {v["rule_id"] for v in decision["rules"]["violations"]}
    assert newsroom.desk.attempts(draft["id"])["total"] == 0
    assert newsroom.receiver.requests == []
    # Written in the voice of the moment: its version is in the provenance.
    assert draft["provenance"]["brand_voice_version"] == voice["version"] == 1


def test_a_draft_within_the_rules_is_published_with_the_verdict_and_voice_version(
    newsroom: Newsroom,
) -> None:
    planner = newsroom.planner
    planner.ok(
        "settings.createRule",
        {**RULE, "name": "No hype", "type": "banned_phrase", "config": {"phrases": ["synergy"]}},
    )

    draft = newsroom.run(
        autoPublish=True, autoPublishThreshold=10, publisherConnectionId=newsroom.connection["id"]
    )

    decision = draft["auto_publish"]
    assert decision["decision"] == "published", decision
    assert decision["rules"] == {"passed": True, "checked": 1, "violations": [], "skipped": []}
    assert draft["provenance"]["brand_voice_version"] == 0  # the defaults: never set


def test_the_strategy_keeps_excluded_topics_out_of_job_rotation(tenant: Org) -> None:
    planner = Planner.of(tenant)
    planner.handbook()
    planner.ok("settings.updateStrategy", {"excludedTopics": ["plans pricing"]})
    job = planner.job(topics=["Plans and pricing", "Watering schedules"])

    topics = []
    for _ in range(2):
        instance = planner.ok("jobs.trigger", {"id": job["id"]}, role="editor")
        finished, _ = planner.wait_instance(instance["id"])
        topics.append(finished["topic"])
    assert topics == ["Watering schedules", "Watering schedules"]

    planner.ok("settings.updateStrategy", {"excludedTopics": ["watering", "pricing"]})
    refused = planner.request("jobs.trigger", {"id": job["id"]}, role="editor")
    assert refused.status_code == 400, refused.text
    assert "excluded by the organization's content strategy" in refused.json()["detail"]


def test_suggestions_serve_the_pillars_and_never_an_excluded_topic(tenant: Org) -> None:
    planner = Planner.of(tenant)
    planner.handbook()

    def suggested() -> list[dict]:
        found = planner.ok("generation.suggestTopics", {"count": 50}, role="editor")
        return found["data"]

    before = {t["topic"].casefold(): t for t in suggested()}
    assert "plans and pricing" in before
    assert all(t["pillar"] is None for t in before.values())

    planner.ok(
        "settings.updateStrategy",
        {
            "pillars": [{"name": "Setup", "keywords": ["installation"], "weight": 1}],
            "excludedTopics": ["pricing"],
        },
    )
    after = suggested()
    assert not any("pricing" in t["topic"].casefold() for t in after)
    assert after[0]["topic"] == "Installation"
    assert after[0]["pillar"] == "Setup"
