"""Running async code against the suite's database from synchronous tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import Select

from contentplatform.config import Settings
from contentplatform.kit.db import Database


def run_on(settings: Settings, scenario: Callable[[Database], Awaitable[Any]]) -> Any:
    """Run `async def scenario(db)` on a fresh event loop with its own engine (an engine's
    connections belong to the loop that opened them)."""

    async def main() -> Any:
        db = Database(settings.resolved_database_url)
        try:
            return await scenario(db)
        finally:
            await db.dispose()

    return asyncio.run(main())


def select_all(settings: Settings, query: Select[Any]) -> list[Any]:
    """What `query` selects (the first column of each row: a model or a value), in a unit of
    work of its own (as `run_on`)."""

    async def scenario(db: Database) -> list[Any]:
        async with db.unit_of_work() as session:
            return list((await session.execute(query)).scalars())

    return run_on(settings, scenario)
