"""What a run of a workflow definition keeps besides its article: each step's progress, and the
three steps that read the article rather than write it (fact check, internal links, images).
Plain functions on plain data; the workflow (workflows.py) checkpoints what they return.

Each step of the frozen definition has an entry on the run (`GenerationRun.steps`), then
`score` and `finalize`, which every run appends: pending -> running -> succeeded | failed, or
waiting at a review gate; skipped when disabled (or after `stopAfterStep`), cancelled when the
run is. Tokens, model and credits of a step are read from the run's recorded model calls
(`usage`, each tagged with the step it was made for), so a step run again after a crash counts
its calls once.
"""

from __future__ import annotations

import html as markup
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from contentplatform.credits import service as credits

APPENDED = (("score", "score", "Score"), ("finalize", "finalize", "Finalize"))
STEP_STATUSES = ("pending", "running", "waiting", "succeeded", "failed", "skipped", "cancelled")
ENDED = ("succeeded", "failed", "skipped", "cancelled")


def initial_steps(
    steps: Sequence[dict[str, Any]], *, skip: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """The progress of a run about to follow `steps` (a definition's, in order): every enabled
    step pending, the others (and the keys in `skip`) skipped; score and finalize appended."""
    skipped = set(skip)
    shown = [
        _entry(
            s["key"],
            s["type"],
            s.get("name") or s["type"],
            s.get("enabled", True) and s["key"] not in skipped,
        )
        for s in steps
    ]
    taken = {entry["key"] for entry in shown}
    for key, type_, name in APPENDED:
        shown.append(_entry(key if key not in taken else f"{key}-auto", type_, name, True))
    return shown


def _entry(key: str, type_: str, name: str, enabled: bool) -> dict[str, Any]:
    return {
        "key": key,
        "type": type_,
        "name": name,
        "status": "pending" if enabled else "skipped",
        "attempts": 0,
        "started_at": None,
        "finished_at": None,
        "output_summary": None,
        "error": None,
    }


def key_of(steps: Sequence[dict[str, Any]] | None, type_: str) -> str | None:
    """The key of the run's first step of `type_` (score and finalize included)."""
    return next((s["key"] for s in steps or () if s["type"] == type_), None)


def begin(steps: list[dict[str, Any]], key: str, now: datetime) -> list[dict[str, Any]]:
    """`key` is running (counted as an attempt when it was not), any other running step done."""
    moved = []
    for step in steps:
        step = dict(step)
        if step["key"] == key:
            if step["status"] not in ("running", "waiting"):
                step["attempts"] = int(step.get("attempts") or 0) + 1
                step["started_at"] = step["started_at"] or now.isoformat()
            step["status"] = "running"
        elif step["status"] in ("running", "waiting"):
            step["status"] = "succeeded"
            step["finished_at"] = now.isoformat()
        moved.append(step)
    return moved


def set_step(
    steps: list[dict[str, Any]], key: str, now: datetime | None = None, **fields: Any
) -> list[dict[str, Any]]:
    """The step `key` with `fields` set (its finished_at stamped when it ends at `now`)."""
    moved = []
    for step in steps:
        step = dict(step)
        if step["key"] == key:
            step.update(fields)
            if now is not None and step["status"] in ENDED:
                step["finished_at"] = now.isoformat()
        moved.append(step)
    return moved


def end(
    steps: list[dict[str, Any]], outcome: str, now: datetime, error: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The steps once the run ended: succeeded (the running one done, the rest skipped), failed
    (the running one failed with the error, the rest skipped) or cancelled (the running, waiting
    and pending ones cancelled)."""
    moved = []
    for step in steps:
        step = dict(step)
        if step["status"] in ("running", "waiting"):
            step["status"] = {"succeeded": "succeeded", "failed": "failed"}.get(
                outcome, "cancelled"
            )
            step["finished_at"] = now.isoformat()
            if outcome == "failed" and error is not None:
                step["error"] = {"code": error.get("code"), "message": error.get("message")}
        elif step["status"] == "pending":
            step["status"] = "cancelled" if outcome == "cancelled" else "skipped"
        moved.append(step)
    return moved


def running_key(steps: Sequence[dict[str, Any]] | None) -> str | None:
    return next((s["key"] for s in steps or () if s["status"] in ("running", "waiting")), None)


def step_usage(usage: dict[str, Any] | None, key: str) -> tuple[int, int, str | None]:
    """(input tokens, output tokens, model) of the model calls made for step `key`."""
    calls = [c for c in (usage or {}).values() if isinstance(c, dict) and c.get("step_key") == key]
    model = next((c.get("model") for c in reversed(calls) if c.get("model")), None)
    return (
        sum(int(c.get("input_tokens", 0)) for c in calls),
        sum(int(c.get("output_tokens", 0)) for c in calls),
        model,
    )


def step_credits(input_tokens: int, output_tokens: int) -> int:
    """What a step's calls price at (1 credit per started 1,000 tokens; 0 for none)."""
    return credits.tokens_charge(input_tokens + output_tokens)


# --- fact check ---------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)?", re.UNICODE)
_MARKER = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")
# Words that carry no claim of their own.
STOP_WORDS = """
a an and are as at be been but by can could did do does for from had has have he her his how i if
in into is it its may might more most must no not of on or our she should so such than that the
their them then there these they this those to too under up us was we were what when where which
while who why will with would you your also very just about over
"""
_STOP = frozenset(STOP_WORDS.split())


def _claim_words(text: str) -> set[str]:
    return {
        w
        for w in (m.group().lower() for m in _WORD.finditer(_MARKER.sub(" ", text)))
        if w not in _STOP and len(w) > 1
    }


def fact_check(
    citations: Sequence[dict[str, Any]], sources: dict[int, str], min_support: float
) -> dict[str, Any]:
    """Each cited sentence of the article held against the passages it cites: the share of its
    content words those passages hold (its support). A claim below `min_support`, or citing a
    number no passage has, is unsupported. Word overlap is a floor, not a reading: a claim it
    passes may still misstate its source, which is why a review gate can follow."""
    checked = 0
    unsupported: list[dict[str, Any]] = []
    for citation in citations:
        text = str(citation.get("text") or "")
        words = _claim_words(text)
        if not words:
            continue
        checked += 1
        refs = [int(n) for n in citation.get("sources") or []]
        cited = (
            set().union(*(_claim_words(sources[n]) for n in refs if n in sources))
            if refs
            else set()
        )
        support = len(words & cited) / len(words)
        if support < min_support:
            unsupported.append(
                {
                    "text": text[:500],
                    "section": citation.get("section"),
                    "sources": refs,
                    "support": round(support, 2),
                }
            )
    return {
        "checked": checked,
        "supported": checked - len(unsupported),
        "unsupported": unsupported,
        "min_support": min_support,
    }


# --- internal links -----------------------------------------------------------------------------

RELATED_HEADING = "Related reading"
RELATED_ANCHOR = "related-reading"
MIN_SHARED_WORDS = 1


def choose_links(
    about: str, candidates: Sequence[tuple[str, str]], limit: int, *, exclude_url: str | None = None
) -> list[tuple[str, str]]:
    """The `limit` candidates `(title, url)` whose titles share the most content words with
    `about` (the article's title, headings and keywords), at least one; each URL once."""
    wanted = _claim_words(about)
    scored: list[tuple[int, int, str, str]] = []
    seen: set[str] = set()
    for index, (title, url) in enumerate(candidates):
        if url in seen or url == exclude_url:
            continue
        seen.add(url)
        shared = len(_claim_words(title) & wanted)
        if shared >= MIN_SHARED_WORDS:
            scored.append((-shared, index, title, url))
    return [(title, url) for _, _, title, url in sorted(scored)[:limit]]


def related_block(links: Sequence[tuple[str, str]]) -> str:
    """The links as the article's "Related reading" section (escaped: titles are text)."""
    items = "".join(
        f'<li><a href="{markup.escape(url, quote=True)}">{markup.escape(title)}</a></li>'
        for title, url in links
    )
    return f'<h2 id="{RELATED_ANCHOR}">{RELATED_HEADING}</h2><ul>{items}</ul>'


def with_related(content: str, block: str, sources_marker: str) -> str:
    """`content` with the block before its sources list (at the end when it has none)."""
    at = content.find(sources_marker)
    if at < 0:
        return content + block
    return content[:at] + block + content[at:]


# --- images -------------------------------------------------------------------------------------


def rank_images(
    about: str, candidates: Sequence[dict[str, Any]], count: int
) -> list[dict[str, Any]]:
    """The `count` candidates ({id, title, alt_text, tags, ...}) that share the most words with
    `about`, newest first among equals; none that shares no word."""
    wanted = _claim_words(about)
    scored = []
    for index, candidate in enumerate(candidates):
        words = _claim_words(
            " ".join(
                [
                    candidate.get("title") or "",
                    candidate.get("alt_text") or "",
                    *candidate.get("tags", []),
                ]
            )
        )
        shared = len(words & wanted)
        if shared:
            scored.append((-shared, index, candidate))
    return [candidate for _, _, candidate in sorted(scored, key=lambda s: (s[0], s[1]))[:count]]
