"""SQLite writers take turns inside the process instead of polling the file lock.

Each test makes its own SQLite file and turns SQLite's own busy wait off (busy_timeout 0), so a
writer that met another at the file lock would fail at once with "database is locked": what
keeps them apart here is the process's write turn (kit/db.py).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import OperationalError

from contentplatform.kit import db as kit_db
from contentplatform.kit.db import Database

# The time SQLite runs the statement at (seconds; julianday has millisecond resolution).
NOW = "(julianday('now') - 2440587.5) * 86400.0"


def database(path: Path) -> Database:
    found = Database(f"sqlite+aiosqlite:///{path / 'writes.db'}")

    @event.listens_for(found.engine.sync_engine, "connect")
    def no_busy_wait(dbapi_connection: Any, _: Any) -> None:
        dbapi_connection.execute("PRAGMA busy_timeout=0")

    return found


async def with_table(found: Database) -> None:
    async with found.engine.begin() as connection:
        await connection.execute(text("CREATE TABLE marks (n INTEGER, at REAL)"))


def test_concurrent_writers_all_commit_one_after_another(tmp_path):
    async def scenario() -> list[tuple[int, float]]:
        found = database(tmp_path)
        await with_table(found)
        try:

            async def writer(n: int) -> None:
                async with found.unit_of_work() as session:
                    # Reads before the first write take no turn...
                    await session.execute(text("SELECT count(*) FROM marks"))
                    await session.execute(text(f"INSERT INTO marks VALUES ({n}, {NOW})"))
                    # ...then the transaction holds the write lock across an await.
                    await asyncio.sleep(0.02)

            await asyncio.gather(*(writer(n) for n in range(16)))
            async with found.engine.connect() as connection:
                rows = await connection.execute(text("SELECT n, at FROM marks ORDER BY at"))
                return [(n, at) for n, at in rows]
        finally:
            await found.dispose()

    marks = asyncio.run(scenario())
    assert sorted(n for n, _ in marks) == list(range(16))
    # In turn: each began its write after the one before had committed (20 ms apart at least).
    gaps = [later - earlier for (_, earlier), (_, later) in itertools.pairwise(marks)]
    assert min(gaps) >= 0.015, gaps


def test_a_writer_waits_for_its_turn_no_longer_than_sqlite_would(tmp_path, monkeypatch):
    monkeypatch.setattr(kit_db, "SQLITE_WRITE_WAIT_SECONDS", 0.2)

    async def scenario() -> None:
        found = database(tmp_path)
        await with_table(found)
        try:

            async def holder() -> None:
                async with found.unit_of_work() as session:
                    await session.execute(text("INSERT INTO marks VALUES (1, 0)"))
                    await asyncio.sleep(1)

            async def latecomer() -> float:
                await asyncio.sleep(0.05)
                started = time.monotonic()
                with pytest.raises(OperationalError, match="database is locked"):
                    async with found.unit_of_work() as session:
                        await session.execute(text("INSERT INTO marks VALUES (2, 0)"))
                return time.monotonic() - started

            _, waited = await asyncio.gather(holder(), latecomer())
            # It waited for its turn, then gave up as SQLite would have.
            assert 0.15 < waited < 0.9
        finally:
            await found.dispose()

    asyncio.run(scenario())


def test_a_task_writing_on_a_second_connection_does_not_wait_for_itself(tmp_path):
    async def scenario() -> None:
        found = database(tmp_path)
        await with_table(found)
        try:
            async with found.unit_of_work() as outer:
                await outer.execute(text("INSERT INTO marks VALUES (1, 0)"))
                # Its own turn is taken: the nested write goes to SQLite, which refuses it at
                # once here (busy_timeout 0) instead of the task waiting on itself for ever.
                with pytest.raises(OperationalError, match="locked"):
                    async with found.unit_of_work() as inner:
                        await inner.execute(text("INSERT INTO marks VALUES (2, 0)"))
        finally:
            await found.dispose()

    asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def test_the_turn_is_given_back_after_a_rollback(tmp_path):
    async def scenario() -> int:
        found = database(tmp_path)
        await with_table(found)
        try:
            with pytest.raises(RuntimeError):
                async with found.unit_of_work() as session:
                    await session.execute(text("INSERT INTO marks VALUES (1, 0)"))
                    raise RuntimeError("the handler failed")
            async with found.unit_of_work() as session:
                await session.execute(text("INSERT INTO marks VALUES (2, 0)"))
            async with found.engine.connect() as connection:
                return int((await connection.execute(text("SELECT max(n) FROM marks"))).scalar())
        finally:
            await found.dispose()

    assert asyncio.run(asyncio.wait_for(scenario(), timeout=10)) == 2
