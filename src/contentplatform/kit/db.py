"""Engine, sessions (one unit of work per request or task), naming convention, base model."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import (
    DateTime,
    ForeignKey,
    MetaData,
    Select,
    TypeDecorator,
    Uuid,
    event,
    func,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, declared_attr, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

AFTER_COMMIT_KEY = "after_commit"


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps stored in UTC and always read back timezone-aware (SQLite forgets the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class RecordMixin:
    """UUID key and UTC creation/update times."""

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime, default=utcnow, onupdate=utcnow, nullable=False
    )


class TenantMixin:
    """A row owned by one tenant; repositories always filter on tenant_id."""

    @declared_attr
    def tenant_id(cls) -> Mapped[uuid.UUID]:
        return mapped_column(
            Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False, index=True
        )


class SoftDeleteMixin:
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=10000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()
        # SQLite's lower() folds only ASCII; match PostgreSQL for case-insensitive search.
        dbapi_connection.create_function("lower", 1, _lower, deterministic=True)


def create_engine(url: str) -> AsyncEngine:
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": 30})
        _configure_sqlite(engine)
        return engine
    return create_async_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10)


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_engine(url)
        self.sessionmaker = async_sessionmaker(self.engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    async def ping(self) -> None:
        async with self.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        await self.engine.dispose()

    @asynccontextmanager
    async def unit_of_work(self) -> AsyncIterator[AsyncSession]:
        """One transaction: committed when the block succeeds, then after-commit hooks run."""
        async with self.sessionmaker() as session:
            try:
                yield session
                await session.commit()
            except BaseException:
                await session.rollback()
                raise
            hooks: list[Callable[[], Awaitable[None]]] = session.info.pop(AFTER_COMMIT_KEY, [])
        for hook in hooks:
            await hook()


def after_commit(session: AsyncSession, hook: Callable[[], Awaitable[None]]) -> None:
    """Run `hook` once the session's transaction has committed (never if it rolls back)."""
    session.info.setdefault(AFTER_COMMIT_KEY, []).append(hook)


async def lock_rows(session: AsyncSession, model: type[Base], *criteria: Any) -> None:
    """Make the SELECT ... FOR UPDATE that follows serialize on SQLite too.

    SQLite ignores FOR UPDATE. A write that changes nothing takes its one write lock instead
    and, as the transaction's first write, begins it, so what is read next is current. On
    PostgreSQL the FOR UPDATE itself locks the rows; nothing is done here.
    """
    if session.get_bind().dialect.name != "sqlite":
        return
    await session.execute(
        update(model)
        .where(*criteria)
        .values(updated_at=model.updated_at)  # type: ignore[attr-defined]
        .execution_options(synchronize_session=False)
    )


ModelT = TypeVar("ModelT", bound=Base)
RowT = TypeVar("RowT")


async def get_owned(
    session: AsyncSession,
    model: type[ModelT],
    tenant_id: uuid.UUID,
    record_id: uuid.UUID,
    *,
    for_update: bool = False,
) -> ModelT | None:
    """One row of the tenant by id, None when absent, another tenant's or soft-deleted.

    With `for_update` the row is locked (see lock_rows) and read as it is now: a copy this
    session read before the lock would otherwise keep its old values in the identity map.
    """
    columns = model.__table__.c
    criteria = [columns.tenant_id == tenant_id, columns.id == record_id]
    if "deleted_at" in columns:
        criteria.append(columns.deleted_at.is_(None))
    statement = select(model).where(*criteria)
    if for_update:
        await lock_rows(session, model, *criteria)
        statement = statement.with_for_update().execution_options(populate_existing=True)
    return (await session.execute(statement)).scalar_one_or_none()


class Owned(Generic[ModelT]):
    """The by-id lookup of one tenant-owned table, as a repository's function:
    `get = Owned(Draft)`, then `await get(session, tenant_id, draft_id, for_update=True)`."""

    def __init__(self, model: type[ModelT]) -> None:
        self.model = model

    async def __call__(
        self,
        session: AsyncSession,
        tenant_id: uuid.UUID,
        record_id: uuid.UUID,
        *,
        for_update: bool = False,
    ) -> ModelT | None:
        return await get_owned(session, self.model, tenant_id, record_id, for_update=for_update)


async def claim(session: AsyncSession, model: type[ModelT], *criteria: Any) -> ModelT | None:
    """The row matching `criteria`, locked, unless another transaction holds it (SKIP LOCKED):
    how concurrent workers share rows out instead of waiting on each other."""
    await lock_rows(session, model, *criteria)
    statement = select(model).where(*criteria).with_for_update(skip_locked=True)
    return (await session.execute(statement)).scalar_one_or_none()


async def counts_by(session: AsyncSession, column: Any, *criteria: Any) -> dict[str, int]:
    """How many rows matching `criteria` have each value of `column`."""
    result = await session.execute(select(column, func.count()).where(*criteria).group_by(column))
    return {value: count for value, count in result.tuples()}


async def page_of(
    session: AsyncSession,
    statement: Select[RowT],
    *order_by: Any,
    limit: int,
    offset: int,
) -> tuple[list[RowT], int]:
    """One page of what `statement` selects, in `order_by` order, and how many there are."""
    total = await session.scalar(select(func.count()).select_from(statement.subquery()))
    rows = await session.execute(statement.order_by(*order_by).limit(limit).offset(offset))
    return list(rows.scalars()), int(total or 0)


def insert_ignoring_conflicts(session: AsyncSession, model: type[Base], **values: Any) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING for the session's dialect."""
    dialect = session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    return insert(model).values(**values).on_conflict_do_nothing()


__all__ = [
    "Base",
    "Database",
    "Owned",
    "RecordMixin",
    "SoftDeleteMixin",
    "TenantMixin",
    "UTCDateTime",
    "after_commit",
    "claim",
    "counts_by",
    "get_owned",
    "insert_ignoring_conflicts",
    "lock_rows",
    "page_of",
    "utcnow",
]
