"""A result's figures from its runs: the median of each score and lab metric, their spread (min
and max), the failed audits of the representative run (the one whose performance score is the
median, as Lighthouse CI picks it), the field data and Lighthouse version of the last run (the
Chrome UX Report's data is the same across runs: 28 days of real visits). Also what a result
is shown as."""

from __future__ import annotations

import statistics
from dataclasses import asdict
from typing import Any

from contentplatform.kit.db import utcnow
from contentplatform.seo.models import SeoPageSpeedResult
from contentplatform.seo.pagespeed import schemas
from contentplatform.seo.pagespeed.provider import LAB_AUDITS, SCORE_KEYS, Measurement

SCORES = tuple(SCORE_KEYS.values())
LAB = tuple(LAB_AUDITS)


def _median(values: list[float], key: str) -> float | None:
    if not values:
        return None
    middle = statistics.median(values)
    return round(middle, 4) if key == "cls" else round(middle)


def _figures(runs: list[dict[str, Any]], block: str, key: str) -> list[float]:
    return [run[block][key] for run in runs if run[block].get(key) is not None]


def _representative(runs: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [run for run in runs if run["scores"].get("performance") is not None]
    if not scored:
        return runs[-1]
    scored.sort(key=lambda run: run["scores"]["performance"])
    return scored[(len(scored) - 1) // 2]


def add_run(row: SeoPageSpeedResult, measured: Measurement) -> None:
    """One more run stored on the pending row; the row completed once it has all its runs."""
    row.runs = [*(row.runs or []), asdict(measured)]
    row.updated_at = utcnow()
    if len(row.runs) >= row.runs_wanted:
        complete(row)


def complete(row: SeoPageSpeedResult) -> None:
    runs: list[dict[str, Any]] = row.runs or []
    last, typical = runs[-1], _representative(runs)
    row.scores = {key: _median(_figures(runs, "scores", key), key) for key in SCORES}
    row.lab = {key: _median(_figures(runs, "lab", key), key) for key in LAB}
    spread: dict[str, dict[str, float | None]] = {}
    for block, keys in (("scores", SCORES), ("lab", LAB)):
        for key in keys:
            values = _figures(runs, block, key)
            spread[key] = {
                "min": min(values) if values else None,
                "max": max(values) if values else None,
            }
    row.spread = spread
    row.field = last["field"]
    row.failed_audits = typical["failed_audits"]
    row.lighthouse_version = last["lighthouse_version"]
    # Each run keeps its figures only: its audits and field data are the result's.
    row.runs = [
        {"scores": run["scores"], "lab": run["lab"], "fetched_at": run["fetched_at"]}
        for run in runs
    ]
    row.status = "completed"
    row.fetched_at = row.updated_at = utcnow()


def fail(row: SeoPageSpeedResult, code: str, message: str) -> None:
    """The measurement failed: runs made before the failure are kept, nothing else is."""
    row.status = "failed"
    row.error = {"code": code[:60], "message": message[:500]}
    row.fetched_at = row.updated_at = utcnow()


def record(row: SeoPageSpeedResult, page_id: Any = None) -> schemas.PageSpeedResult:
    completed = row.status == "completed"
    return schemas.PageSpeedResult(
        id=row.id,
        url=row.url,
        page_id=page_id,
        strategy=row.strategy,
        scores=schemas.Scores.model_validate(row.scores) if completed and row.scores else None,
        lab=schemas.LabMetrics.model_validate(row.lab) if completed and row.lab else None,
        field=schemas.FieldData.model_validate(row.field) if completed and row.field else None,
        failed_audits=[schemas.FailedAudit.model_validate(a) for a in row.failed_audits or []],
        runs=[
            schemas.RunFigures(
                scores=schemas.Scores.model_validate(run["scores"]),
                lab=schemas.LabMetrics.model_validate(run["lab"]),
                fetched_at=run.get("fetched_at"),
            )
            for run in row.runs or []
        ],
        spread=schemas.Spread.model_validate(row.spread) if completed and row.spread else None,
        lighthouse_version=row.lighthouse_version,
        error=schemas.ResultError.model_validate(row.error) if row.error else None,
        fetched_at=row.fetched_at or row.updated_at,
        sync_run_id=row.sync_run_id,
    )
