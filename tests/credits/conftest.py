"""Credits tests run service functions on the suite's real database (SQLite or PostgreSQL).

`run(scenario)` runs `async def scenario(db)` on a fresh event loop with its own engine (an
engine's connections belong to the loop that opened them). Depending on `server` guarantees
the migrations ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from tests.support.servers import AppServer

Run = Callable[[Callable[[Database], Awaitable[Any]]], Any]


@pytest.fixture
def run(server: AppServer, settings: Settings) -> Run:
    def runner(scenario: Callable[[Database], Awaitable[Any]]) -> Any:
        async def main() -> Any:
            db = Database(settings.resolved_database_url)
            try:
                return await scenario(db)
            finally:
                await db.dispose()

        return asyncio.run(main())

    return runner
