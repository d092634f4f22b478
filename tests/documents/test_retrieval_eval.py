"""A slice of the retrieval bench (bench/retrieval.py) in CI: 15 of its questions over the
Markdown form of their CPython documentation topics, beside four large topics that share much of
their vocabulary (and repeat some of their sentences), asked through `chat.retrieve` as the bench
asks them. recall@5 and MRR must stay at or above what the ranking achieved when the slice was
written, so a change that makes retrieval worse fails here; a change that makes it better
should raise the floors."""

from __future__ import annotations

from bench.retrieval_corpus import (
    Question,
    answerable,
    load_questions,
    normalize,
    parse_topic,
    to_markdown,
    topic_text,
)
from tests.documents.support import Docs
from tests.support.orgs import org_fixture

docs = org_fixture(Docs)

# Every 8th question of the bench: 15 questions on 15 topics.
SLICE = answerable(load_questions())[::8][:15]
# Large topics beside them: the statements, special methods, the type hierarchy, sequences.
DISTRACTORS = ("compound", "specialnames", "types", "typesseq")
LIMIT = 10
# What the ranking achieved on this slice when it was last raised (BM25 with the heading path
# weighted, on both databases): recall@5 15/15 on both, MRR 0.93 on SQLite (FTS5's bm25), 0.97 on
# PostgreSQL (ts_rank's candidates ranked again by BM25). The floors leave room for one question
# dropping out of the first five, or about one falling from first to second place, and no more.
# (Before issue 17's ranking: 15/15 and 0.90 on SQLite, 13/15 and 0.65 on PostgreSQL.)
RECALL_AT_5_FLOOR = 14 / 15
MRR_FLOOR = 0.88


def rank(contents: list[str], question: Question) -> int | None:
    """1-based position of the first chunk holding the answer sentence, None when none does."""
    wanted = normalize(question.answer)
    return next((n for n, c in enumerate(contents, 1) if wanted in normalize(c)), None)


def test_the_slice_is_what_the_bench_asks() -> None:
    assert len(SLICE) == 15
    assert len({q.topic for q in SLICE}) == 15
    for question in SLICE:
        # The answer is in its topic, but not the question copied: a user's words.
        assert normalize(question.answer) in normalize(topic_text(question.topic))
        assert normalize(question.question) not in normalize(question.answer)


def test_retrieval_stays_above_its_floor(docs: Docs) -> None:
    topics = sorted({q.topic for q in SLICE} | set(DISTRACTORS))
    submitted = [
        docs.submit(f"{topic}.md", to_markdown(parse_topic(topic_text(topic))))["id"]
        for topic in topics
    ]
    for document_id in submitted:
        assert docs.wait(document_id)["status"] == "ready"

    ranks: list[int | None] = []
    for question in SLICE:
        asked = {"query": question.question, "limit": LIMIT}
        found = docs.ok("chat.retrieve", asked, role="member")
        ranks.append(rank([hit["content"] for hit in found["data"]], question))

    recall_at_5 = sum(1 for r in ranks if r is not None and r <= 5) / len(ranks)
    mrr = sum(1 / r for r in ranks if r is not None) / len(ranks)
    missed = [(q.question, r) for q, r in zip(SLICE, ranks, strict=True) if r is None or r > 5]
    assert recall_at_5 >= RECALL_AT_5_FLOOR, (recall_at_5, mrr, missed)
    assert mrr >= MRR_FLOOR, (recall_at_5, mrr, ranks)
