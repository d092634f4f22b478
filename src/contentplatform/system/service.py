"""system.status: each component's state from passive signals, cached for a few seconds.

Nothing here calls a provider: the language model, payments, storage, the identity provider,
search (the embeddings server) and mail are judged by the last outcomes of the real calls the
service made (kit/health.py, recorded at those calls). Two signals are read here, as they cost
nothing outside: the database (one `SELECT 1` per computed answer: it is ours) and the durable
queues' lag (the oldest workflow waiting on a queue past its due time, from DBOS's tables).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from dbos import DBOS
from sqlalchemy import text

from contentplatform.core.runtime import Runtime
from contentplatform.kit import health
from contentplatform.mail import smtp
from contentplatform.system.schemas import ComponentStatus, Level, SystemStatus

log = logging.getLogger(__name__)

CACHE_SCOPE = "system:status"
CACHE_SECONDS = 15
# Components judged by the outcomes of real calls (kit/health.py names).
BY_OUTCOMES = ("search", "storage", "llm", "identity_provider", "payments", "mail")
# A component failing with no success for this long is an outage, not a degradation.
OUTAGE_AFTER = timedelta(minutes=5)
# Queue lag: work waiting past its due time this long is degraded, this long an outage.
LAG_DEGRADED = timedelta(minutes=1)
LAG_OUTAGE = timedelta(minutes=15)
QUEUE_SAMPLE = 100
PROBE_SECONDS = 3
_RANK: dict[Level, int] = {"operational": 0, "degraded": 1, "outage": 2}
# Ours: when one of these is out, so is the service. Another's outage degrades it.
CORE = {"api", "database", "workers"}


async def status(current: Runtime, *, workers_here: bool) -> SystemStatus:
    """The status, computed at most once per CACHE_SECONDS (per cache: shared with Redis)."""

    async def produce() -> str:
        return (await compute(current, workers_here=workers_here)).model_dump_json()

    text_ = await current.cache.get_or_set(CACHE_SCOPE, "status", CACHE_SECONDS, produce)
    return SystemStatus.model_validate_json(text_)


async def compute(current: Runtime, *, workers_here: bool) -> SystemStatus:
    health.share(current.settings.redis_url, current.settings.redis_prefix)
    now = datetime.now(UTC)
    components = [
        ComponentStatus(name="api", status="operational", checked_at=now),
        await _database(current, now),
        await _workers(now) if workers_here else _unseen("workers"),
    ]
    seen = await health.outcomes(list(BY_OUTCOMES))
    for name in BY_OUTCOMES:
        components.append(_judged(name, seen[name], now))
    if smtp.target(current.settings) is None:
        # Mail is not configured: messages wait, queued, until it is.
        components[-1] = ComponentStatus(name="mail", status="outage", checked_at=now)
    return SystemStatus(status=_overall(components), components=components, updated_at=now)


def _unseen(name: str) -> ComponentStatus:
    return ComponentStatus(name=name, status="operational", checked_at=None)


async def _probe(check: Callable[[], Awaitable[object]]) -> bool:
    try:
        await asyncio.wait_for(check(), timeout=PROBE_SECONDS)
    except Exception as error:
        log.warning("status check failed: %s", type(error).__name__)
        return False
    return True


async def _database(current: Runtime, now: datetime) -> ComponentStatus:
    async def select_one() -> None:
        async with current.db.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    ok = await _probe(select_one)
    return ComponentStatus(
        name="database", status="operational" if ok else "outage", checked_at=now
    )


async def _workers(now: datetime) -> ComponentStatus:
    """The durable queues' lag: how long the longest-waiting due workflow has waited."""
    waiting: list[tuple[int | None, int | None]] = []

    async def oldest() -> None:
        found = await DBOS.list_queued_workflows_async(
            status="ENQUEUED", limit=QUEUE_SAMPLE, load_input=False, load_output=False
        )
        waiting.extend((workflow.created_at, workflow.delay_until_epoch_ms) for workflow in found)

    if not await _probe(oldest):
        return ComponentStatus(name="workers", status="outage", checked_at=now)
    return ComponentStatus(name="workers", status=lag_level(now, waiting), checked_at=now)


def lag_level(now: datetime, waiting: list[tuple[int | None, int | None]]) -> Level:
    """The queues' state from the workflows waiting on them, each (enqueued at, delayed until)
    in epoch ms: how long the longest-waiting one has waited since it was due (a delayed
    retry is due at its delay's end, not before)."""
    due = [max(created or 0, delayed or 0) for created, delayed in waiting]
    if not due:
        return "operational"
    lag = now - datetime.fromtimestamp(min(due) / 1000, UTC)
    return "outage" if lag >= LAG_OUTAGE else "degraded" if lag >= LAG_DEGRADED else "operational"


def _judged(name: str, seen: health.Outcomes, now: datetime) -> ComponentStatus:
    """Its last outcome: a success is operational; a failure degraded, and an outage once it
    has been failing (no success since) for OUTAGE_AFTER. Never used: operational, checked_at
    null."""
    moments = [t for t in (seen.last_ok, seen.last_failure) if t is not None]
    level: Level = "operational"
    if seen.last_failure is not None and (seen.last_ok is None or seen.last_failure > seen.last_ok):
        failing = seen.failing_since or seen.last_failure
        level = "outage" if now - failing >= OUTAGE_AFTER else "degraded"
    return ComponentStatus(name=name, status=level, checked_at=max(moments, default=None))


def _overall(components: list[ComponentStatus]) -> Level:
    worst: Level = "operational"
    for component in components:
        level = component.status
        if level == "outage" and component.name not in CORE:
            level = "degraded"  # the service still answers; one capability is down
        if _RANK[level] > _RANK[worst]:
            worst = level
    return worst
