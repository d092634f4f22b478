"""The definition's bookkeeping and the steps that read the article (generation/pipeline/), as
functions: each step's progress through a run, the fact check's support of a claim, which posts
an article links to (and how the links are written), which library images it takes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from contentplatform.generation.pipeline import fact_check, images, internal_links, run_steps
from contentplatform.workflows import catalog

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)


def test_a_runs_steps_start_pending_and_end_by_how_the_run_ends() -> None:
    steps = [
        catalog.step("research", "research"),
        catalog.step("score", "outline"),  # a caller's key may be an appended step's name
        catalog.step("draft", "write"),
        catalog.step("gate", "review_gate", enabled=False),
    ]
    shown = run_steps.initial_steps(steps)
    assert [(s["key"], s["status"]) for s in shown] == [
        ("research", "pending"),
        ("score", "pending"),
        ("draft", "pending"),
        ("gate", "skipped"),
        ("score-auto", "pending"),
        ("finalize", "pending"),
    ]
    assert run_steps.key_of(shown, "score") == "score-auto"

    shown = run_steps.begin(shown, "research", NOW)
    shown = run_steps.begin(shown, "research", NOW)  # the same step again: one attempt
    shown = run_steps.begin(shown, "score", NOW + timedelta(seconds=2))
    research = shown[0]
    assert (research["status"], research["attempts"]) == ("succeeded", 1)
    assert research["finished_at"] == (NOW + timedelta(seconds=2)).isoformat()
    assert run_steps.running_key(shown) == "score"

    failed = run_steps.end(shown, "failed", NOW, {"code": "NO_SOURCES", "message": "none"})
    assert [s["status"] for s in failed] == [
        "succeeded",
        "failed",
        "skipped",
        "skipped",
        "skipped",
        "skipped",
    ]
    assert failed[1]["error"] == {"code": "NO_SOURCES", "message": "none"}
    cancelled = run_steps.end(shown, "cancelled", NOW)
    assert [s["status"] for s in cancelled] == [
        "succeeded",
        "cancelled",
        "cancelled",
        "skipped",
        "cancelled",
        "cancelled",
    ]


def test_a_step_is_paid_by_the_calls_made_for_it() -> None:
    usage = {
        "a": {"step_key": "draft", "model": "m1", "input_tokens": 900, "output_tokens": 200},
        "b": {"step_key": "draft", "model": "m1", "input_tokens": 100, "output_tokens": 50},
        "c": {"step_key": "outline", "model": "m2", "input_tokens": 10, "output_tokens": 5},
    }
    assert run_steps.step_usage(usage, "draft") == (1000, 250, "m1")
    assert run_steps.step_usage(usage, "research") == (0, 0, None)
    assert run_steps.step_credits(1000, 250) == 2  # 1 per started 1,000 tokens
    assert run_steps.step_credits(0, 0) == 0


def test_the_fact_check_measures_each_claim_against_the_passages_it_cites() -> None:
    sources = {
        1: "The controller waters each zone for twelve minutes at dawn.",
        2: "Soil sensors pause watering after rain.",
    }
    citations = [
        {
            "section": "Intro",
            "text": "Each zone is watered for twelve minutes at dawn [1].",
            "sources": [1],
        },
        {"section": "Rain", "text": "Watering pauses after rain [2].", "sources": [2]},
        {
            "section": "Rain",
            "text": "The controller doubles as a weather station [2].",
            "sources": [2],
        },
        {"section": "Rain", "text": "Zones share one valve [7].", "sources": [7]},
        {"section": "Rain", "text": "[1]", "sources": [1]},  # no words: no claim
    ]
    found = fact_check.fact_check(citations, sources, 0.5)
    assert (found["checked"], found["supported"]) == (4, 2)
    unsupported = {claim["text"]: claim["support"] for claim in found["unsupported"]}
    assert set(unsupported) == {
        "The controller doubles as a weather station [2].",
        "Zones share one valve [7].",  # cites a number no passage has
    }
    assert unsupported["Zones share one valve [7]."] == 0
    # minSupport 0 accepts every claim.
    assert fact_check.fact_check(citations, sources, 0.0)["unsupported"] == []


def test_links_go_to_the_posts_on_the_same_subject_escaped() -> None:
    candidates = [
        ("Our office party", "https://blog.example.com/party"),
        ("Watering schedules that save water", "https://blog.example.com/watering"),
        ("Watering schedules that save water", "https://blog.example.com/watering"),
        ('Drip <b>"lines"</b> & watering', "https://blog.example.com/drip?a=1&b=2"),
    ]
    about = "Watering schedules for the Fernleaf controller: zones, watering, sensors"
    links = internal_links.choose_links(about, candidates, 5)
    assert links == [
        ("Watering schedules that save water", "https://blog.example.com/watering"),
        ('Drip <b>"lines"</b> & watering', "https://blog.example.com/drip?a=1&b=2"),
    ]
    assert internal_links.choose_links(about, candidates, 1) == links[:1]
    assert internal_links.choose_links(about, candidates, 0) == []

    block = internal_links.related_block(links)
    assert "<b>" not in block
    assert "Drip &lt;b&gt;&quot;lines&quot;&lt;/b&gt; &amp; watering" in block
    assert 'href="https://blog.example.com/drip?a=1&amp;b=2"' in block
    content = '<p>Intro.</p><h2 id="sources">Sources</h2><ol><li>x</li></ol>'
    placed = internal_links.with_related(content, block, '<h2 id="sources">')
    assert placed.index("related-reading") < placed.index('id="sources"')
    assert internal_links.with_related("<p>Only.</p>", block, '<h2 id="sources">').endswith("</ul>")


def test_images_are_ranked_by_the_words_they_share_with_the_article() -> None:
    candidates = [
        {"id": "cat", "title": None, "alt_text": "A cat asleep", "tags": ["cat"]},
        {"id": "drip", "title": "Drip line", "alt_text": "Drip watering", "tags": ["garden"]},
        {"id": "zones", "title": None, "alt_text": "Watering zones on the controller", "tags": []},
    ]
    about = "Watering schedules for the controller zones"
    ranked = images.rank_images(about, candidates, 2)
    assert [image["id"] for image in ranked] == ["zones", "drip"]
    assert images.rank_images("Sourdough starters", candidates, 2) == []
