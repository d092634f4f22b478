"""AI visibility over REST and RPC against the answer engines' stand-in: prompts tracked,
listed, updated and deleted; suggestions from the SEO profile; runs of prompts x engines x
samples, their credits held per answer and committed for those received, a failing engine making
the run partial; a planted answer set giving visibility, share of voice, position and citation
share computed here by hand; the answers as evidence (offsets, citations, fan-out, the change
since the last run); the sources; a prompt with one answer showing insufficient_data."""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest

from contentplatform.seo.ai_visibility import durable
from tests.seo.ai_visibility.standin import API_KEY, AnswerEngineStandIn
from tests.support.orgs import Org, org_fixture
from tests.support.problems import problem
from tests.support.waits import until_workflow_ends

SITE = "https://acmesoil.com/"


class AiVis(Org):
    default_role = "editor"

    def profile(self) -> dict[str, str]:
        """Brand Acme Soil on acmesoil.com; competitors Green Grow (alias GreenGrow) and Terra
        Mix. Their ids by name."""
        self.ok(
            "seo.updateSettings",
            {"siteUrl": SITE, "brandName": "Acme Soil", "brandTerms": ["AcmeSoil"]},
            role="admin",
        )
        ids = {}
        for name, domain, aliases in (
            ("Green Grow", "greengrow.com", ["GreenGrow"]),
            ("Terra Mix", "terramix.io", []),
        ):
            made = self.ok(
                "seo.createCompetitor",
                {"name": name, "domain": domain, "aliases": aliases},
                role="admin",
            )
            ids[name] = made["id"]
        return ids

    def connect(self, *providers: str) -> None:
        for provider in providers:
            self.ok(
                "seo.connect",
                {"provider": provider, "credentials": {"apiKey": API_KEY}},
                role="admin",
            )

    def prompts(self, texts: list[str], **body: Any) -> list[dict[str, Any]]:
        made = self.ok(
            "seo.createAiPrompts", {"prompts": [{"text": text} for text in texts], **body}
        )
        assert made["skipped"] == []
        return made["created"]  # type: ignore[no-any-return]

    def wait(self, run_id: str) -> dict[str, Any]:
        def ended() -> dict[str, Any] | None:
            run = self.ok("seo.getSyncRun", {"id": run_id}, role="member")
            return run if run["status"] not in ("queued", "running") else None

        return until_workflow_ends(
            durable.workflow_id(uuid.UUID(run_id)), ended, timeout=60, what="AI visibility run"
        )

    def ran(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.wait(self.ok("seo.runAiVisibility", body)["id"])


ai = org_fixture(AiVis)
other = org_fixture(AiVis, second=True)


@pytest.fixture(autouse=True)
def _standin(answer_engines: AnswerEngineStandIn) -> AnswerEngineStandIn:
    return answer_engines


def _wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson's 95% interval, written out again here from its definition."""
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return round(100 * (centre - half), 2), round(100 * (centre + half), 2)


def _metric(value: float, k: int, n: int) -> dict[str, Any]:
    low, high = _wilson(k, n)
    return {"value": value, "n": n, "low": low, "high": high, "insufficient_data": False}


# --- prompts ------------------------------------------------------------------------------------


def test_prompts_are_created_listed_updated_and_deleted(ai: AiVis, other: AiVis) -> None:
    ai.ok("seo.updateSettings", {"country": "GB", "language": "en-GB"}, role="admin")
    made = ai.ok(
        "seo.createAiPrompts",
        {
            "prompts": [
                {"text": "  best   potting soil for tomatoes ", "topic": "soil", "tags": ["a"]},
                {"text": "Best potting soil for TOMATOES"},  # the same, once compared
                {"text": "how to repot a fern", "intent": "informational", "tags": ["b", "B"]},
            ],
            "engines": ["chatgpt", "perplexity"],
        },
    )
    first, second = made["created"]
    assert made["skipped"] == [{"text": "Best potting soil for TOMATOES", "reason": "duplicate"}]
    assert first["text"] == "best potting soil for tomatoes"
    assert (first["country"], first["language"], first["engines"]) == (
        "GB",
        "en-GB",
        ["chatgpt", "perplexity"],
    )
    assert first["status"] == "active" and first["source"] == "manual" and first["latest"] is None
    assert second["tags"] == ["b"] and second["intent"] == "informational"
    # Engines default to the settings' (chatgpt when none is set).
    third = ai.prompts(["which mulch keeps slugs away"])[0]
    assert third["engines"] == ["chatgpt"]

    listed = ai.ok("seo.listAiPrompts", {}, role="member")
    assert [p["id"] for p in listed["data"]] == [third["id"], first["id"], second["id"]]
    assert listed["total"] == 3 and listed["limit"] == 50
    assert [p["id"] for p in ai.ok("seo.listAiPrompts", {"search": "TOMATO"})["data"]] == [
        first["id"]
    ]
    assert [p["id"] for p in ai.ok("seo.listAiPrompts", {"tag": "b"})["data"]] == [second["id"]]
    assert [p["id"] for p in ai.ok("seo.listAiPrompts", {"topic": "soil"})["data"]] == [first["id"]]
    by_engine = ai.ok("seo.listAiPrompts", {"engine": "perplexity"})["data"]
    assert {p["id"] for p in by_engine} == {first["id"], second["id"]}

    updated = ai.ok(
        "seo.updateAiPrompt",
        {"id": first["id"], "tags": ["x"], "status": "paused", "engines": ["gemini"]},
    )
    assert (updated["tags"], updated["status"], updated["engines"]) == (["x"], "paused", ["gemini"])
    assert updated["topic"] == "soil"  # not sent: unchanged
    assert ai.ok("seo.updateAiPrompt", {"id": first["id"], "topic": None})["topic"] is None
    assert [p["id"] for p in ai.ok("seo.listAiPrompts", {"status": "paused"})["data"]] == [
        first["id"]
    ]
    # The text is immutable.
    problem(
        ai.request("seo.updateAiPrompt", {"id": first["id"], "text": "other"}), 400, "BAD_REQUEST"
    )

    # Roles: members read, editors write, admins delete.
    problem(
        ai.request("seo.createAiPrompts", {"prompts": [{"text": "abc"}]}, role="member"),
        403,
        "FORBIDDEN",
    )
    problem(ai.request("seo.updateAiPrompt", {"id": first["id"]}, role="member"), 403, "FORBIDDEN")
    problem(ai.request("seo.deleteAiPrompt", {"id": first["id"]}), 403, "FORBIDDEN")
    # Another organization's prompt is not found.
    problem(other.request("seo.updateAiPrompt", {"id": first["id"], "tags": []}), 404, "NOT_FOUND")
    problem(
        other.request("seo.deleteAiPrompt", {"id": first["id"]}, role="admin"), 404, "NOT_FOUND"
    )
    assert other.ok("seo.listAiPrompts", {}, role="member")["total"] == 0

    assert ai.ok("seo.deleteAiPrompt", {"id": first["id"]}, role="admin") == {"success": True}
    problem(ai.request("seo.deleteAiPrompt", {"id": first["id"]}, role="admin"), 404, "NOT_FOUND")
    problem(ai.request("seo.updateAiPrompt", {"id": first["id"], "tags": []}), 404, "NOT_FOUND")
    assert ai.ok("seo.listAiPrompts", {})["total"] == 2
    # Deleted, its text may be tracked again.
    again = ai.ok("seo.createAiPrompts", {"prompts": [{"text": first["text"]}]})
    assert len(again["created"]) == 1


def test_prompt_bounds_and_the_plan_limit(ai: AiVis) -> None:
    for body in (
        {"prompts": []},
        {"prompts": [{"text": "ab"}]},
        {"prompts": [{"text": "x" * 501}]},
        {"prompts": [{"text": "bad\x00text"}]},
        {"prompts": [{"text": "fine text", "tags": ["t"] * 11}]},
        {"prompts": [{"text": "fine text", "tags": ["t" * 51]}]},
        {"prompts": [{"text": "fine text"}], "engines": ["chatgpt", "chatgpt"]},
        {"prompts": [{"text": "fine text"}], "engines": ["bing"]},
        {"prompts": [{"text": "fine text"}], "country": "XX"},
        {"prompts": [{"text": f"prompt {n}"} for n in range(101)]},
    ):
        problem(ai.request("seo.createAiPrompts", body), 400, "BAD_REQUEST")
    made = ai.ok("seo.createAiPrompts", {"prompts": [{"text": f"prompt {n}"} for n in range(100)]})
    assert len(made["created"]) == 100
    over = ai.ok("seo.createAiPrompts", {"prompts": [{"text": "one more"}, {"text": "prompt 1"}]})
    assert over == {
        "created": [],
        "skipped": [
            {"text": "one more", "reason": "plan_limit"},
            {"text": "prompt 1", "reason": "duplicate"},
        ],
    }
    paused = made["created"][0]["id"]
    ai.ok("seo.updateAiPrompt", {"id": paused, "status": "paused"})
    assert len(ai.ok("seo.createAiPrompts", {"prompts": [{"text": "one more"}]})["created"]) == 1
    # Making the paused one active again would pass the 100.
    problem(ai.request("seo.updateAiPrompt", {"id": paused, "status": "active"}), 409, "CONFLICT")
    problem(ai.request("seo.listAiPrompts", {"limit": 101}), 400, "BAD_REQUEST")


def test_suggestions_come_from_the_profile_and_are_deterministic(ai: AiVis) -> None:
    ai.profile()
    ai.ok(
        "seo.addTrackedKeywords",
        {"keywords": ["potting soil", "how to fix clay soil"], "checkNow": False},
    )
    ai.prompts(["What is the best potting soil?"])
    body = {"topic": "soil", "count": 10, "idempotencyKey": "suggest-1"}
    found = ai.ok("seo.suggestAiPrompts", body)
    assert found["method"] == "templates (offline, no model)"
    assert [(s["text"], s["source"], s["intent"]) for s in found["data"]] == [
        # "What is the best potting soil?" is tracked already: left out.
        ("How to fix clay soil?", "tracked_keywords", "informational"),
        ("Acme Soil vs Green Grow: which is better?", "competitors", "commercial"),
        ("What are the best alternatives to Green Grow?", "competitors", "commercial"),
        ("Acme Soil vs Terra Mix: which is better?", "competitors", "commercial"),
        ("What are the best alternatives to Terra Mix?", "competitors", "commercial"),
    ]
    assert found["total"] == 5 and {s["topic"] for s in found["data"]} == {"soil"}
    assert ai.ok("seo.suggestAiPrompts", body) == found
    only = ai.ok("seo.suggestAiPrompts", {"sources": ["competitors"], "count": 1})
    assert [s["text"] for s in only["data"]] == ["Acme Soil vs Green Grow: which is better?"]
    # Nothing is held: no model is asked.
    assert ai.ok("credits.listReservations", {}, role="admin")["total"] == 0
    problem(ai.request("seo.suggestAiPrompts", {}, role="member"), 403, "FORBIDDEN")
    problem(ai.request("seo.suggestAiPrompts", {"count": 51}), 400, "BAD_REQUEST")


# --- runs ---------------------------------------------------------------------------------------

# The planted answers (the same for each sample), by prompt number: text, cited URLs.
PLANTED = {
    **dict.fromkeys(
        range(4),
        (
            "Acme Soil is the best choice. Green Grow is also good.",
            ["https://www.acmesoil.com/guide", "https://www.reddit.com/r/gardening/1"],
        ),
    ),
    **dict.fromkeys(
        range(4, 6), ("GreenGrow leads the market, then Acme-Soil.", ["https://greengrow.com/a"])
    ),
    **dict.fromkeys(
        range(6, 8),
        (
            "Terra Mix and Green Grow are popular.",
            ["https://en.wikipedia.org/wiki/Soil", "https://blog.acmesoil.com/post"],
        ),
    ),
    **dict.fromkeys(range(8, 10), ("Nothing relevant here.", [])),
}


def test_a_planted_answer_set_gives_the_figures_computed_by_hand(
    ai: AiVis, other: AiVis, answer_engines: AnswerEngineStandIn
) -> None:
    ids = ai.profile()
    ai.connect("openai", "perplexity")
    texts = [f"{ai.org} question {n}" for n in range(10)]
    prompts = ai.ok(
        "seo.createAiPrompts",
        {
            "prompts": [{"text": text, "tags": ["run"]} for text in texts],
            "engines": ["chatgpt", "perplexity"],
        },
    )["created"]
    for n, text in enumerate(texts):
        answer, urls = PLANTED[n]
        answer_engines.plant("openai", text, answer, urls)
    answer_engines.fail("perplexity")
    key = f"run-{ai.org}"
    try:
        run = ai.ran({"samples": 3, "idempotencyKey": key})
    finally:
        answer_engines.heal("perplexity")
    # 10 prompts x 2 engines x 3 samples held; the 30 answered committed; perplexity failing.
    assert run["kind"] == "ai_visibility" and run["status"] == "partial", run
    assert run["credits_reserved"] == 60 and run["credits_used"] == 30
    assert run["progress"] == {"done": 60, "total": 60}
    assert run["params"]["engines"] == ["chatgpt", "perplexity"]
    assert run["error"]["code"] == "ai_answers_failed" and "perplexity" in run["error"]["message"]
    assert {item["engine"] for item in run["error"]["items"]} == {"perplexity"}
    holds = ai.ok("credits.listReservations", {"kind": "seo.runAiVisibility"}, role="admin")
    assert [(h["amount_held"], h["amount_committed"]) for h in holds["data"]] == [(60, 30)]
    # Each prompt asked of OpenAI three times: one per sample.
    assert all(answer_engines.asked[("openai", text)] == 3 for text in texts)
    # The same key answers the same run; nothing more is held or asked.
    assert ai.ok("seo.runAiVisibility", {"idempotencyKey": key})["id"] == run["id"]
    assert all(answer_engines.asked[("openai", text)] == 3 for text in texts)

    seen = ai.ok("seo.aiVisibilityOverview", {"tag": "run"}, role="member")
    # 30 answers; the brand in prompts 0-5: 18. Brand mentions 18 of 48 (2 brands in each
    # answer of prompts 0-7). Position 1 in 12 answers, 2 in 6: 24 / 18. Citations: ours 12 +
    # 0 + 6 of 24 + 6 + 12 = 42. Sentiment: "best" (100) in 12 answers, none (50) in 6.
    assert seen["answers"] == 30 and seen["prompts"] == 10 and seen["min_sample"] == 5
    assert seen["visibility"] == _metric(60.0, 18, 30)
    assert seen["share_of_voice"] == _metric(37.5, 18, 48)
    assert seen["citation_share"] == _metric(42.86, 18, 42)
    assert seen["avg_position"]["value"] == 1.33 and seen["avg_position"]["n"] == 18
    assert seen["sentiment"]["value"] == 83.33 and seen["sentiment"]["n"] == 18
    assert [e["engine"] for e in seen["by_engine"]] == ["chatgpt"]
    assert seen["by_engine"][0]["visibility"] == seen["visibility"]
    green = next(c for c in seen["competitors"] if c["competitor_id"] == ids["Green Grow"])
    # Green Grow in prompts 0-7 (24 answers): second in 0-3 and 6-7, first in 4-5.
    assert green["visibility"]["value"] == 80.0 and green["share_of_voice"]["value"] == 50.0
    assert green["avg_position"]["value"] == 1.75
    assert seen["gaps"] == {"prompts_competitor_only": 2, "prompts_not_cited": 4}
    assert [point["visibility"]["value"] for point in seen["trend"]] == [60.0]
    # No answer in the 30 days before: no change can be told.
    unknown = {"value": None, "low": None, "high": None, "real": None, "insufficient_data": True}
    assert seen["change"] == dict.fromkeys(
        ("visibility", "share_of_voice", "citation_share"), unknown
    )
    # The SEO control center shows the same headline.
    tile = ai.ok("seo.overview", {"period": "7d"}, role="member")["ai_visibility"]
    assert tile == {
        "visibility": 60.0,
        "share_of_voice": 37.5,
        "citation_share": 42.86,
        "change": None,
    }

    sources = ai.ok("seo.listAiSources", {}, role="member")
    assert [(s["domain"], s["owner"], s["category"], s["citations"]) for s in sources["data"]] == [
        ("acmesoil.com", "self", "owned", 18),
        ("reddit.com", "third_party", "ugc", 12),
        ("greengrow.com", "competitor", "competitor", 6),
        ("wikipedia.org", "third_party", "reference", 6),
    ]
    assert sources["data"][0]["citation_share"] == 42.86
    assert sources["data"][0]["prompts"] == 6 and sources["data"][0]["engines"] == {"chatgpt": 18}
    assert sources["data"][2]["competitor_id"] == ids["Green Grow"]
    by_url = ai.ok("seo.listAiSources", {"groupBy": "url", "owner": "self"})
    assert [(s["url"], s["citations"]) for s in by_url["data"]] == [
        ("https://www.acmesoil.com/guide", 12),
        ("https://blog.acmesoil.com/post", 6),
    ]

    # The answers, as evidence.
    gap = ai.ok(
        "seo.listAiAnswers", {"mentioned": False, "competitorId": ids["Terra Mix"], "limit": 100}
    )
    assert gap["total"] == 6 and {a["prompt_id"] for a in gap["data"]} == {
        prompts[6]["id"],
        prompts[7]["id"],
    }
    first = ai.ok("seo.listAiAnswers", {"promptId": prompts[0]["id"], "engine": "chatgpt"})
    assert first["total"] == 3 and sorted(a["sample"] for a in first["data"]) == [1, 2, 3]
    listed = first["data"][0]
    assert listed["brand_mentioned"] is True and listed["brand_position"] == 1
    assert [(m["brand"], m["name"], m["position"]) for m in listed["mentions"]] == [
        ("self", "Acme Soil", 1),
        ("competitor", "Green Grow", 2),
    ]
    assert [(c["domain"], c["owner"]) for c in listed["citations"]] == [
        ("acmesoil.com", "self"),
        ("reddit.com", "third_party"),
    ]
    full = ai.ok("seo.getAiAnswer", {"id": listed["id"]}, role="member")
    text = full["text"]
    assert text == PLANTED[0][0] and full["search_queries"] == [f"search: {texts[0]}"]
    spans = {m["name"]: m["offsets"] for m in full["mentions"]}
    assert [text[a:b] for a, b in spans["Acme Soil"]] == ["Acme Soil"]
    assert [text[a:b] for a, b in spans["Green Grow"]] == ["Green Grow"]
    assert full["model"] == "gpt-4o-mini" and full["provider"] == "openai"
    assert full["changes"] is None  # no earlier run
    fuzzy = ai.ok("seo.listAiAnswers", {"promptId": prompts[4]["id"]})["data"][0]
    fuzzy_full = ai.ok("seo.getAiAnswer", {"id": fuzzy["id"]})
    found = {m["name"]: m["offsets"] for m in fuzzy_full["mentions"]}
    assert [fuzzy_full["text"][a:b] for a, b in found["Acme Soil"]] == ["Acme-Soil"]
    assert [fuzzy_full["text"][a:b] for a, b in found["Green Grow"]] == ["GreenGrow"]
    problem(other.request("seo.getAiAnswer", {"id": listed["id"]}, role="member"), 404, "NOT_FOUND")
    assert other.ok("seo.listAiAnswers", {}, role="member")["total"] == 0

    # The prompts' latest readings (3 answers each: below the minimum sample).
    latest = {p["id"]: p["latest"] for p in ai.ok("seo.listAiPrompts", {"tag": "run"})["data"]}
    assert latest[prompts[0]["id"]]["visibility"] == {
        "value": None,
        "n": 3,
        "low": None,
        "high": None,
        "insufficient_data": True,
    }
    assert latest[prompts[0]["id"]]["position"] == 1.0
    assert latest[prompts[6]["id"]]["competitors_mentioned"] == ["Green Grow", "Terra Mix"]
    mentioned = ai.ok("seo.listAiPrompts", {"tag": "run", "mentioned": True})
    assert {p["id"] for p in mentioned["data"]} == {p["id"] for p in prompts[:6]}

    # The gaps became close_ai_gap actions: prompts 6 and 7 named competitors, never us.
    actions = ai.ok("seo.listActions", {"type": "close_ai_gap"}, role="member")["data"]
    assert sorted(a["evidence"]["prompt_id"] for a in actions) == sorted(
        [prompts[6]["id"], prompts[7]["id"]]
    )
    assert {a["source"] for a in actions} == {"ai_visibility"}
    assert actions[0]["evidence"]["competitors"] == ["Green Grow", "Terra Mix"]

    # A second run, perplexity healed, the first prompt answered otherwise: what changed.
    answer_engines.plant(
        "openai", texts[0], "Green Grow is the best choice.", ["https://greengrow.com/b"]
    )
    again = ai.ran({"promptIds": [prompts[0]["id"]], "samples": 1, "engines": ["chatgpt"]})
    assert again["status"] == "succeeded" and again["credits_used"] == 1
    newest = ai.ok("seo.listAiAnswers", {"runId": again["id"]})["data"][0]
    change = ai.ok("seo.getAiAnswer", {"id": newest["id"]})["changes"]
    assert change["previous_run_id"] == run["id"]
    assert change["brands_dropped"] == ["Acme Soil"] and change["brands_added"] == []
    assert change["domains_added"] == ["greengrow.com"]
    assert change["domains_dropped"] == ["acmesoil.com", "reddit.com"]
    assert "-Acme Soil is the best choice." in change["diff"]
    assert "+Green Grow is the best choice." in change["diff"]
    assert change["visibility"]["insufficient_data"] is True  # one sample against three

    # A deleted prompt's answers stay readable but leave the metrics.
    ai.ok("seo.deleteAiPrompt", {"id": prompts[9]["id"]}, role="admin")
    assert ai.ok("seo.aiVisibilityOverview", {"tag": "run"})["prompts"] == 9
    assert ai.ok("seo.listAiAnswers", {"promptId": prompts[9]["id"]})["total"] == 3


def test_a_prompt_with_one_answer_shows_insufficient_data(ai: AiVis) -> None:
    ai.profile()
    ai.connect("gemini")
    text = f"{ai.org} lonely question"
    (prompt,) = ai.ok(
        "seo.createAiPrompts",
        {"prompts": [{"text": text, "tags": ["lonely"]}], "engines": ["gemini"]},
    )["created"]
    run = ai.ran({"samples": 1})
    assert run["status"] == "succeeded" and run["credits_used"] == 1
    (listed,) = ai.ok("seo.listAiPrompts", {"tag": "lonely"}, role="member")["data"]
    insufficient = {"value": None, "n": 1, "low": None, "high": None, "insufficient_data": True}
    assert listed["latest"]["visibility"] == insufficient
    seen = ai.ok("seo.aiVisibilityOverview", {"tag": "lonely", "engine": "gemini"})
    assert seen["answers"] == 1
    assert seen["visibility"] == insufficient
    assert seen["citation_share"] == {**insufficient, "n": 1}
    # Gemini's grounding URIs redirect through Google: the domain is the chunk's title.
    (answer,) = ai.ok("seo.listAiAnswers", {"promptId": prompt["id"]})["data"]
    assert [(c["domain"], c["owner"]) for c in answer["citations"]] == [
        ("example.org", "third_party")
    ]
    assert answer["engine"] == "gemini" and answer["model"] == "gemini-2.0-flash"


def test_runs_refuse_what_they_cannot_ask(ai: AiVis, other: AiVis) -> None:
    problem(ai.request("seo.runAiVisibility", {}), 409, "CONFLICT")  # no prompt
    ai.prompts([f"{ai.org} refused"], engines=["chatgpt"])
    problem(ai.request("seo.runAiVisibility", {}), 409, "CONFLICT")  # no provider
    ai.connect("perplexity")
    # chatgpt named: it has no provider.
    found = problem(ai.request("seo.runAiVisibility", {"engines": ["chatgpt"]}), 409, "CONFLICT")
    assert "chatgpt" in found["detail"]
    problem(ai.request("seo.runAiVisibility", {}, role="member"), 403, "FORBIDDEN")
    for body in (
        {"samples": 6},
        {"samples": 0},
        {"promptIds": []},
        {"engines": ["chatgpt", "chatgpt"]},
        {"idempotencyKey": "has space"},
    ):
        problem(ai.request("seo.runAiVisibility", body), 400, "BAD_REQUEST")
    # Another organization's prompt is not asked for.
    mine = ai.ok("seo.listAiPrompts", {})["data"][0]["id"]
    other.connect("perplexity")
    problem(other.request("seo.runAiVisibility", {"promptIds": [mine]}), 409, "CONFLICT")
    # Credits short: 402, nothing opened.
    available = ai.ok("credits.getBalance", {}, role="admin")["available"]
    ai.ok(
        "credits.reserve",
        {"kind": "generation.blog", "idempotencyKey": "eat-it-all", "amount": available},
        role="admin",
    )
    problem(
        ai.request("seo.runAiVisibility", {"engines": ["perplexity"], "samples": 1}),
        402,
        "PAYMENT_REQUIRED",
    )
    assert ai.ok("seo.listSyncRuns", {"kind": "ai_visibility"}, role="member")["total"] == 0


def test_reads_check_their_inputs(ai: AiVis) -> None:
    for operation, body in (
        ("seo.aiVisibilityOverview", {"startDate": "2026-01-10", "endDate": "2026-01-01"}),
        ("seo.aiVisibilityOverview", {"startDate": "2024-01-01", "endDate": "2026-01-01"}),
        ("seo.aiVisibilityOverview", {"engine": "bing"}),
        ("seo.listAiAnswers", {"limit": 101}),
        ("seo.listAiAnswers", {"startDate": "2026-01-10", "endDate": "2026-01-01"}),
        ("seo.listAiSources", {"owner": "mine"}),
        ("seo.listAiSources", {"groupBy": "page"}),
    ):
        problem(ai.request(operation, body, role="member"), 400, "BAD_REQUEST")
    problem(
        ai.request("seo.getAiAnswer", {"id": str(uuid.uuid4())}, role="member"), 404, "NOT_FOUND"
    )
    empty = ai.ok("seo.aiVisibilityOverview", {}, role="member")
    assert empty["answers"] == 0 and empty["visibility"]["insufficient_data"] is True
    assert ai.ok("seo.overview", {}, role="member")["ai_visibility"] is None
    assert ai.ok("seo.listAiSources", {}, role="member")["total"] == 0


def test_claude_is_asked_through_anthropic_messages_with_web_search(
    ai: AiVis, answer_engines: AnswerEngineStandIn
) -> None:
    ai.profile()
    ai.connect("anthropic")
    text = f"{ai.org} claude question"
    answer_engines.plant(
        "anthropic",
        text,
        "Acme Soil is trusted. Terra Mix is slow.",
        ["https://acmesoil.com/a", "https://terramix.io/b"],
    )
    (prompt,) = ai.ok(
        "seo.createAiPrompts", {"prompts": [{"text": text}], "engines": ["claude"], "country": "US"}
    )["created"]
    run = ai.ran({"samples": 5})
    assert run["status"] == "succeeded" and run["provider"] == "anthropic"
    assert run["params"]["providers"]["claude"] == "anthropic"
    assert answer_engines.asked[("anthropic", text)] == 5
    sent = [body for who, body in answer_engines.sent if who == "anthropic"][-1]
    assert sent["tools"][0]["user_location"] == {"type": "approximate", "country": "US"}
    answer = ai.ok("seo.listAiAnswers", {"promptId": prompt["id"]})["data"][0]
    full = ai.ok("seo.getAiAnswer", {"id": answer["id"]})
    # The text blocks joined as written; the citations those of the text.
    assert full["text"] == "Acme Soil is trusted. Terra Mix is slow."
    assert full["search_queries"] == [f"search: {text}"]
    assert [(c["domain"], c["owner"]) for c in full["citations"]] == [
        ("acmesoil.com", "self"),
        ("terramix.io", "competitor"),
    ]
    assert [(m["name"], m["position"], m["sentiment"]) for m in full["mentions"]] == [
        ("Acme Soil", 1, 100.0),
        ("Terra Mix", 2, 0.0),
    ]
    assert full["provider"] == "anthropic" and full["model"] == "claude-3-5-haiku-latest"

    # The next run, the brand gone from every sample: a change the interval says is real.
    answer_engines.plant("anthropic", text, "Terra Mix is the one to buy.", [])
    again = ai.ran({"samples": 5})
    newest = ai.ok("seo.listAiAnswers", {"runId": again["id"]})["data"][0]
    change = ai.ok("seo.getAiAnswer", {"id": newest["id"]})["changes"]
    assert change["previous_run_id"] == run["id"] and change["brands_dropped"] == ["Acme Soil"]
    assert change["visibility"]["value"] == -100.0 and change["visibility"]["real"] is True
    assert change["visibility"]["high"] < 0
