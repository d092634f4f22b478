"""Who hears about a run's progress: domains that start runs (jobs) follow them from here.

A watcher is called inside the transaction that changed the run (started, moved a step,
succeeded, failed or was cancelled), with the run row locked, so what it records commits or
rolls back with the run itself. Generation does not know its watchers; they register here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.generation.models import GenerationRun

RunWatcher = Callable[[AsyncSession, GenerationRun], Awaitable[None]]
_watchers: list[RunWatcher] = []


def watch_runs(watcher: RunWatcher) -> RunWatcher:
    """Register `watcher` for every change of every run."""
    if watcher not in _watchers:
        _watchers.append(watcher)
    return watcher


async def run_changed(session: AsyncSession, run: GenerationRun) -> None:
    for watcher in _watchers:
        await watcher(session, run)
