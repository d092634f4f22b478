"""Alembic environment: one migration chain for SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from contentplatform.domains import include_name, metadata
from contentplatform.kit.db import Database

target_metadata = metadata()


def run_on(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        # Objects only migrations describe (documents' full-text index) are left out.
        include_name=include_name,  # type: ignore[arg-type]
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_online() -> None:
    database = Database(context.config.get_main_option("sqlalchemy.url") or "")
    try:
        async with database.engine.connect() as connection:
            await connection.run_sync(run_on)
            await connection.commit()
    finally:
        await database.dispose()


if context.is_offline_mode():
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(run_online())
