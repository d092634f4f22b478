"""The offline writer: deterministic, extractive, in the formats the pipeline parses."""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from contentplatform.ai.base import (
    Completion,
    CompletionRequest,
    Message,
    ProviderRejected,
    Source,
    StreamChunk,
)
from contentplatform.ai.offline import KEY_TAKEAWAYS, NO_ANSWER, OfflineWriter

# A small company knowledge base as extraction leaves it: Markdown headings and tables, bullets,
# hard-wrapped PDF text with a bare heading line, FAQ prose without headings.
PASSAGES: list[tuple[str | None, str, str]] = [
    (
        "Acme Handbook > Pricing > Plans",
        "handbook.md",
        "## Plans\n\n"
        "Acme offers three plans: Starter, Team and Enterprise. The Starter plan costs $29 per "
        "month and includes three seats. The Team plan costs $99 per month, includes 15 seats and "
        "adds shared workspaces. Enterprise pricing is quoted per contract, e.g. for organisations "
        "with more than 200 seats.\n\n"
        "| Plan | Price | Seats |\n|---|---|---|\n| Starter | $29/month | 3 |\n"
        "| Team | $99/month | 15 |",
    ),
    (
        "Acme Handbook > Pricing > Billing",
        "handbook.md",
        "Billing runs monthly or annually. Annual billing saves 20% compared with paying "
        "monthly. Invoices are sent by email on the first day of each billing period, and cards "
        "are charged automatically. Customers can switch plans at any time; upgrades take effect "
        "immediately and are prorated.",
    ),
    (
        "Acme Handbook > Onboarding",
        "handbook.md",
        "# Onboarding\n\n"
        "New workspaces start with a guided setup that takes about 15 minutes. The setup wizard "
        "asks for the company name, invites teammates and connects the first data source.\n"
        "- Invite teammates by email or with a shareable link\n"
        "- Connect Google Drive, Notion or Confluence as a data source\n"
        "- Pick a template for the first project\n\n"
        "Most teams are fully onboarded within their **first week**. A customer success manager "
        "joins the kickoff call for Team and Enterprise customers.",
    ),
    (
        "Security Overview > Data protection",
        "security-whitepaper.pdf",
        "Data protection\n"
        "All customer data is encrypted at rest with AES-256 and in transit with TLS 1.2 or\n"
        "higher. Backups are taken every six hours and kept for 30 days in a separate region.\n"
        "Acme is SOC 2 Type II certified, and the report is available under NDA. Dr. Jane Smith\n"
        "leads the security team.",
    ),
    (
        "Security Overview > Access control",
        "security-whitepaper.pdf",
        "Single sign-on is available on the Team and Enterprise plans through SAML 2.0 and "
        "OpenID Connect. Admins can enforce two-factor authentication for every member of a "
        "workspace. Role-based access control limits who can view, edit or publish content. "
        "Audit logs record every sign-in and permission change for 12 months.",
    ),
    (
        None,
        "support-faq.docx",
        "How do I contact support? Support is available by chat and email from 8:00 to 18:00 CET "
        "on weekdays. Enterprise customers get a dedicated support line with a one-hour response "
        "time for urgent issues. The help center answers most questions about billing, "
        "onboarding and integrations.",
    ),
    (
        None,
        "support-faq.docx",
        "Can I cancel at any time? Yes. Subscriptions can be cancelled from the billing page, and "
        "access continues until the end of the paid period. Data is kept for 60 days after "
        "cancellation so that a workspace can be restored; after that it is deleted permanently.",
    ),
    (
        "Integrations",
        "integrations.html",
        "Acme integrates with Slack, Microsoft Teams and Zapier. The Slack integration posts a "
        "message whenever a draft is ready for review. A REST API and webhooks let developers "
        "connect Acme to internal tools; API keys are managed per workspace.",
    ),
]
SOURCES = [
    Source(ref, f"chunk-{ref}", f"doc-{document}", document, heading, text)
    for ref, (heading, document, text) in enumerate(PASSAGES, start=1)
]
BY_REF = {source.ref: source for source in SOURCES}
BRIEF = {
    "topic": "acme pricing and onboarding",
    "keywords": ["pricing", "onboarding"],
    "instructions": None,
    "max_sections": 5,
}
MARKER = re.compile(r"\s*\[(\d+)\]")


def complete(task: str, brief: dict[str, Any], sources: Sequence[Source] = SOURCES) -> Completion:
    request = CompletionRequest(
        task=task,  # type: ignore[arg-type]
        messages=[Message("system", "Write from the sources."), Message("user", json.dumps(brief))],
        brief=brief,
        sources=sources,
    )
    return asyncio.run(OfflineWriter().complete(request))


def outline(**brief: Any) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(complete("outline", BRIEF | brief).text)
    return parsed


def section(heading: str | None, refs: list[int], **brief: Any) -> str:
    values = BRIEF | {
        "title": "Acme Pricing and Onboarding",
        "heading": heading,
        "points": [],
        "index": 1,
        "count": 5,
        "previous_headings": [],
    }
    return complete("section", values | brief, [BY_REF[ref] for ref in refs]).text


def blocks(fragment: str) -> list[str]:
    """The text of each <p> and <li>, unescaped."""
    return [html.unescape(b) for b in re.findall(r"<(?:p|li)>(.*?)</(?:p|li)>", fragment, re.S)]


def source_text(sources: Sequence[Source]) -> str:
    """The sources as one line of plain text, to look sentences up in."""
    text = " ".join(source.text for source in sources)
    text = re.sub(r"\*\*|^#+ .*$", "", text, flags=re.M)
    return " ".join(text.split())


def sentences_of(block: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", MARKER.sub("", block)) if s]


# --- determinism and usage -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "brief"),
    [
        ("outline", BRIEF),
        ("section", BRIEF | {"heading": "Plans", "points": []}),
        ("seo", {"topic": "Acme", "keywords": [], "title": "Acme", "text": "Acme is a tool."}),
        ("answer", {"question": "How much is the Team plan?"}),
    ],
)
def test_deterministic_with_usage(task: str, brief: dict[str, Any]) -> None:
    first, second = complete(task, brief), complete(task, brief)
    assert first == second
    assert first.model == "offline-extractive-1" and first.finish_reason == "stop"
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0


def test_deterministic_across_processes() -> None:
    """Another process has another str hash seed: no output may depend on set or hash order."""
    script = (
        "import asyncio, json\n"
        "from tests.ai.test_offline import BRIEF, SOURCES, complete\n"
        "outline = json.loads(complete('outline', BRIEF | {'max_sections': 8}).text)\n"
        "texts = [json.dumps(outline)]\n"
        "for s in outline['sections']:\n"
        "    brief = BRIEF | {'heading': s['heading'], 'points': s['points']}\n"
        "    chosen = [x for x in SOURCES if x.ref in s['sources']]\n"
        "    texts.append(complete('section', brief, chosen).text)\n"
        "texts.append(complete('answer', {'question': 'Is data encrypted?'}).text)\n"
        "print(json.dumps(texts))\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            env=os.environ | {"PYTHONHASHSEED": seed},
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1


def test_unknown_task_is_rejected() -> None:
    with pytest.raises(ProviderRejected, match="poem"):
        complete("poem", {})


# --- outline ---------------------------------------------------------------------------------


def test_outline_shape() -> None:
    result = outline()
    assert list(result) == ["title", "intro", "sections", "conclusion"]
    assert result["title"].startswith("Acme Pricing and Onboarding") or result["title"].endswith(
        "Acme Pricing and Onboarding"
    )
    refs = {source.ref for source in SOURCES}
    assert result["intro"]["sources"] == [1, 2]
    assert 1 <= len(result["intro"]["points"]) <= 2
    assert 2 <= len(result["sections"]) <= 5
    headings = [s["heading"] for s in result["sections"]]
    assert len({h.casefold() for h in headings}) == len(headings)
    assert headings[:3] == ["Plans", "Billing", "Onboarding"]  # last part of the heading path
    for s in result["sections"]:
        assert set(s) == {"heading", "sources", "points"}
        assert s["sources"] and set(s["sources"]) <= refs
        assert 1 <= len(s["points"]) <= 3
        text = source_text([BY_REF[ref] for ref in s["sources"]])
        assert all(point in text for point in s["points"])
    assert result["conclusion"]["heading"] == KEY_TAKEAWAYS
    assert 1 <= len(result["conclusion"]["points"]) <= 5


def test_outline_names_untitled_sections_and_keeps_max_sections() -> None:
    headings = [s["heading"] for s in outline(max_sections=8)["sections"]]
    # The FAQ passages have no heading: named by their key phrase, both in one section.
    assert "Support" in headings
    assert len(headings) == 7
    assert [s["sources"] for s in outline(max_sections=8)["sections"] if s["heading"] == "Support"]
    assert len(outline(max_sections=3)["sections"]) == 3


def test_outline_title_does_not_shout_and_varies_by_topic() -> None:
    title = outline(topic="ACME CONTENT PLATFORM")["title"]
    assert "Acme Content Platform" in title and "ACME" not in title
    titles = {outline(topic=topic)["title"] for topic in ("billing", "security", "onboarding")}
    assert len(titles) == 3
    assert outline(topic="How do I cancel my plan?")["title"] == "How Do I Cancel My Plan?"


def test_outline_without_sources() -> None:
    result = json.loads(complete("outline", BRIEF, []).text)
    assert [s["heading"] for s in result["sections"]] == ["Pricing", "Onboarding"]
    assert all(s["sources"] == [] for s in result["sections"])


# --- section ---------------------------------------------------------------------------------


def test_section_cites_given_sources_only_and_every_block() -> None:
    fragment = section("Billing", [2, 6])
    assert not fragment.startswith("<h")
    for block in blocks(fragment):
        assert MARKER.search(block) and block.rstrip().endswith("]")
    assert {int(n) for n in MARKER.findall(fragment)} <= {2, 6}
    assert "Annual billing saves 20% compared with paying monthly." in fragment


def test_section_sentences_come_from_the_sources() -> None:
    fragment = section("Data Protection", [4, 5])
    text = source_text([BY_REF[4], BY_REF[5]])
    written = [s for block in blocks(fragment) for s in sentences_of(block)]
    assert len(written) >= 3
    for sentence in written:
        for connective in ("In practice, ", "Beyond that, ", "On top of that, ", "Just as "):
            if sentence.startswith(connective):
                sentence = sentence.removeprefix(connective)
                sentence = sentence.removeprefix("important, ")
                sentence = sentence[0].upper() + sentence[1:]
        assert sentence in text
    # A hard-wrapped PDF line is joined; its bare heading line is not a sentence.
    assert "encrypted at rest with AES-256 and in transit with TLS 1.2 or higher." in fragment
    assert "Data protection All" not in fragment
    # "Dr." does not end a sentence, and a sentence wrapped over two PDF lines is whole.
    who = complete("answer", {"question": "Who leads the security team?"}).text
    assert who.startswith("Dr. Jane Smith leads the security team. [4]")


def test_section_lists_bullets_and_strips_markdown() -> None:
    fragment = section("Onboarding", [3])
    assert "<ul><li>Invite teammates by email or with a shareable link [3]</li>" in fragment
    assert "first week" in fragment
    assert not re.search(r"\*\*|#|\|", fragment)
    table = section("Plans", [1])
    assert "<li>Starter — price: $29/month, seats: 3 [1]</li>" in table
    assert "|" not in table


def test_introduction_is_one_paragraph() -> None:
    fragment = section(
        None, [1, 2], points=["Annual billing saves 20% compared with paying monthly."]
    )
    assert fragment.count("<p>") == 1 and "<ul>" not in fragment
    assert "Annual billing saves 20%" in fragment and "[2]" in fragment


def test_section_avoids_used_sentences() -> None:
    used = [
        "Billing runs monthly or annually.",
        "Annual billing saves 20% compared with paying monthly.",
    ]
    fragment = section("Billing", [2], used_sentences=used)
    assert "Billing runs monthly" not in fragment and "Annual billing" not in fragment
    assert "Invoices are sent by email" in fragment


def test_section_escapes_html() -> None:
    tricky = Source(
        9,
        "c9",
        "d9",
        "notes.md",
        "Templates",
        "Use <b>bold</b> & <script>x</script> "
        "tags sparingly in email templates, says the style guide.",
    )
    fragment = complete("section", BRIEF | {"heading": "Templates"}, [tricky]).text
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;" in fragment
    assert "<script>" not in fragment and "<b>" not in fragment
    assert fragment.endswith("[9]</p>")


def test_section_without_sources_says_so() -> None:
    fragment = complete("section", BRIEF | {"heading": "Refunds"}, []).text
    assert fragment == "<p>The knowledge base has no material on Refunds yet.</p>"


def test_conclusion_is_a_list_of_takeaways() -> None:
    fragment = section(KEY_TAKEAWAYS, [s.ref for s in SOURCES], kind="conclusion")
    assert fragment.startswith("<ul>") and fragment.endswith("</ul>")
    items = blocks(fragment)
    assert 3 <= len(items) <= 5
    text = source_text(SOURCES)
    for item in items:
        assert MARKER.search(item)
        assert MARKER.sub("", item) in text
    assert len({MARKER.findall(item)[0] for item in items}) >= 3  # from several sources


# --- seo -------------------------------------------------------------------------------------

ARTICLE = (
    "Acme offers three plans: Starter, Team and Enterprise. [1] Annual billing saves 20% "
    "compared with paying monthly. [2] New workspaces start with a guided setup that takes about "
    "15 minutes. [3]"
)


@pytest.mark.parametrize(
    ("topic", "keywords", "title"),
    [
        ("acme pricing", ["acme pricing", "plans"], "Acme Pricing: A Practical Guide"),
        ("Café pricing für Teams", [], "Café Pricing für Teams Explained"),
        (
            "how growing companies with many departments across several continents should choose "
            "between monthly and annual billing for their collaboration software",
            [],
            "How Growing Companies With Many Departments Across Several Continents Should Choose "
            "Between Monthly and Annual Billing",
        ),
        ("onboarding", ["onboarding checklist for new enterprise customers"], "Onboarding"),
        ("x", [], "X"),
    ],
)
def test_seo_lengths(topic: str, keywords: list[str], title: str) -> None:
    brief = {
        "topic": topic,
        "keywords": keywords,
        "title": title,
        "text": re.sub(r" \[\d\]", "", ARTICLE),
        "first_paragraph": ARTICLE.split(" [1]")[0] + " [1]",
    }
    seo = json.loads(complete("seo", brief).text)
    assert list(seo) == ["seo_title", "meta_description", "slug", "focus_keywords", "excerpt"]
    assert 0 < len(seo["seo_title"]) <= 60
    assert 120 <= len(seo["meta_description"]) <= 160
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", seo["slug"]) and len(seo["slug"]) <= 75
    assert 1 <= len(seo["focus_keywords"]) <= 5
    assert 0 < len(seo["excerpt"]) <= 300
    focus = seo["focus_keywords"][0]
    assert focus.casefold() in seo["meta_description"].casefold()
    if len(focus) <= 40:
        assert focus.casefold() in seo["seo_title"].casefold()
    assert "[1]" not in seo["meta_description"] and "[1]" not in seo["excerpt"]
    if keywords:
        assert seo["focus_keywords"] == keywords


def test_seo_details() -> None:
    brief = {
        "topic": "Café pricing für Teams",
        "keywords": [],
        "title": "Café Pricing für Teams Explained",
        "text": ARTICLE,
        "first_paragraph": ARTICLE,
    }
    seo = json.loads(complete("seo", brief).text)
    assert seo["slug"] == "cafe-pricing-fur-teams-explained"
    assert seo["focus_keywords"] == ["café pricing für teams"]
    assert seo["excerpt"] == (
        "Acme offers three plans: Starter, Team and Enterprise. "
        "Annual billing saves 20% compared with paying monthly."
    )
    assert seo["meta_description"].startswith("Café pricing für teams — Acme offers three plans")


# --- answer and stream -----------------------------------------------------------------------


def test_answer_cites_the_relevant_sentences() -> None:
    answer = complete("answer", {"question": "How much does the Team plan cost?"}).text
    assert answer.startswith(
        "The Team plan costs $99 per month, includes 15 seats and adds shared workspaces. [1]"
    )
    assert 2 <= len(MARKER.findall(answer)) <= 4
    assert re.fullmatch(r"(?:[^\[\]]+ \[\d+\] ?){2,4}", answer)


def test_answer_without_sources() -> None:
    assert complete("answer", {"question": "What is the refund policy?"}, []).text == NO_ANSWER


def test_stream_yields_words_then_the_completion() -> None:
    request = CompletionRequest(
        task="answer",
        messages=[Message("user", "Is single sign-on available?")],
        brief={"question": "Is single sign-on available?"},
        sources=SOURCES,
    )

    async def collect() -> tuple[list[StreamChunk], Completion]:
        writer = OfflineWriter()
        chunks = [chunk async for chunk in writer.stream(request)]
        return chunks, await writer.complete(request)

    chunks, completion = asyncio.run(collect())
    *words, last = chunks
    assert len(words) > 5
    assert all(chunk.completion is None and chunk.text.strip() for chunk in words)
    assert all(" " not in chunk.text.rstrip() for chunk in words)
    assert "".join(chunk.text for chunk in words) == completion.text
    assert last.text == "" and last.completion == completion
    assert "Single sign-on is available on the Team and Enterprise plans" in completion.text
