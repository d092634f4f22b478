"""The last outcomes of real calls to what the service depends on, for system.status.

`record(component, ok)` is called where a real call happens (an SMTP conversation, a model's
answer, a storage call, a payment provider's answer); nothing here probes anything. Each
process keeps its own outcomes; with Redis configured (`share(redis_url, prefix)`), each
outcome is written there too, and the status reads every process's from there. Kept per
component: when it last succeeded, when it last failed, and since when it has been failing
(the first failure after the last success).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import redis.asyncio as aioredis

log = logging.getLogger(__name__)


@dataclass
class Outcomes:
    last_ok: datetime | None = None
    last_failure: datetime | None = None
    failing_since: datetime | None = None

    def note(self, ok: bool, at: datetime) -> None:
        if ok:
            self.last_ok, self.failing_since = at, None
        else:
            self.last_failure = at
            self.failing_since = self.failing_since or at


@dataclass(frozen=True)
class _Shared:
    client: aioredis.Redis
    prefix: str
    # The loop the client's connections belong to. An outcome recorded on another thread's
    # loop (a worker's, a test's) is handed to it: a connection used from two loops at once
    # is undefined behaviour, and under uvloop it crashed the process.
    loop: asyncio.AbstractEventLoop


_local: dict[str, Outcomes] = {}
_shared: _Shared | None = None
_pending: set[asyncio.Task[None]] = set()
# Each component's last outcome written to Redis, and when (monotonic): the same outcome again
# is written at most every SHARE_EVERY_SECONDS, so a busy call site (every storage read) costs
# Redis a write now and then, not one per call. A status page reads it 15 s stale anyway.
_published: dict[str, tuple[bool, float]] = {}
SHARE_EVERY_SECONDS = 5.0


def share(redis_url: str | None, prefix: str) -> None:
    """Write outcomes to Redis too, and read every process's from there (once per process,
    from the event loop that serves it)."""
    global _shared
    if redis_url and _shared is None:
        client = aioredis.Redis.from_url(redis_url)
        _shared = _Shared(client, prefix + "health:", asyncio.get_running_loop())


def record(component: str, ok: bool) -> None:
    """Note the outcome of a real call to `component`, now."""
    now = datetime.now(UTC)
    _local.setdefault(component, Outcomes()).note(ok, now)
    if _shared is None:
        return
    last = _published.get(component)
    if last is not None and last[0] == ok and time.monotonic() - last[1] < SHARE_EVERY_SECONDS:
        return
    owner = _shared.loop
    if owner.is_closed() or not owner.is_running():
        return  # the serving loop is gone: kept in this process only
    _published[component] = (ok, time.monotonic())
    if _running_loop() is owner:
        _spawn(component, ok, now)
    else:
        owner.call_soon_threadsafe(_spawn, component, ok, now)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _spawn(component: str, ok: bool, at: datetime) -> None:
    task = asyncio.get_running_loop().create_task(_publish(component, ok, at))
    _pending.add(task)
    task.add_done_callback(_pending.discard)


async def _publish(component: str, ok: bool, at: datetime) -> None:
    assert _shared is not None
    client, prefix = _shared.client, _shared.prefix
    key, moment = f"{prefix}{component}", at.isoformat()
    try:
        async with client.pipeline(transaction=True) as pipe:
            if ok:
                pipe.hset(key, "ok", moment)
                pipe.hdel(key, "since")
            else:
                pipe.hset(key, "failure", moment)
                pipe.hsetnx(key, "since", moment)
            await pipe.execute()
    except aioredis.RedisError:
        log.warning("could not share the health of %s", component)


def _time(value: bytes | None) -> datetime | None:
    return datetime.fromisoformat(value.decode()) if value else None


async def outcomes(components: list[str]) -> dict[str, Outcomes]:
    """Each component's outcomes: this process's, merged with every process's in Redis when
    shared (an outcome Redis missed still counts here)."""
    own = {name: _local.get(name, Outcomes()) for name in components}
    if _shared is None or _running_loop() is not _shared.loop:
        return own
    client, prefix = _shared.client, _shared.prefix
    try:
        async with client.pipeline(transaction=False) as pipe:
            for name in components:
                pipe.hgetall(f"{prefix}{name}")
            stored = await pipe.execute()
    except aioredis.RedisError:
        return own  # this process's view rather than none
    return {
        name: _merged(
            own[name],
            Outcomes(_time(got.get(b"ok")), _time(got.get(b"failure")), _time(got.get(b"since"))),
        )
        for name, got in zip(components, stored, strict=True)
    }


def _merged(a: Outcomes, b: Outcomes) -> Outcomes:
    last_ok = _latest(a.last_ok, b.last_ok)
    last_failure = _latest(a.last_failure, b.last_failure)
    if last_failure is None or (last_ok is not None and last_ok >= last_failure):
        return Outcomes(last_ok, last_failure, None)
    # Failing now: since the earliest failure either saw after the last success.
    since = [s for s in (a.failing_since, b.failing_since) if s and (not last_ok or s > last_ok)]
    return Outcomes(last_ok, last_failure, min(since, default=last_failure))


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return max(a, b) if a is not None and b is not None else a or b


def forget() -> None:
    """This process's outcomes, forgotten (tests)."""
    _local.clear()
    _published.clear()
