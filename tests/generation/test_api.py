"""generation.blog and generation.getRun end to end over real HTTP (REST and RPC), on the offline
writer: real documents ingested, the DBOS pipeline run by the service to a draft in review, and
what it leaves behind (citations, provenance, SEO, the revision, document usage, credits);
documentIds and the primary document, idempotency, NO_SOURCES, 402, every bound, roles,
tenancy, deleting the draft mid-run, and escaping of markup found in the sources."""

from __future__ import annotations

import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from bs4 import BeautifulSoup

from tests.documents.support import available_credits, hold_all_but
from tests.generation.support import (
    BEEKEEPING,
    HANDBOOK,
    IMG,
    MARKUP_NOTES,
    SCRIPT,
    SOURDOUGH,
    Writer,
    blog_reservations,
    chunk_ids_of,
    start_for_a_deleted_draft,
)
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

HOLD = 40  # generation_credit_hold, the default
STEPS = ["retrieve", "outline", "write", "optimize", "score", "finalize"]
RUN_FIELDS = {
    "id",
    "kind",
    "status",
    "step",
    "percent",
    "error",
    "draft_id",
    "job_id",
    "instance_id",
    "reservation_id",
    "credits_committed",
    "retry_of",
    "created_at",
    "started_at",
    "finished_at",
}
SEO_CHECKS = {
    "keyword_in_title",
    "keyword_in_intro",
    "keyword_in_headings",
    "title_length",
    "meta_description_length",
    "heading_structure",
    "length",
    "readability",
    "links",
}
CONNECTIVES = ("In practice, ", "Beyond that, ", "On top of that, ", "Just as important, ")
SLUG = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
MISSING = "<missing>"


writer = org_fixture(Writer)
other = org_fixture(Writer, second=True)  # a second tenant, through the same transport


def flat(text: str) -> str:
    return " ".join(text.split())


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r'(?<=[.!?"])\s+(?=[A-Z"])', flat(text)) if s]


def paragraphs(content: str) -> list[str]:
    """The text of each <p>, without citation markers."""
    soup = BeautifulSoup(content, "html.parser")
    for sup in soup.find_all("sup"):
        sup.decompose()
    return [flat(p.get_text()) for p in soup.find_all("p")]


def cited_documents(draft: dict[str, Any]) -> set[str]:
    return {source["document_id"] for source in draft["provenance"]["sources"]}


def check_progress(seen: list[dict[str, Any]]) -> None:
    """Percent and step never go back as a run is polled."""
    percents = [run["percent"] for run in seen]
    assert percents == sorted(percents), percents
    steps = [STEPS.index(run["step"]) for run in seen if run["step"] is not None]
    assert steps == sorted(steps), [run["step"] for run in seen]
    assert all(0 <= p <= 100 for p in percents)


# --- the whole pipeline -----------------------------------------------------------------------


@pytest.mark.own_org
def test_an_ingested_handbook_becomes_a_cited_scored_draft_in_review(writer, settings):
    handbook = writer.ingest("Fernleaf handbook.md", HANDBOOK)
    before = available_credits(settings, writer.tenant_id)
    key = f"article-{uuid.uuid4()}"
    topic = "Smart irrigation scheduling"
    keywords = ["smart irrigation", "watering schedule", "soil moisture"]

    started = writer.start(
        topic=topic,
        keywords=keywords,
        contentInstructions="Write for homeowners with a small garden.",
        idempotencyKey=key,
    )
    # At once: the draft, generating, at version 0, with its queued run.
    assert started["status"] == "generating"
    assert started["version"] == 0
    assert started["title"] == topic
    assert started["content"] == "<p></p>"
    assert started["seo_score"] is None
    queued = started["run"]
    assert set(queued) == RUN_FIELDS
    assert started["run_id"] == queued["id"]
    assert queued["draft_id"] == started["id"]
    assert queued["kind"] == "blog"
    assert (queued["status"], queued["step"], queued["percent"]) == ("queued", None, 0)
    assert queued["error"] is None
    assert queued["credits_committed"] is None
    assert queued["started_at"] is None and queued["finished_at"] is None
    assert queued["job_id"] is None and queued["instance_id"] is None
    assert queued["retry_of"] is None

    run, seen = writer.watch(queued["id"])
    check_progress([queued, *seen])
    assert set(run) == RUN_FIELDS
    assert (run["status"], run["step"], run["percent"]) == ("succeeded", "finalize", 100), run
    assert run["error"] is None
    assert run["reservation_id"] == queued["reservation_id"]
    assert run["created_at"] <= run["started_at"] <= run["finished_at"]
    assert 1 <= run["credits_committed"] <= HOLD

    draft = writer.draft(started["id"])
    assert draft["status"] == "reviewing"
    assert draft["version"] == 1
    assert draft["run_id"] == run["id"]
    assert draft["rejection_reason"] is None
    content = draft["content"]

    # Its prose is the handbook's own sentences (the offline writer is extractive).
    source_text = flat(HANDBOOK).casefold()
    written = [s for p in paragraphs(content) for s in sentences(p)]
    assert len(written) >= 6, content
    for sentence in written:
        for connective in CONNECTIVES:
            sentence = sentence.removeprefix(connective)
        assert sentence.casefold() in source_text, sentence
    assert "<script" not in content

    # Citations: the handbook is the tenant's own file, so they are in the provenance alone,
    # numbered in order of first use, each with the passage citing it; the text has no marker.
    provenance = draft["provenance"]
    sources = provenance["sources"]
    assert sources, provenance
    numbers = [source["number"] for source in sources]
    assert numbers == list(range(1, len(sources) + 1))
    for source in sources:
        assert source["document_id"] == handbook["id"]
        assert source["document_name"] == "Fernleaf handbook.md"
        assert source["heading"].startswith("Fernleaf Smart Irrigation Controller")
        assert (source["url"], source["published_as"]) == (None, None)
    assert {s["chunk_id"] for s in sources} <= chunk_ids_of(settings, handbook["id"])
    text = flat(BeautifulSoup(content, "html.parser").get_text())
    assert not re.search(r"\[\d+\]", text)
    assert "<sup" not in content and "source-" not in content
    assert "handbook.md" not in content.casefold()
    citations = provenance["citations"]
    assert list(dict.fromkeys(n for c in citations for n in c["sources"])) == numbers
    for citation in citations:
        assert citation["text"] in text, citation

    # Provenance: who wrote it, from what, section by section.
    assert provenance["writer"] == provenance["provider"] == "offline"
    assert provenance["model"] == "offline-extractive-1"
    assert provenance["prompt_version"]
    assert provenance["run_id"] == run["id"]
    assert "offline extractive writer" in provenance["note"]
    usage = provenance["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    tokens = usage["input_tokens"] + usage["output_tokens"]
    assert run["credits_committed"] == min(HOLD, -(-tokens // 1000))
    headings = re.findall(r"<h2 id=\"[^\"]*\">([^<]*)</h2>", content)
    assert "Sources" not in headings
    sections = provenance["sections"]
    assert [s["heading"] for s in sections] == ["Introduction", *headings]
    assert {c["section"] for c in citations} <= {s["heading"] for s in sections}
    assert sections[-1]["heading"] == "Key takeaways"
    for section in sections:
        assert section["chunk_ids"], section
        assert section["document_ids"] == [handbook["id"]]
        # What it was written from: the query and the passages, with their scores.
        assert section["query"].startswith(section["heading"]) or section["query"].startswith(
            topic
        ), section
        assert section["passages"], section
        for passage in section["passages"]:
            assert passage["document_id"] == handbook["id"]
            assert 0 < passage["score"] < 1
        assert set(section["chunk_ids"]) <= {p["chunk_id"] for p in section["passages"]}
    # Each section from the passage under its own heading.
    for section in sections[1:]:
        if section["heading"] != "Key takeaways":
            assert (
                section["passages"][0]["heading"].casefold().endswith(section["heading"].casefold())
            ), section

    # SEO: metadata within bounds and led by the first keyword, a score with its breakdown.
    meta = draft["seo_meta"]
    assert 0 < len(meta["seo_title"]) <= 60
    assert 0 < len(meta["meta_description"]) <= 160
    assert SLUG.fullmatch(meta["slug"]), meta["slug"]
    assert meta["focus_keywords"][0] == "smart irrigation"
    assert 1 <= len(meta["focus_keywords"]) <= 5
    assert set(keywords) <= set(meta["focus_keywords"])
    assert 0 <= draft["seo_score"] <= 100
    breakdown = meta["score_breakdown"]
    assert breakdown["total"] == draft["seo_score"] == provenance["seo_score_at_generation"]
    assert {check["id"] for check in breakdown["checks"]} == SEO_CHECKS
    assert sum(check["points"] for check in breakdown["checks"]) == breakdown["total"]
    assert draft["excerpt"] and len(draft["excerpt"]) <= 300
    for sentence in sentences(draft["excerpt"]):
        assert sentence.casefold() in source_text, sentence
    assert draft["title"] != topic and "Smart Irrigation Scheduling" in draft["title"]

    # One revision, by the AI, holding what the draft holds.
    versions = writer.ok("drafts.listVersions", {"id": draft["id"]}, role="member")
    assert versions["total"] == 1
    (version,) = versions["data"]
    assert (version["version"], version["author_type"], version["author_id"]) == (1, "ai", None)
    assert version["change_summary"] == "Generated by the offline writer"
    stored = writer.ok("drafts.getVersion", {"id": draft["id"], "version": 1}, role="member")
    assert stored["content"] == content
    assert stored["provenance"] == provenance
    assert stored["seo_meta"] == meta

    # The handbook was used once.
    used = writer.ok("documents.getById", {"id": handbook["id"]}, role="member")["usage"]
    assert used["generationCount"] == 1
    assert used["lastUsedAt"] is not None

    # Credits: one hold under the key, committed at what the run says it cost.
    held = blog_reservations(settings, writer.tenant_id)
    assert held == [
        {
            "id": run["reservation_id"],
            "key": key,
            "status": "committed",
            "amount": HOLD,
            "committed_amount": run["credits_committed"],
        }
    ]
    assert available_credits(settings, writer.tenant_id) == before - run["credits_committed"]


def test_progress_is_visible_to_members_while_it_runs(writer):
    writer.ingest("Fernleaf handbook.md", HANDBOOK)
    started = writer.start(topic="Watering schedules", keywords=["irrigation"])
    first = writer.get_run(started["run"]["id"], role="member")
    assert first["status"] in ("queued", "running", "succeeded")
    run, seen = writer.watch(started["run"]["id"])
    check_progress([started["run"], first, *seen])
    assert run["status"] == "succeeded"
    # Each role reads the same run.
    for role in ("member", "editor", "admin"):
        assert writer.get_run(run["id"], role=role) == run


# --- what an article is written from ----------------------------------------------------------


@pytest.mark.own_org
def test_document_ids_restrict_the_sources(writer):
    bees = writer.ingest("Beekeeping.md", BEEKEEPING)
    bread = writer.ingest("Sourdough.md", SOURDOUGH)
    topic = {"topic": "Cooking and baking with honey", "keywords": ["honey"]}

    # Both documents speak of honey; unrestricted, the article stays on its topic: the
    # sourdough notes bake with honey, the beekeeping guide's honey falls below the relative cut.
    run, draft = writer.generate(**topic)
    assert run["status"] == "succeeded", run
    assert cited_documents(draft) == {bread["id"]}

    # documentIds=[beekeeping]: only the beekeeping guide.
    run, draft = writer.generate(**topic, documentIds=[bees["id"]])
    assert run["status"] == "succeeded", run
    assert cited_documents(draft) == {bees["id"]}
    assert "starter" not in draft["content"].casefold()
    usage = {
        name: writer.ok("documents.getById", {"id": d["id"]})["usage"]["generationCount"]
        for name, d in (("bees", bees), ("bread", bread))
    }
    assert usage == {"bees": 1, "bread": 1}


@pytest.mark.own_org
def test_chosen_documents_ground_the_article_even_without_a_matching_word(writer):
    writer.ingest("Beekeeping.md", BEEKEEPING)
    bread = writer.ingest("Sourdough.md", SOURDOUGH)
    run, draft = writer.generate(topic="Beehive placement", documentIds=[bread["id"]])
    assert run["status"] == "succeeded", run
    assert cited_documents(draft) == {bread["id"]}


def test_the_primary_document_is_always_considered(writer):
    bees = writer.ingest("Beekeeping.md", BEEKEEPING)
    bread = writer.ingest("Sourdough.md", SOURDOUGH)
    writer.make_primary(bees["id"])

    # documentIds names the sourdough notes; the primary document matches the topic: cited too.
    run, draft = writer.generate(
        topic="Harvesting honey", keywords=["honey"], documentIds=[bread["id"]]
    )
    assert run["status"] == "succeeded", run
    assert cited_documents(draft) == {bees["id"], bread["id"]}
    assert "harvest honey" in draft["content"].casefold()  # the beekeeping guide's own words

    # A primary document that does not match the topic is not dragged in.
    run, draft = writer.generate(
        topic="Feeding a sourdough starter", keywords=["starter"], documentIds=[bread["id"]]
    )
    assert run["status"] == "succeeded", run
    assert cited_documents(draft) == {bread["id"]}


# --- idempotency ------------------------------------------------------------------------------


@pytest.mark.own_org
def test_the_same_idempotency_key_is_the_same_draft_and_run_and_one_hold(writer, settings):
    handbook = writer.ingest("Fernleaf handbook.md", HANDBOOK)
    request = {"topic": "Soil moisture sensors", "keywords": ["sensor"], "idempotencyKey": "k-1"}
    first = writer.start(**request)
    again = writer.start(**request)
    assert (again["id"], again["run"]["id"]) == (first["id"], first["run"]["id"])
    assert again["run"]["reservation_id"] == first["run"]["reservation_id"]
    run = writer.wait(first["run"]["id"])
    assert run["status"] == "succeeded"

    # After the run too: the same draft (now in review) and the same finished run.
    late = writer.start(**request)
    assert (late["id"], late["status"], late["version"]) == (first["id"], "reviewing", 1)
    assert late["run"] == run
    assert len(blog_reservations(settings, writer.tenant_id)) == 1
    assert writer.ok("drafts.list")["total"] == 1
    versions = writer.ok("drafts.listVersions", {"id": first["id"]})
    assert versions["total"] == 1

    # Another request under the key is 409, and changes nothing.
    for change in (
        {"topic": "Something else"},
        {"keywords": ["sensors", "soil"]},
        {"keywords": []},
        {"contentInstructions": "Shorter, please."},
        {"documentIds": [handbook["id"]]},
    ):
        body = problem(writer.blog(**{**request, **change}), 409, "CONFLICT")
        assert "k-1" in body["detail"]
    assert writer.ok("drafts.list")["total"] == 1
    assert len(blog_reservations(settings, writer.tenant_id)) == 1


@pytest.mark.own_org
def test_racing_requests_with_one_key_make_one_run(writer, settings):
    writer.ingest("Fernleaf handbook.md", HANDBOOK)
    request = {"topic": "Troubleshooting Wi-Fi", "idempotencyKey": f"race-{uuid.uuid4()}"}
    with ThreadPoolExecutor(max_workers=4) as pool:
        responses = list(pool.map(lambda _: writer.blog(**request), range(4)))
    assert [r.status_code for r in responses] == [200] * 4, [r.text for r in responses]
    assert len({(r.json()["id"], r.json()["run"]["id"]) for r in responses}) == 1
    run = writer.wait(responses[0].json()["run"]["id"])
    assert run["status"] == "succeeded"
    assert len(blog_reservations(settings, writer.tenant_id)) == 1
    assert writer.ok("drafts.list")["total"] == 1


@pytest.mark.own_org
def test_without_a_key_each_call_is_a_new_article(writer, settings):
    writer.ingest("Fernleaf handbook.md", HANDBOOK)
    first = writer.start(topic="Plans and pricing")
    second = writer.start(topic="Plans and pricing")
    assert first["id"] != second["id"]
    assert first["run"]["id"] != second["run"]["id"]
    for started in (first, second):
        run = writer.wait(started["run"]["id"])
        assert run["status"] == "succeeded"
    held = blog_reservations(settings, writer.tenant_id)
    assert len(held) == 2
    assert all(r["key"].startswith("run:") for r in held)
    assert {r["status"] for r in held} == {"committed"}
    assert writer.ok("drafts.list", {"status": "reviewing"})["total"] == 2


# --- failures ---------------------------------------------------------------------------------


def check_no_sources(writer: Writer, settings, documents: list[dict[str, Any]]) -> None:
    before = available_credits(settings, writer.tenant_id)
    started = writer.start(topic="Quantum chromodynamics on a lattice", keywords=["gluon"])
    run, seen = writer.watch(started["run"]["id"])
    check_progress(seen)
    assert run["status"] == "failed", run
    assert run["step"] == "retrieve"
    assert run["error"]["code"] == "NO_SOURCES"
    assert run["error"]["retryable"] is False
    assert run["error"]["message"]
    assert run["credits_committed"] is None
    assert run["finished_at"] is not None

    draft = writer.draft(started["id"])
    assert draft["status"] == "rejected"
    assert draft["rejection_reason"] == f"Generation failed: {run['error']['message']}"
    assert draft["version"] == 0
    assert writer.ok("drafts.listVersions", {"id": draft["id"]})["total"] == 0

    assert [r["status"] for r in blog_reservations(settings, writer.tenant_id)] == ["released"]
    assert available_credits(settings, writer.tenant_id) == before
    for document in documents:
        usage = writer.ok("documents.getById", {"id": document["id"]})["usage"]
        assert usage["generationCount"] == 0


@pytest.mark.own_org
def test_no_documents_at_all_fails_the_run_with_no_sources(writer, settings):
    check_no_sources(writer, settings, [])


@pytest.mark.own_org
def test_documents_that_do_not_match_fail_the_run_with_no_sources(writer, settings):
    documents = [writer.ingest("Beekeeping.md", BEEKEEPING)]
    writer.make_primary(documents[0]["id"])
    check_no_sources(writer, settings, documents)


@pytest.mark.own_org
def test_too_few_credits_is_402_and_creates_nothing(writer, settings):
    writer.ingest("Fernleaf handbook.md", HANDBOOK)
    hold_all_but(settings, writer.tenant_id, left=HOLD - 1)
    body = problem(
        writer.blog(topic="Installation", idempotencyKey="short"), 402, "PAYMENT_REQUIRED"
    )
    assert f"{HOLD} credits" in body["detail"] and f"{HOLD - 1} are available" in body["detail"]
    assert writer.ok("drafts.list")["total"] == 0
    (only,) = blog_reservations(settings, writer.tenant_id)  # hold_all_but's own
    assert only["key"] != "short"
    assert available_credits(settings, writer.tenant_id) == HOLD - 1


@pytest.mark.own_org
def test_exactly_the_hold_is_enough(writer, settings):
    writer.ingest("Fernleaf handbook.md", HANDBOOK)
    hold_all_but(settings, writer.tenant_id, left=HOLD)
    run, draft = writer.generate(topic="Installation")
    assert run["status"] == "succeeded", run
    assert draft["status"] == "reviewing"
    assert available_credits(settings, writer.tenant_id) == HOLD - run["credits_committed"]


# --- bounds -----------------------------------------------------------------------------------


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"topic": MISSING}, "topic"),
        ({"topic": None}, "topic"),
        ({"topic": ""}, "topic"),
        ({"topic": "t" * 501}, "topic"),
        ({"topic": 42}, "topic"),
        ({"keywords": [f"k{i}" for i in range(21)]}, "keywords"),
        ({"keywords": "irrigation"}, "keywords"),
        ({"keywords": ["irrigation", "k" * 101]}, "keywords"),
        ({"keywords": ["irrigation", 7]}, "keywords"),
        ({"contentInstructions": "c" * 5001}, "contentInstructions"),
        ({"documentIds": [str(uuid.uuid4()) for _ in range(51)]}, "documentIds"),
        ({"documentIds": ["not-a-uuid"]}, "documentIds"),
        ({"idempotencyKey": ""}, "idempotencyKey"),
        ({"idempotencyKey": "k" * 256}, "idempotencyKey"),
        ({"unknownField": 1}, "unknownField"),
    ],
)
def test_blog_refuses_out_of_bounds_input(writer, settings, change, field):
    body = {k: v for k, v in {"topic": "Irrigation", **change}.items() if v is not MISSING}
    problem_body = problem(writer.blog(**body), 400, "BAD_REQUEST")
    assert any(e["path"].split(".")[0] == field for e in problem_body["errors"]), problem_body
    assert writer.ok("drafts.list")["total"] == 0


@pytest.mark.own_org
def test_blog_accepts_its_bounds(writer, settings):
    writer.ingest("Fernleaf handbook.md", HANDBOOK)
    documents = [writer.ingest(f"Copy {i}.md", HANDBOOK + f"\nCopy {i}.\n") for i in range(2)]
    started = writer.start(
        topic="irrigation " + "x" * 489,
        keywords=[f"irrigation {i}" for i in range(19)] + ["k" * 100],
        contentInstructions="c" * 5000,
        documentIds=[d["id"] for d in documents] * 25,
        idempotencyKey="k" * 255,
    )
    assert len(started["title"]) == 500
    run = writer.wait(started["run"]["id"])
    assert run["status"] == "succeeded", run
    assert blog_reservations(settings, writer.tenant_id)[0]["key"] == "k" * 255


@pytest.mark.own_org
def test_documents_that_cannot_ground_an_article_are_refused(writer, other, settings):
    ready = writer.ingest("Fernleaf handbook.md", HANDBOOK)
    pending = writer.docs.create("Later.pdf")
    archived = writer.ingest("Old handbook.md", HANDBOOK + "\nThe first edition.\n")
    writer.ok("documents.archive", {"id": archived["id"]}, role="editor")
    deleted = writer.ingest("Gone.md", BEEKEEPING)
    writer.ok("documents.delete", {"id": deleted["id"]})
    theirs = other.ingest("Theirs.md", SOURDOUGH)

    for document, state in ((pending, "pending"), (archived, "archived")):
        body = problem(
            writer.blog(topic="Irrigation", documentIds=[ready["id"], document["id"]]),
            400,
            "BAD_REQUEST",
        )
        assert body["errors"] == [{"path": "documentIds.1", "message": f"is {state}, not ready"}]
    for document_id in (str(uuid.uuid4()), deleted["id"], theirs["id"]):
        body = problem(writer.blog(topic="Irrigation", documentIds=[document_id]), 404, "NOT_FOUND")
        assert document_id in body["detail"]
    assert writer.ok("drafts.list")["total"] == 0
    assert blog_reservations(settings, writer.tenant_id) == []


def test_get_run_of_a_malformed_or_unknown_id(writer):
    problem(writer.request("generation.getRun", {"id": "not-a-uuid"}), 400, "BAD_REQUEST")
    problem(writer.request("generation.getRun", {"id": str(uuid.uuid4())}), 404, "NOT_FOUND")


# --- roles and tenancy ------------------------------------------------------------------------


@pytest.mark.own_org
def test_roles(writer, call, org):
    writer.ingest("Fernleaf handbook.md", HANDBOOK)
    problem(writer.blog(role="member", topic="Installation"), 403, "FORBIDDEN")
    assert writer.ok("drafts.list")["total"] == 0
    by_admin = writer.start(topic="Installation")
    by_editor = writer.blog(role="editor", topic="Installation")
    assert by_editor.status_code == 200, by_editor.text
    for started in (by_admin, by_editor.json()):
        run = writer.wait(started["run"]["id"])  # as a member
        assert run["status"] == "succeeded"

    problem(call("generation.blog", {"topic": "Installation"}, org=org), 401, "UNAUTHORIZED")
    problem(call("generation.getRun", {"id": by_admin["run"]["id"]}, org=org), 401, "UNAUTHORIZED")


@pytest.mark.own_org
def test_a_second_tenant_sees_and_uses_nothing_of_the_first(writer, other, settings):
    handbook = writer.ingest("Fernleaf handbook.md", HANDBOOK)
    started = writer.start(topic="Installation", idempotencyKey="shared-key")
    run = writer.wait(started["run"]["id"])

    problem(other.request("generation.getRun", {"id": run["id"]}), 404, "NOT_FOUND")
    problem(other.request("drafts.getById", {"id": started["id"]}), 404, "NOT_FOUND")
    problem(other.request("drafts.delete", {"id": started["id"]}), 404, "NOT_FOUND")
    problem(other.blog(topic="Installation", documentIds=[handbook["id"]]), 404, "NOT_FOUND")
    assert other.ok("drafts.list")["total"] == 0

    # Its own key is its own: the same key (with another request) is a new article there.
    other.ingest("Sourdough.md", SOURDOUGH)
    theirs = other.start(topic="Sourdough starter", idempotencyKey="shared-key")
    assert theirs["id"] != started["id"]
    their_run, their_draft = other.wait(theirs["run"]["id"]), other.draft(theirs["id"])
    assert their_run["status"] == "succeeded"
    assert "Fernleaf" not in their_draft["content"]
    assert writer.get_run(run["id"]) == run
    assert writer.draft(started["id"])["status"] == "reviewing"
    usage = writer.ok("documents.getById", {"id": handbook["id"]})["usage"]
    assert usage["generationCount"] == 1
    assert len(blog_reservations(settings, other.tenant_id)) == 1


# --- deleting the draft -----------------------------------------------------------------------


@pytest.mark.own_org
def test_deleting_the_draft_before_the_run_starts_cancels_it_and_releases_the_hold(
    writer, settings
):
    """Deterministic: the hold, the draft and the queued run are made as generation.blog makes
    them, and the draft deleted, in one transaction that starts no workflow; the service's
    reconciler then starts the run's workflow, which can only find its draft gone."""
    writer.ingest("Fernleaf handbook.md", HANDBOOK)
    before = available_credits(settings, writer.tenant_id)
    run_id = start_for_a_deleted_draft(settings, writer.tenant_id, "Installation")

    run, seen = writer.watch(run_id)
    check_progress(seen)
    assert run["status"] == "cancelled", run
    assert run["error"]["code"] == "CANCELLED"
    assert run["error"]["retryable"] is False
    assert run["credits_committed"] is None
    assert run["finished_at"] is not None
    problem(writer.request("drafts.getById", {"id": run["draft_id"]}), 404, "NOT_FOUND")
    (held,) = blog_reservations(settings, writer.tenant_id)
    assert (held["id"], held["amount"], held["status"]) == (run["reservation_id"], HOLD, "released")
    assert available_credits(settings, writer.tenant_id) == before
    assert writer.ok("drafts.list")["total"] == 0


@pytest.mark.own_org
def test_deleting_the_draft_right_after_asking_stops_or_outlives_the_run(writer, settings):
    """Over the API the delete races the (fast) pipeline; whichever wins, the run ends
    cancelled with the hold released, or succeeded with the cost committed once, and the
    draft stays deleted."""
    writer.ingest("Fernleaf handbook.md", HANDBOOK)
    before = available_credits(settings, writer.tenant_id)
    started = writer.start(topic="Installation")
    deleted = writer.request("drafts.delete", {"id": started["id"]})
    assert deleted.status_code in (200, 204), deleted.text

    run = writer.wait(started["run"]["id"])
    (held,) = blog_reservations(settings, writer.tenant_id)
    if run["status"] == "cancelled":
        assert run["error"]["code"] == "CANCELLED"
        assert run["credits_committed"] is None
        assert held["status"] == "released"
        assert available_credits(settings, writer.tenant_id) == before
    else:
        assert run["status"] == "succeeded", run
        assert held["status"] == "committed"
        assert held["committed_amount"] == run["credits_committed"]
        assert available_credits(settings, writer.tenant_id) == before - run["credits_committed"]
    problem(writer.request("drafts.getById", {"id": started["id"]}), 404, "NOT_FOUND")
    assert writer.ok("drafts.list")["total"] == 0


# --- markup in the sources --------------------------------------------------------------------


@pytest.mark.own_org
def test_markup_quoted_in_a_document_reaches_the_draft_as_inert_text(writer):
    notes = writer.ingest("Widget form notes.md", MARKUP_NOTES)
    content = writer.ok("documents.getContent", {"id": notes["id"]})["content"]
    assert SCRIPT in content and IMG in content  # the document really holds the markup

    run, draft = writer.generate(topic="Widget form input testing", keywords=["widget form"])
    assert run["status"] == "succeeded", run
    html = draft["content"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x" in html
    soup = BeautifulSoup(html, "html.parser")
    assert soup.find("script") is None and soup.find("img") is None
    assert not any(name.startswith("on") for tag in soup.find_all(True) for name in tag.attrs)
    assert SCRIPT in soup.get_text()  # read as text, the reader sees what the document says
    # The excerpt and the SEO metadata are plain text (kit/text.py): not escaped, and without
    # anything that reads as a tag, the quoted markup included; the words around it stay.
    for text in (draft["excerpt"], draft["seo_meta"]["meta_description"]):
        assert "&lt;" not in text and "&amp;" not in text, text
        assert "<script" not in text and "<img" not in text, text
    assert "Testers paste" in draft["excerpt"]
