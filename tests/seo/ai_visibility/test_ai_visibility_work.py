"""AI visibility's work and parts below the API: a run whose workflow was lost mid-way resumed
by the reconciler without asking an engine again for a sample it stored (counted at the
stand-in), its credits committed once; the DataForSEO LLM responses engine against its stand-in;
the labelled, deterministic offline engine; extraction (word boundaries, aliases, order,
sentiment, registrable domains read from the bundled list with no network at all)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from contentplatform.ai.offline import OfflineWriter
from contentplatform.ai.openai_compatible import OpenAICompatible
from contentplatform.config import Settings
from contentplatform.core import runtime
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo import repository as seo_repository
from contentplatform.seo.ai_visibility import (
    durable,
    engines,
    extraction,
    metrics,
    sentiment,
    service,
)
from contentplatform.seo.ai_visibility import schedule as ai_schedule
from contentplatform.seo.ai_visibility.schemas import RunAiVisibilityInput
from contentplatform.seo.models import SeoAiAnswer, SeoSettings
from contentplatform.seo.sync_runs import service as sync_runs
from tests.conftest import Run
from tests.seo.ai_visibility.standin import DFS_LOGIN, DFS_PASSWORD, AnswerEngineStandIn
from tests.seo.ai_visibility.test_ai_visibility import AiVis
from tests.seo.rank.standin import LOGIN, PASSWORD, SerpStandIn
from tests.support.llm import ChatServer, Failure, Reply
from tests.support.network import NetworkGuard, no_outside_connections
from tests.support.orgs import org_fixture

ai = org_fixture(AiVis)


@pytest.fixture(autouse=True)
def _standin(answer_engines: AnswerEngineStandIn) -> AnswerEngineStandIn:
    return answer_engines


def test_a_run_whose_workflow_was_lost_resumes_without_asking_twice(
    ai: AiVis, answer_engines: AnswerEngineStandIn, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    ai.profile()
    ai.connect("openai")
    texts = [f"{ai.org} crash {n}" for n in range(2)]
    ai.prompts(texts, engines=["chatgpt"])
    # Opened as seo.runAiVisibility opens it, but its workflow never queued (a kill -9 took it).
    monkeypatch.setattr(durable, "enqueue_after_commit", lambda *args: None)

    async def open_and_ask_half(db: Database) -> str:
        async with db.unit_of_work() as session:
            opened = await service.run(
                session,
                runtime.current().settings,
                ai.tenant_id,
                "someone",
                RunAiVisibilityInput(samples=3, idempotency_key=f"crash-{ai.org}"),
            )
            run_id = opened.id
        # The workflow's first half: three samples asked and stored, then the process died.
        async with db.unit_of_work() as session:
            await sync_runs.mark_running(session, ai.tenant_id, run_id)
            found = await durable.context(session, ai.tenant_id)
            pending = await durable.repository.of_run(session, ai.tenant_id, run_id, ["pending"])
            prompts = await durable.repository.prompts_by_ids(
                session, ai.tenant_id, [row.prompt_id for row in pending]
            )
            work = [
                (row.id, durable.question(prompts[row.prompt_id].text, row, found))
                for row in pending[:3]
            ]
        for row_id, asked in work:
            answer = await engines.ask(runtime.current().settings, found.routes["chatgpt"], asked)
            await durable.store(db, ai.tenant_id, run_id, row_id, answer, found)
        return str(run_id)

    run_id = run(open_and_ask_half)
    monkeypatch.undo()
    # The reconciler finds the run with answers pending and no workflow, and restarts it.
    done = ai.wait(run_id)
    assert done["status"] == "succeeded" and done["progress"] == {"done": 6, "total": 6}
    assert done["credits_reserved"] == done["credits_used"] == 6
    # Each sample asked once: the three stored before the crash not again.
    assert [answer_engines.asked[("openai", text)] for text in texts] == [3, 3]

    # Settling again (a replayed step) charges nothing more.
    async def settle_again(db: Database) -> None:
        async with db.unit_of_work() as session:
            await durable.settle(session, ai.tenant_id, uuid.UUID(run_id))

    balance = ai.ok("credits.getBalance", {}, role="admin")["available"]
    run(settle_again)
    assert ai.ok("credits.getBalance", {}, role="admin")["available"] == balance
    holds = ai.ok("credits.listReservations", {"kind": "seo.runAiVisibility"}, role="admin")
    assert [(h["amount_held"], h["amount_committed"]) for h in holds["data"]] == [(6, 6)]

    async def statuses(db: Database) -> list[tuple[str, int]]:
        async with db.unit_of_work() as session:
            statement = select(SeoAiAnswer.status, SeoAiAnswer.sample).where(
                SeoAiAnswer.tenant_id == ai.tenant_id,
                SeoAiAnswer.sync_run_id == uuid.UUID(run_id),
            )
            return sorted((await session.execute(statement)).tuples())  # type: ignore[arg-type]

    assert run(statuses) == [("answered", 1)] * 2 + [("answered", 2)] * 2 + [("answered", 3)] * 2


def test_the_dataforseo_engine_speaks_llm_responses(
    settings: Settings, answer_engines: AnswerEngineStandIn
) -> None:
    configured = settings.model_copy(update={"dataforseo_api_base": f"{answer_engines.url}/dfs"})
    answer_engines.plant(
        "dataforseo:claude", "dfs prompt", "Acme Soil leads.", ["https://acmesoil.com/x"]
    )
    route = engines.Route(
        engine="claude",
        provider="dataforseo",
        credentials={"login": DFS_LOGIN, "password": DFS_PASSWORD},
    )
    question = engines.Question(prompt="dfs prompt", country="US", language="en", sample=1)
    found = asyncio.run(engines.ask(configured, route, question))
    assert isinstance(found, engines.Answer)
    assert found.text == "Acme Soil leads." and found.model == "claude-3-5-haiku-latest"
    assert [c.url for c in found.citations] == ["https://acmesoil.com/x"]
    assert found.search_queries == ["search: dfs prompt"]
    sent = [body for who, body in answer_engines.sent if who == "dataforseo"][-1]
    assert sent == [
        {
            "user_prompt": "dfs prompt",
            "model_name": "claude-3-5-haiku-latest",
            "web_search": True,
            "web_search_country_iso_code": "US",
        }
    ]
    refused = engines.Route(
        engine="claude", provider="dataforseo", credentials={"login": "x", "password": "y"}
    )
    failed = asyncio.run(engines.ask(configured, refused, question))
    assert isinstance(failed, engines.Failed) and failed.code == "http_401"
    assert "y" not in failed.message


def test_the_offline_engine_is_labelled_and_deterministic() -> None:
    question = engines.Question(
        prompt="best soil",
        country=None,
        language=None,
        sample=1,
        brand="Acme Soil",
        own_domain="acmesoil.com",
        competitors=(("Green Grow", "greengrow.com"),),
    )
    first = engines.offline_answer("chatgpt", question)
    assert first == engines.offline_answer("chatgpt", question)
    assert first.model == "offline (made-up answers)"
    assert first.text.startswith("(Offline answer, made up for testing)")
    others = {
        engines.offline_answer(
            "chatgpt", engines.Question(**{**question.__dict__, "sample": n})
        ).text
        for n in range(1, 6)
    }
    assert len(others) > 1  # samples differ, as real ones do


@pytest.fixture
def guard() -> Iterator[NetworkGuard]:
    with no_outside_connections() as found:
        yield found


def test_extraction_reads_mentions_order_sentiment_and_domains(guard: NetworkGuard) -> None:
    extraction._extractor.cache_clear()  # built here, under the guard
    brands = [
        extraction.Brand(name="Acme Soil", terms=("Acme Soil", "acmesoil.com")),
        extraction.Brand(name="Green Grow", terms=("Green Grow", "GreenGrow"), competitor_id="g"),
        extraction.Brand(name="Tera", terms=("Tera",), competitor_id="t"),
    ]
    text = (
        "Green-Grow is popular but expensive. Acme Soilless mixes are not us.\n"
        "ACME soil is the best and most reliable! Terabytes are no brand; tera is."
    )
    found = extraction.mentions(text, brands)
    assert [(m["name"], m["position"]) for m in found] == [
        ("Green Grow", 1),
        ("Acme Soil", 2),
        ("Tera", 3),
    ]
    spans = {m["name"]: [text[a:b] for a, b in m["offsets"]] for m in found}
    # Word boundaries: "Acme Soilless" and "Terabytes" are not mentions; case and hyphens are.
    assert spans == {"Green Grow": ["Green-Grow"], "Acme Soil": ["ACME soil"], "Tera": ["tera"]}
    plural = extraction.mentions("Try Acme Soils.", brands)
    assert [m["offsets"] for m in plural] == [[[4, 14]]]  # "Acme Soils", rapidfuzz's 95
    sentiment = {m["name"]: m["sentiment"] for m in found}
    # "popular" against "expensive": 50; "best" and "reliable": 100; none: 50.
    assert sentiment == {"Green Grow": 50.0, "Acme Soil": 100.0, "Tera": 50.0}

    owners = extraction.Owners(own_domain="acmesoil.com", competitors={"greengrow.co.uk": "g"})
    answer = engines.Answer(
        text="",
        citations=[
            engines.Citation(url="https://shop.acmesoil.com/a"),
            engines.Citation(url="https://www.greengrow.co.uk/"),
            engines.Citation(url="https://user.github.io/page"),
            engines.Citation(url="http://127.0.0.1/x"),
        ],
        search_queries=[],
        model=None,
    )
    cited = extraction.citations(answer, owners)
    assert [(c["domain"], c["owner"]) for c in cited] == [
        ("acmesoil.com", "self"),
        ("greengrow.co.uk", "competitor"),
        ("github.io", "third_party"),  # the ICANN list only: github.io is the registrable part
        (None, "third_party"),
    ]
    # The bundled list was read; nothing was connected to, not even on loopback.
    assert guard.here == []


def test_wilson_and_the_minimum_sample() -> None:
    assert metrics.share(1, 4).insufficient_data is True
    shown = metrics.share(5, 10)
    assert shown.value == 50.0 and (shown.low, shown.high) == (23.66, 76.34)
    assert metrics.share(0, 5).low == 0.0 and metrics.share(5, 5).high == 100.0


def test_google_ai_overview_is_read_from_the_serp(settings: Settings, serp: SerpStandIn) -> None:
    keyword = f"ai overview {uuid.uuid4().hex[:8]}"
    serp.ai_overview(keyword, "acmesoil.com")
    route = engines.Route(
        engine="google_ai_overview",
        provider="dataforseo",
        credentials={"login": LOGIN, "password": PASSWORD},
    )
    question = engines.Question(prompt=keyword, country="GB", language="en-GB", sample=1)
    found = asyncio.run(engines.ask(settings, route, question))
    assert isinstance(found, engines.Answer)
    assert found.text == f"An AI Overview of {keyword}, citing acmesoil.com."
    assert [c.url for c in found.citations] == ["https://acmesoil.com/guide"]
    sent = next(task for task in reversed(serp.live) if task["keyword"] == keyword)
    assert (sent["location_code"], sent["language_code"]) == (2826, "en")
    # No AI Overview on the page: an empty answer, mentioning nobody.
    bare = asyncio.run(
        engines.ask(settings, route, engines.Question(keyword + " x", None, None, 1))
    )
    assert isinstance(bare, engines.Answer) and bare.text == "" and bare.citations == []


def test_a_change_is_real_when_newcombes_interval_leaves_out_zero() -> None:
    def by_hand(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
        (l1, u1), (l2, u2) = metrics.wilson(k1, n1), metrics.wilson(k2, n2)
        p1, p2 = k1 / n1, k2 / n2
        d = p1 - p2
        return (
            round(100 * (d - ((p1 - l1) ** 2 + (u2 - p2) ** 2) ** 0.5), 2),
            round(100 * (d + ((u1 - p1) ** 2 + (p2 - l2) ** 2) ** 0.5), 2),
        )

    up = metrics.difference((18, 30), (6, 30))
    assert (up.value, up.real) == (40.0, True) and (up.low, up.high) == by_hand(18, 30, 6, 30)
    assert up.low is not None and up.low > 0
    noise = metrics.difference((16, 30), (15, 30))
    assert (noise.value, noise.real) == (3.33, False)
    assert noise.low is not None and noise.low < 0 < (noise.high or 0)
    assert metrics.difference((1, 4), (3, 30)).insufficient_data is True


def test_the_configured_model_scores_the_sentences_naming_a_brand() -> None:
    """With a language model configured, each sentence naming a brand is scored by it (one
    request an answer, its JSON read back), a brand's sentiment the mean of its sentences;
    without one, or when the model fails or answers in another shape, the lexicon's."""
    brands = [
        extraction.Brand(name="Acme Soil", terms=("Acme Soil",)),
        extraction.Brand(name="Green Grow", terms=("Green Grow",), competitor_id="g"),
    ]
    text = "Acme Soil is fine. Nothing here. Green Grow costs more than Acme Soil does."
    sentences = extraction.mention_sentences(text, brands)
    assert [text[a:b] for a, b in sentences] == [
        "Acme Soil is fine.",
        "Green Grow costs more than Acme Soil does.",
    ]
    with ChatServer() as llm:
        model = OpenAICompatible(llm.base_url, "key", "stub-model", timeout=5, max_retries=0)
        llm.script(
            Reply('{"scores": [0.8, -0.5]}', usage=(40, 7)),
            Reply('{"scores": [0.8]}'),
            Reply("I think it is positive."),
            Failure(500),
        )

        async def ask() -> list[sentiment.Scored | None]:
            try:
                return [await sentiment.by_model(model, text, sentences) for _ in range(4)]
            finally:
                await model.close()

        scored, short, prose, failed = asyncio.run(ask())
        request = llm.requests[0].json
    assert request["response_format"] == {"type": "json_object"}
    assert request["messages"][1]["content"] == (
        "1. Acme Soil is fine.\n2. Green Grow costs more than Acme Soil does."
    )
    assert scored is not None and (scored.input_tokens, scored.output_tokens) == (40, 7)
    assert scored.method == "language model (stub-model)"
    assert scored.scores == {sentences[0]: 90.0, sentences[1]: 25.0}
    found = {m["name"]: m["sentiment"] for m in extraction.mentions(text, brands, scored.scores)}
    assert found == {"Acme Soil": 57.5, "Green Grow": 25.0}  # (90 + 25) / 2; 25
    assert short is None and prose is None and failed is None
    # The lexicon when the model did not score: "fine" is no lexicon word, so 50 throughout.
    lexicon = {m["name"]: m["sentiment"] for m in extraction.mentions(text, brands)}
    assert lexicon == {"Acme Soil": 50.0, "Green Grow": 50.0}
    assert asyncio.run(sentiment.by_model(OfflineWriter(), text, sentences)) is None


def test_a_models_sentiment_is_stored_labelled_and_its_tokens_charged_with_the_run(
    ai: AiVis, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer scored by the language model keeps the model's sentiment and says so; the
    model's tokens go on the run's commit (AI usage). Answers the model did not score are the
    lexicon's, labelled."""
    ai.profile()
    ai.connect("openai")
    ai.prompts([f"{ai.org} Acme Soil or Green Grow?"], engines=["chatgpt"])
    monkeypatch.setattr(durable, "enqueue_after_commit", lambda *args: None)

    async def answer_all(db: Database) -> str:
        async with db.unit_of_work() as session:
            opened = await service.run(
                session,
                runtime.current().settings,
                ai.tenant_id,
                "someone",
                RunAiVisibilityInput(samples=2, idempotency_key=f"sentiment-{ai.org}"),
            )
        async with db.unit_of_work() as session:
            await sync_runs.mark_running(session, ai.tenant_id, opened.id)
            found = await durable.context(session, ai.tenant_id)
            pending = await durable.repository.of_run(session, ai.tenant_id, opened.id, ["pending"])
            prompts = await durable.repository.prompts_by_ids(
                session, ai.tenant_id, [row.prompt_id for row in pending]
            )
        for n, row in enumerate(sorted(pending, key=lambda row: row.sample)):
            asked = durable.question(prompts[row.prompt_id].text, row, found)
            answer = await engines.ask(runtime.current().settings, found.routes["chatgpt"], asked)
            assert isinstance(answer, engines.Answer)
            sentences = extraction.mention_sentences(answer.text, found.lookout.brands)
            assert sentences, answer.text
            scored = (
                sentiment.Scored(
                    {span: 80.0 for span in sentences}, "language model (stub)", "stub", 30, 4
                )
                if n == 0
                else None
            )
            await durable.store(db, ai.tenant_id, opened.id, row.id, answer, found, scored=scored)
        async with db.unit_of_work() as session:
            await durable.settle(session, ai.tenant_id, opened.id)
        return str(opened.id)

    run_id = run(answer_all)
    listed = ai.ok("seo.listAiAnswers", {"runId": run_id}, role="member")["data"]
    by_method = {item["sentiment_method"]: item for item in listed}
    assert set(by_method) == {"language model (stub)", "lexicon (offline, no model)"}
    scored = ai.ok("seo.getAiAnswer", {"id": by_method["language model (stub)"]["id"]})
    assert scored["mentions"] and {m["sentiment"] for m in scored["mentions"]} == {80.0}
    events = ai.ok("analytics.aiUsageEvents", {"kind": "seo.runAiVisibility"}, role="admin")["data"]
    assert [(e["input_tokens"], e["output_tokens"], e["credits"]) for e in events] == [(30, 4, 2)]


def test_scheduled_runs_follow_the_settings_once_a_period(ai: AiVis, run: Run) -> None:
    """ai_visibility.frequency is acted on: the clock starts with the first prompt (weekly by
    default, Mondays at 06:00 of the zone), a due tick starts one run of the active prompts with
    the settings' samples, the same period never twice; too few credits leave a failed run for
    the period; `off` stops the clock."""

    def clock() -> datetime | None:
        async def scenario(db: Database) -> datetime | None:
            async with db.unit_of_work() as session:
                row = await seo_repository.stored_settings(session, ai.tenant_id)
                return None if row is None else row.next_ai_visibility_at

        found: datetime | None = run(scenario)
        return found

    def due(at: datetime) -> None:
        async def scenario(db: Database) -> None:
            async with db.unit_of_work() as session:
                await session.execute(
                    update(SeoSettings)
                    .where(SeoSettings.tenant_id == ai.tenant_id)
                    .values(next_ai_visibility_at=at)
                )

        run(scenario)

    def tick() -> dict[str, int]:
        async def scenario(db: Database) -> dict[str, int]:
            return await ai_schedule.tick(db, utcnow())

        found: dict[str, int] = run(scenario)
        return found

    def scheduled() -> list[dict[str, Any]]:
        runs = ai.ok("seo.listSyncRuns", {"kind": "ai_visibility"}, role="member")["data"]
        return [found for found in runs if found["trigger"] == "schedule"]

    ai.profile()
    ai.connect("openai")
    assert clock() is None
    ai.prompts([f"{ai.org} scheduled {n}" for n in range(2)], engines=["chatgpt"])
    weekly = clock()
    assert weekly is not None and utcnow() < weekly <= utcnow() + timedelta(days=7)
    assert (weekly.weekday(), weekly.hour, weekly.minute) == (0, 6, 0)  # UTC organization
    ai.ok("seo.updateSettings", {"aiVisibility": {"frequency": "daily"}}, role="admin")
    daily = clock()
    assert daily is not None and daily.hour == 6 and daily - utcnow() <= timedelta(days=1)

    at = utcnow() - timedelta(minutes=1)
    due(at)
    assert tick()["started"] >= 1
    (first,) = scheduled()
    done = ai.wait(first["id"])
    assert done["status"] == "succeeded" and done["created_by"] is None
    assert done["credits_used"] == 2 * 3  # two prompts x the default 3 samples
    moved = clock()
    assert moved is not None and moved > utcnow()
    due(at)  # due again within the same day: that day's run exists, none starts
    tick()
    assert [found["id"] for found in scheduled()] == [first["id"]]

    available = ai.ok("credits.getBalance", {}, role="admin")["available"]
    ai.ok(
        "credits.reserve",
        {"kind": "generation.blog", "idempotencyKey": "eat-it-all", "amount": available},
        role="admin",
    )
    for _ in range(2):
        due(at - timedelta(days=1))
        tick()
    refused = [found for found in scheduled() if found["id"] != first["id"]]
    assert [(found["status"], found["error"]["code"]) for found in refused] == [
        ("failed", "insufficient_credits")
    ]
    ai.ok("seo.updateSettings", {"aiVisibility": {"frequency": "off"}}, role="admin")
    assert clock() is None
