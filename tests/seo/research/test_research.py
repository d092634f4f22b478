"""seo.researchKeywords over REST and RPC: through DataForSEO Labs (the stand-in) in each mode,
de-duplicated, with the provider's intent or the lexical one, joined to rank tracking, charged
one credit per provider request and kept 30 days (asked again: cached, free); a failing
provider; short credits; a spent key; from the organization's Search Console queries when no
provider is connected (and offline with neither); the role and the bounds; and a second
organization that sees none of the first's queries or stored answers."""

from __future__ import annotations

import math
from datetime import date, timedelta
from typing import Any

import pytest
from sqlalchemy import update

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.seo.models import SeoTrackedKeyword
from contentplatform.seo.research import labs
from tests.conftest import Run
from tests.seo.rank.standin import LOGIN, PASSWORD, SerpStandIn
from tests.seo.search_console.support import Day, make_property, plant, q
from tests.support.orgs import Org, org_fixture
from tests.support.problems import problem

RELATED = f"{labs.LABS}/related_keywords/live"
SUGGESTIONS = f"{labs.LABS}/keyword_suggestions/live"
OVERVIEW = f"{labs.LABS}/keyword_overview/live"
Figures = Any


class Research(Org):
    default_role = "editor"

    def connect(self) -> None:
        self.ok(
            "seo.connect",
            {"provider": "dataforseo", "credentials": {"login": LOGIN, "password": PASSWORD}},
            role="admin",
        )

    def research(self, **body: Any) -> dict[str, Any]:
        return self.ok("seo.researchKeywords", body)  # type: ignore[no-any-return]

    def holds(self) -> list[tuple[int, int | None]]:
        found = self.ok("credits.listReservations", {"kind": "seo.researchKeywords"}, role="admin")
        return [(hold["amount_held"], hold["amount_committed"]) for hold in found["data"]]


research = org_fixture(Research)
other = org_fixture(Research, second=True)


@pytest.fixture(autouse=True)
def _standin(serp: SerpStandIn) -> SerpStandIn:
    return serp


def seed_of(org: Research, name: str) -> str:
    """A seed of this organization's own: the stand-in's answers are per seed."""
    return f"{name} {org.org[-6:]}"


def test_related_ideas_through_the_provider_are_charged_once_then_cached(
    research: Research, serp: SerpStandIn, run: Run
) -> None:
    research.connect()
    seed = seed_of(research, "garden soil")
    research.ok(
        "seo.addTrackedKeywords", {"keywords": [f"best {seed}"], "checkNow": False}, role="editor"
    )

    async def ranks_fourth(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(SeoTrackedKeyword)
                .where(
                    SeoTrackedKeyword.tenant_id == research.tenant_id,
                    SeoTrackedKeyword.device == "mobile",
                )
                .values(position=4)
            )

    run(ranks_fourth)
    found = research.research(seeds=[seed], limit=20, idempotencyKey=f"r-{research.org}")
    assert (found["source"], found["cached"], found["credits_used"]) == ("dataforseo", False, 1)
    # One related_keywords request, deep enough for 20 ideas, in the default market.
    (task,) = serp.labs.sent_for(seed)
    assert (task["limit"], task["depth"], task["location_code"], task["language_code"]) == (
        20,
        2,
        2840,
        "en",
    )
    keywords = [idea["keyword"] for idea in found["data"]]
    # The plural is the seed's near-duplicate, less searched: dropped. Most searched first.
    assert f"{seed}s" not in keywords and keywords[:2] == [seed, f"best {seed}"]
    assert found["total"] == 9 == len(keywords)
    ideas = {idea["keyword"]: idea for idea in found["data"]}
    best = ideas[f"best {seed}"]
    assert (best["search_volume"], best["keyword_difficulty"], best["intent"]) == (
        2900,
        62,
        "commercial",
    )
    assert best["cpc"] == round(0.35 + 62 / 40, 2) and best["competition"] == round(62 / 80, 2)
    assert (best["our_position"], best["tracked"], best["planned_in"]) == (4, True, None)
    assert best["estimate"] is False
    assert best["monthly_searches"][0] == {"year": 2026, "month": 11, "volume": 2900}
    assert len(best["monthly_searches"]) == 12
    assert best["serp_features"] == ["people_also_ask", "related_searches"]
    # The provider's intent, with its secondary one; where it gives none, the lexical rule.
    assert ideas[f"what is {seed}"]["secondary_intents"] == ["commercial"]
    assert ideas[f"{seed} price"]["intent"] == "transactional"
    assert ideas[f"{seed} for beginners"]["intent"] == "informational"
    assert ideas[seed]["tracked"] is False and ideas[seed]["our_position"] is None
    assert research.holds() == [(1, 1)]

    # The same request (seeds as typed another way): from the store, free.
    again = research.research(seeds=[f"  Garden   SOIL {research.org[-6:]} "], limit=20)
    assert (again["cached"], again["credits_used"]) == (True, 0)
    assert again["data"] == found["data"]
    assert len(serp.labs.sent_for(seed)) == 1 and research.holds() == [(1, 1)]
    # Filters apply to the stored answer.
    filtered = research.research(seeds=[seed], limit=20, minVolume=500, intents=["commercial"])
    assert filtered["cached"] is True
    assert [idea["keyword"] for idea in filtered["data"]] == [seed, f"best {seed}"]
    assert filtered["total"] == 2
    hard = research.research(seeds=[seed], limit=20, maxDifficulty=20)
    assert {idea["keyword"] for idea in hard["data"]} == {
        f"what is {seed}",
        f"{seed} for beginners",
        f"why {seed} matters",
    }
    # The key of that answer, sent with another request, is spent: 409.
    problem(
        research.request(
            "seo.researchKeywords",
            {"seeds": [seed], "limit": 5, "idempotencyKey": f"r-{research.org}"},
        ),
        409,
        "CONFLICT",
    )


def test_matching_questions_and_metrics(research: Research, serp: SerpStandIn) -> None:
    research.connect()
    seed, second = seed_of(research, "mulch"), seed_of(research, "compost")
    matching = research.research(seeds=[seed], mode="matching", limit=50)
    keywords = [idea["keyword"] for idea in matching["data"]]
    assert seed in keywords and all(seed in keyword for keyword in keywords)
    assert serp.labs.posted[-1][0] == SUGGESTIONS

    questions = research.research(seeds=[seed, second], mode="questions", limit=10)
    assert {idea["keyword"] for idea in questions["data"]} == {
        f"{word} {topic}" for topic in (seed, second) for word in ("how to choose", "what is")
    } | {f"why {seed} matters", f"why {second} matters"}
    # One request per seed, each for its share of the limit, asking for questions only.
    asked = serp.labs.sent_for(second)[-1]
    assert asked["limit"] == 5 and asked["filters"] == [["keyword", "regex", labs.QUESTION_PATTERN]]
    assert questions["credits_used"] == 2

    serp.labs.no_data.add(second)
    metrics = research.research(seeds=[second, seed], mode="metrics", languageCode="en-GB")
    assert serp.labs.posted[-1][0] == OVERVIEW
    assert serp.labs.posted[-1][1]["keywords"] == [second, seed]
    assert metrics["credits_used"] == 1
    # Both seeds answered, the one DataForSEO has no data for with unknown figures.
    assert [(idea["keyword"], idea["search_volume"]) for idea in metrics["data"]] == [
        (seed, 5400),
        (second, None),
    ]
    assert research.holds() == [(1, 1), (2, 2), (1, 1)]


def test_a_failing_provider_is_partial_or_503_and_charges_only_what_it_answered(
    research: Research, serp: SerpStandIn
) -> None:
    research.connect()
    good, bad = seed_of(research, "raised beds"), seed_of(research, "peat")
    serp.labs.fail(bad)
    partial = research.research(seeds=[good, bad], limit=10)
    assert partial["credits_used"] == 1 and partial["data"]
    assert all(bad not in idea["keyword"] for idea in partial["data"])
    # A partial answer is not kept: asked again, the provider is asked again.
    again = research.research(seeds=[good, bad], limit=10)
    assert again["cached"] is False and len(serp.labs.sent_for(good)) == 2
    failed = research.request("seo.researchKeywords", {"seeds": [bad]})
    assert failed.status_code == 503, failed.text
    assert "40501" in failed.json()["detail"]
    assert research.holds() == [(1, None), (2, 1), (2, 1)]


def test_short_credits_are_402_and_nothing_is_asked(research: Research, serp: SerpStandIn) -> None:
    research.connect()
    available = research.ok("credits.getBalance", {}, role="admin")["available"]
    research.ok(
        "credits.reserve",
        {"kind": "generation.blog", "idempotencyKey": "eat-it-all", "amount": available},
        role="admin",
    )
    seed = seed_of(research, "bark")
    problem(research.request("seo.researchKeywords", {"seeds": [seed]}), 402, "PAYMENT_REQUIRED")
    assert serp.labs.sent_for(seed) == []


def _plant_queries(settings: Settings, org: Research, site: str, rows: list[Figures]) -> date:
    """A selected Search Console property with these query rows over two recent days and one
    four months old: the last stored day."""
    property_id = make_property(settings, org.tenant_id, site)
    last = date.today() - timedelta(days=3)
    days = [
        Day(
            day,
            site=_site(rows),
            queries=[q(query, f"{site}p", 1, shown, 5.0) for query, shown in rows],
        )
        for day in (last - timedelta(days=1), last)
    ]
    old = Day(
        last - timedelta(days=120),
        site=_site(rows),
        queries=[q("ancient mulch idea", f"{site}p", 1, 999, 3.0)],
    )
    plant(settings, org.tenant_id, property_id, [*days, old])
    return last


def _site(rows: list[Figures]) -> Any:
    from contentplatform.seo.search_console.repository import Figures as Totals

    return Totals(clicks=len(rows), impressions=sum(shown for _, shown in rows), position=5.0)


def test_without_a_provider_ideas_come_from_our_search_console_queries(
    research: Research, other: Research, settings: Settings, serp: SerpStandIn
) -> None:
    site = f"https://{research.org.replace('_', '-')}.example.com/"
    research.ok("seo.updateSettings", {"siteUrl": site, "brandName": "Mulchco"}, role="admin")
    _plant_queries(
        settings,
        research,
        site,
        [
            ("red mulch", 600),
            ("red mulches", 30),  # near-duplicate: dropped
            ("how to spread mulch", 300),
            ("buy mulch near me", 120),
            ("mulchco login", 90),
            ("garden edging", 2000),  # no seed word: never shown
        ],
    )
    related = research.research(seeds=["mulch"], limit=10)
    assert (related["source"], related["cached"], related["credits_used"]) == (
        "search_console",
        False,
        0,
    )
    volumes = {idea["keyword"]: idea["search_volume"] for idea in related["data"]}
    # Two days of impressions, as a monthly average over 90 days; the old day is out of range.
    assert volumes == {
        "red mulch": math.ceil(1200 * 30 / 90),
        "how to spread mulch": math.ceil(600 * 30 / 90),
        "buy mulch near me": math.ceil(240 * 30 / 90),
        "mulchco login": math.ceil(180 * 30 / 90),
    }
    intents = {idea["keyword"]: idea["intent"] for idea in related["data"]}
    assert intents["buy mulch near me"] == "transactional"
    assert intents["mulchco login"] == "navigational"  # the brand name
    assert intents["how to spread mulch"] == "informational"
    assert all(idea["estimate"] for idea in related["data"])
    questions = research.research(seeds=["mulch"], mode="questions")
    assert [idea["keyword"] for idea in questions["data"]] == ["how to spread mulch"]
    matching = research.research(seeds=["red mulch"], mode="matching")
    assert [idea["keyword"] for idea in matching["data"]] == ["red mulch"]
    metrics = research.research(seeds=["red mulch", "blue mulch"], mode="metrics")
    assert [(i["keyword"], i["search_volume"]) for i in metrics["data"]] == [
        ("red mulch", 400),
        ("blue mulch", None),
    ]
    assert research.holds() == [] and serp.labs.sent_for("mulch") == []

    # Another organization sees none of it: with no Search Console, `offline`.
    alone = other.research(seeds=["mulch"])
    assert (alone["source"], alone["data"], alone["total"]) == ("offline", [], 0)
    seeds_only = other.research(seeds=["red mulch"], mode="metrics")
    assert [(i["keyword"], i["search_volume"]) for i in seeds_only["data"]] == [("red mulch", None)]
    # ... and with its own queries, only its own.
    _plant_queries(
        settings, other, f"https://{other.org.replace('_', '-')}.example.com/", [("mulch bags", 60)]
    )
    assert [i["keyword"] for i in other.research(seeds=["mulch"])["data"]] == ["mulch bags"]


def test_stored_answers_are_the_organization_s_own(
    research: Research, other: Research, serp: SerpStandIn
) -> None:
    research.connect()
    other.connect()
    seed = seed_of(research, "topsoil")
    assert research.research(seeds=[seed], limit=5)["cached"] is False
    # The same request from another organization is asked (and charged) anew.
    theirs = other.research(seeds=[seed], limit=5)
    assert (theirs["cached"], theirs["credits_used"]) == (False, 1)
    assert len(serp.labs.sent_for(seed)) == 2
    assert other.holds() == [(1, 1)]


def test_the_role_and_the_bounds(research: Research) -> None:
    problem(
        research.request("seo.researchKeywords", {"seeds": ["mulch"]}, role="member"),
        403,
        "FORBIDDEN",
    )
    for body in (
        {"seeds": []},
        {"seeds": [f"seed {n}" for n in range(21)]},
        {"seeds": ["x" * 101]},
        {"seeds": ["<b>mulch</b>"]},
        {"seeds": ["mulch"], "mode": "broad"},
        {"seeds": ["mulch"], "limit": 0},
        {"seeds": ["mulch"], "limit": 1001},
        {"seeds": ["mulch"], "minVolume": -1},
        {"seeds": ["mulch"], "maxDifficulty": 101},
        {"seeds": ["mulch"], "intents": ["curious"]},
        {"seeds": ["mulch"], "languageCode": "english please"},
        {"seeds": ["mulch"], "locationCode": 0},
        {"seeds": ["mulch"], "idempotencyKey": ""},
    ):
        problem(research.request("seo.researchKeywords", body), 400, "BAD_REQUEST")
