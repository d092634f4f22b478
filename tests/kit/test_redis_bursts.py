"""A burst of requests on one process, with Redis: more at once than redis-py's default pool
holds (100 connections, then an error) must wait for a connection, never fail. The rate limiter
takes one per check; a stream reader holds one while it blocks for the next event."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.kit.ratelimit import RateLimiter
from contentplatform.kit.streams import RedisStreamLog
from tests.support.database import run_on
from tests.support.orgs import new_tenant

BURST = 250


@pytest.fixture
def redis_url(settings: Settings) -> str:
    if not settings.redis_url:
        pytest.skip("no test Redis (CONTENTPLATFORM_TEST_REDIS_URL)")
    return settings.redis_url


def test_a_burst_of_rate_limit_checks_waits_for_connections(redis_url, settings):
    async def burst() -> None:
        limiter = RateLimiter(redis_url, settings.redis_prefix + f"burst-{uuid.uuid4()}:")
        try:
            await asyncio.gather(
                *(limiter.check("100000/minute", f"user:{n}") for n in range(BURST))
            )
        finally:
            await limiter.storage.reset()

    asyncio.run(burst())


def test_more_readers_than_the_default_pool_all_get_their_streams(redis_url, settings, server):
    async def readers(db: Database) -> None:
        tenant = await new_tenant(db)
        log = RedisStreamLog(
            redis_url,
            settings.redis_prefix,
            retention_seconds=60,
            poll_seconds=0.05,
            block_seconds=0.5,
        )
        try:
            names = [f"test:{uuid.uuid4()}" for _ in range(BURST)]
            for name in names:
                await log.create(name, tenant)

            async def read(name: str) -> int:
                return len([event async for event in await log.read(name, tenant)])

            reading = [asyncio.create_task(read(name)) for name in names]
            await asyncio.sleep(0.2)  # every reader is blocked on its stream now
            for name in names:
                await log.append(name, tenant, "end", {}, terminal=True)
            async with asyncio.timeout(30):
                assert await asyncio.gather(*reading) == [1] * BURST
        finally:
            await log.close()

    run_on(settings, readers)
