"""Running async code against the suite's database from synchronous tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

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
