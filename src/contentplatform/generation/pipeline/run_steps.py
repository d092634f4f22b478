"""A run's record of its steps (`GenerationRun.steps`): plain functions on plain data; the
pipeline's steps save what they return.

Each step of the frozen definition has an entry on the run, then `score` and `finalize`, which
every run appends: pending -> running -> succeeded | failed, or waiting at a review gate; skipped
when disabled (or after `stopAfterStep`), cancelled when the run is. Tokens, model and credits of
a step are read from the run's recorded model calls (`usage`, each tagged with the step it was
made for), so a step run again after a crash counts its calls once.
"""

from __future__ import annotations

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
