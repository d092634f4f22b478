"""The resources of this process: settings, database, rate limiter, cache, stream log, stream
tokens, object store, model, embeddings server (None when embeddings are off), and the
invalidations every process hears (kit/invalidation.py).

DBOS is process-global, so workflows reach our database through here rather than through a request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlite_vec
from sqlalchemy import text

from contentplatform.ai.base import ChatModel
from contentplatform.ai.providers import embeddings_from_settings, from_settings
from contentplatform.auth.stream_tokens import StreamTokens
from contentplatform.config import Settings
from contentplatform.kit import sqlite
from contentplatform.kit.cache import ScopedCache
from contentplatform.kit.db import Database
from contentplatform.kit.invalidation import Invalidations
from contentplatform.kit.ratelimit import RateLimiter
from contentplatform.kit.streams import StreamLog, stream_log
from contentplatform.storage.store import ObjectStore

if TYPE_CHECKING:
    # Made only when configured (ai/providers.py): its `openai` import is slow.
    from contentplatform.ai.embeddings import Embeddings


@dataclass
class Runtime:
    settings: Settings
    db: Database
    limiter: RateLimiter
    cache: ScopedCache
    streams: StreamLog
    store: ObjectStore
    model: ChatModel
    invalidations: Invalidations
    stream_tokens: StreamTokens
    embedder: Embeddings | None = None

    @classmethod
    def create(cls, settings: Settings) -> Runtime:
        db = Database(
            settings.resolved_database_url,
            pool_size=settings.database_pool_size,
            max_overflow=settings.database_max_overflow,
            pool_timeout=settings.database_pool_timeout_seconds,
            work_patience=settings.database_work_patience_seconds,
            sqlite_extensions=sqlite_extensions(settings),
        )
        return cls(
            settings=settings,
            db=db,
            limiter=RateLimiter(settings.redis_url, settings.redis_prefix),
            cache=ScopedCache(settings.redis_url, settings.redis_prefix),
            streams=stream_log(
                db,
                settings.redis_url,
                settings.redis_prefix,
                retention_seconds=settings.stream_retention_hours * 3600,
                poll_seconds=settings.stream_poll_seconds,
                max_open_streams=settings.max_open_streams,
            ),
            store=ObjectStore.from_settings(settings),
            model=from_settings(settings),
            invalidations=Invalidations(settings.redis_url, settings.redis_prefix),
            stream_tokens=StreamTokens.from_settings(settings),
            embedder=embeddings_from_settings(settings),
        )

    async def verify(self) -> None:
        """What the settings need of the database is there (at start-up, before serving)."""
        if self.embedder is not None and self.db.dialect == "postgresql":
            async with self.db.engine.connect() as connection:
                found = await connection.scalar(text("SELECT to_regtype('vector') IS NOT NULL"))
            if not found:
                raise StartupRefused(
                    "Embeddings are configured (CONTENTPLATFORM_EMBEDDINGS_BASE_URL) but this "
                    "PostgreSQL database has no `vector` type: install pgvector on the server "
                    "(https://github.com/pgvector/pgvector), then run `CREATE EXTENSION vector;` "
                    "in the database, or `contentplatform migrate` on a new one."
                )

    async def close(self) -> None:
        if self.embedder is not None:
            await self.embedder.close()
        await self.model.close()
        await self.cache.close()
        await self.invalidations.close()
        await self.streams.close()
        await self.db.dispose()


class StartupRefused(RuntimeError):
    """The settings ask for something this machine or database cannot give."""


def sqlite_extensions(settings: Settings) -> Sequence[str]:
    """sqlite-vec, for the vectors of hybrid search, when embeddings are on (documents/vectors.py
    compares them with its vec_distance_cosine); nothing otherwise."""
    if not (settings.embeddings_enabled and settings.is_sqlite):
        return ()
    try:
        sqlite.loading_module()
    except sqlite.ExtensionsUnavailable as error:
        raise StartupRefused(
            "Embeddings are configured (CONTENTPLATFORM_EMBEDDINGS_BASE_URL) on SQLite, but SQLite "
            f"cannot load sqlite-vec here ({error}): install pysqlite3-binary, or use a Python "
            "whose sqlite3 loads extensions."
        ) from None
    return (sqlite_vec.loadable_path(),)


_current: Runtime | None = None


def install(runtime: Runtime | None) -> None:
    global _current
    _current = runtime


def current() -> Runtime:
    if _current is None:
        raise RuntimeError("no runtime installed in this process")
    return _current
