"""What runs once a unit of work commits, and in which order."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from contentplatform.kit.db import Database, after_commit


def test_hooks_run_in_order_after_the_commit_and_last_ones_after_all(tmp_path):
    async def scenario() -> list[str]:
        found = Database(f"sqlite+aiosqlite:///{tmp_path / 'hooks.db'}")
        ran: list[str] = []

        def hook(name: str):
            async def record() -> None:
                ran.append(name)

            return record

        try:
            async with found.unit_of_work() as session:
                await session.execute(text("CREATE TABLE t (n INTEGER)"))
                # A cache's retirement noted at the first write, before the access change...
                after_commit(session, hook("cache retired"), last=True)
                after_commit(session, hook("access retired"))
                after_commit(session, hook("event counted"))
                assert ran == []
            return ran
        finally:
            await found.dispose()

    # ...still waits for it: what closes a window of access runs first.
    assert asyncio.run(scenario()) == ["access retired", "event counted", "cache retired"]


def test_a_rolled_back_unit_runs_no_hook(tmp_path):
    async def scenario() -> list[str]:
        found = Database(f"sqlite+aiosqlite:///{tmp_path / 'hooks.db'}")
        ran: list[str] = []

        async def record() -> None:
            ran.append("ran")

        try:
            with pytest.raises(RuntimeError):
                async with found.unit_of_work() as session:
                    await session.execute(text("CREATE TABLE t (n INTEGER)"))
                    after_commit(session, record)
                    after_commit(session, record, last=True)
                    raise RuntimeError("the block failed")
            async with found.unit_of_work() as session:
                await session.execute(text("SELECT 1"))
            return ran
        finally:
            await found.dispose()

    assert asyncio.run(scenario()) == []
