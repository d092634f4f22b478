"""Engine, sessions (one unit of work per request or task), naming convention, base model."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import orjson
from sqlalchemy import (
    JSON,
    DateTime,
    ForeignKey,
    MetaData,
    Select,
    TableValuedAlias,
    TypeDecorator,
    Uuid,
    bindparam,
    event,
    func,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, declared_attr, mapped_column

from contentplatform.kit import sqlite
from contentplatform.kit.errors import RecordNotFound, require

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

AFTER_COMMIT_KEY = "after_commit"
# Hooks run after all the others: a cache's retirement, which may wait on a Redis connection,
# must not hold up one that closes a window of access (a removed member's cached role).
LAST_AFTER_COMMIT_KEY = "after_commit_last"


def utcnow() -> datetime:
    return datetime.now(UTC)


def utc_text(moment: datetime | None = None) -> str:
    """An instant (now by default) as the API writes instants: RFC 3339 in UTC with `Z`, as
    pydantic does, for JSON built by hand (event data)."""
    return (moment or utcnow()).astimezone(UTC).isoformat().replace("+00:00", "Z")


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


def json_dumps(value: Any) -> str:
    """JSON columns are written by orjson; what it refuses (an integer past 64 bits, a lone
    surrogate) by the standard library, as before."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value)


def json_loads(text: str | bytes) -> Any:
    """JSON columns are read by orjson, several times faster than the standard library (a list
    of drafts decodes each one's seo_meta and provenance); what it refuses (NaN, which the
    standard library used to write, or a lone surrogate) by the standard library."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


# How long a unit of work waits for SQLite's write turn before failing as SQLite itself would.
SQLITE_WRITE_WAIT_SECONDS = 30
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
_HOLDS_WRITE_TURN = "holds_write_turn"


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        # Other processes (a worker) still meet at SQLite's file lock.
        cursor.execute("PRAGMA busy_timeout=10000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()
        # SQLite's lower() folds only ASCII; match PostgreSQL for case-insensitive search.
        dbapi_connection.create_function("lower", 1, _lower, deterministic=True)

    _serialize_writes(engine)


def _serialize_writes(engine: AsyncEngine) -> None:
    """One writing transaction at a time per event loop, in turn.

    SQLite has one writer; writers that meet at its file lock back off and retry (busy_timeout,
    sleeping up to 100 ms a try), which under concurrent writes made p99 seconds long and ended in
    "database is locked". So a transaction takes this process's write turn, an asyncio.Lock, just
    before its first write: the moment the sqlite3 driver begins the transaction (it reads in
    autocommit until then, so no snapshot can go stale while it waits), and gives the turn back
    when its connection returns to the pool, committed or rolled back. Writers then queue in FIFO
    order instead of polling the file. A task that writes on a second connection while it holds
    the turn goes straight to SQLite, as before (waiting on itself would never end).
    """
    turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
        weakref.WeakKeyDictionary()
    )
    holders: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[Any]] = (
        weakref.WeakKeyDictionary()
    )

    # The driver's own class (pysqlite3's differs from the standard library's), so SQLAlchemy
    # wraps it as it wraps SQLite's own "database is locked".
    locked: type[Exception] = engine.dialect.loaded_dbapi.OperationalError

    async def wait_for_turn(turn: asyncio.Lock) -> None:
        try:
            async with asyncio.timeout(SQLITE_WRITE_WAIT_SECONDS):
                await turn.acquire()
        except TimeoutError:
            raise locked("database is locked") from None

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def _before_write(connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        info = connection.connection.info
        if _HOLDS_WRITE_TURN in info or not statement.lstrip()[:7].upper().startswith(_WRITES):
            return
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is not None and holders.get(loop) is task:
            return
        turn = turns.setdefault(loop, asyncio.Lock())
        connection.connection.dbapi_connection.run_async(lambda _: wait_for_turn(turn))
        info[_HOLDS_WRITE_TURN] = (loop, turn)
        if task is not None:
            holders[loop] = task

    @event.listens_for(engine.sync_engine, "checkin")
    def _after_transaction(_dbapi_connection: Any, record: Any) -> None:
        held = record.info.pop(_HOLDS_WRITE_TURN, None)
        if held is None:
            return
        loop, turn = held
        holders.pop(loop, None)
        try:
            if asyncio.get_running_loop() is loop:
                turn.release()
                return
        except RuntimeError:  # no loop here: the pool collected a connection its task left
            pass
        if not loop.is_closed():
            loop.call_soon_threadsafe(turn.release)


# Connections each process keeps open, and how many more a burst beyond them may open (and
# close again): a pool smaller than the usual concurrency opens and closes connections under
# load (a SQLite connection is a thread and its PRAGMAs; a PostgreSQL one a server process).
DEFAULT_POOL_SIZE = 20
DEFAULT_MAX_OVERFLOW = 10
DEFAULT_POOL_TIMEOUT = 30.0
# How long work nobody waits on (a durable step, the scheduler) queues for a connection in all.
DEFAULT_WORK_PATIENCE = 600.0


def create_engine(
    url: str,
    *,
    pool_size: int = DEFAULT_POOL_SIZE,
    max_overflow: int = DEFAULT_MAX_OVERFLOW,
    pool_timeout: float = DEFAULT_POOL_TIMEOUT,
    sqlite_extensions: Sequence[str] = (),
) -> AsyncEngine:
    """`sqlite_extensions`: loadable extensions every SQLite connection loads (kit/sqlite.py
    `driver`; ignored on PostgreSQL)."""
    codec: dict[str, Any] = {"json_serializer": json_dumps, "json_deserializer": json_loads}
    if url.startswith("sqlite"):
        engine = create_async_engine(
            url,
            module=sqlite.driver(sqlite_extensions),
            connect_args={"timeout": 30},
            pool_size=pool_size,
            max_overflow=max_overflow,
            pool_timeout=pool_timeout,
            **codec,
        )
        _configure_sqlite(engine)
        return engine
    # No JIT compilation: PostgreSQL cannot tell how many rows a report's span holds and, past
    # some 40 spans, compiled the query first, which took longer than running it (130 ms of 250
    # for 365 days of 100,000 debits). The service's queries are short: it never pays.
    server = {"server_settings": {"jit": "off"}} if url.startswith("postgresql+asyncpg") else {}
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_timeout=pool_timeout,
        connect_args=server,
        **codec,
    )
    _ping_when_idle(engine)
    return engine


# A connection back in the pool for longer than this is pinged before it is handed out.
PING_AFTER_IDLE_SECONDS = 10.0
_CHECKED_IN_AT = "checked_in_at"


def _ping_when_idle(engine: AsyncEngine) -> None:
    """Ping a pooled connection before use only when it has sat idle (SQLAlchemy's pessimistic
    disconnect handling, made lazy). `pool_pre_ping` pinged at every checkout: on asyncpg a
    BEGIN, a `;` and a ROLLBACK, three round trips before each request's own. A connection in
    steady use needs none: a server restart that meets one anyway fails that request with a
    503 (kit/http.py), and the disconnect invalidates the whole pool, so the next request
    reconnects."""

    @event.listens_for(engine.sync_engine, "checkin")
    def _idle_from(_dbapi_connection: Any, record: Any) -> None:
        record.info[_CHECKED_IN_AT] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _ping_if_idle(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get(_CHECKED_IN_AT)
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_SECONDS:
            return  # just opened, or in use a moment ago
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as error:
            # The pool retries the checkout with a new connection.
            raise DisconnectionError(str(error)) from error


class Database:
    def __init__(
        self,
        url: str,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        max_overflow: int = DEFAULT_MAX_OVERFLOW,
        pool_timeout: float = DEFAULT_POOL_TIMEOUT,
        work_patience: float = DEFAULT_WORK_PATIENCE,
        sqlite_extensions: Sequence[str] = (),
    ) -> None:
        self.url = url
        self.work_patience = work_patience
        self.engine = create_engine(
            url,
            pool_size=pool_size,
            max_overflow=max_overflow,
            pool_timeout=pool_timeout,
            sqlite_extensions=sqlite_extensions,
        )
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
        """One transaction: committed when the block succeeds, then after-commit hooks run.

        While a client waits (`client_waiting`: an HTTP request before its response begins), a
        pool whose connections stay busy for its timeout raises PoolTimeout, which the API
        answers 503 with Retry-After. Other work (a durable step, the scheduler, an answer
        writing its stream, a stream already begun) takes its connection first and queues for
        it up to `work_patience`: a crowd settling at once waits its turn instead of failing
        for want of a connection."""
        async with self.sessionmaker() as session:
            if not _client_waiting():
                await self._connect_patiently(session)
            try:
                yield session
                # A request's block that neither read nor wrote began no transaction: nothing
                # to commit (other work took its connection first; its empty commit sends
                # nothing to the server, as the drivers begin at the first statement).
                if session.in_transaction():
                    await session.commit()
            except BaseException:
                await session.rollback()
                raise
            hooks: list[Callable[[], Awaitable[None]]] = [
                *session.info.pop(AFTER_COMMIT_KEY, []),
                *session.info.pop(LAST_AFTER_COMMIT_KEY, []),
            ]
        for hook in hooks:
            await hook()

    async def _connect_patiently(self, session: AsyncSession) -> None:
        deadline = time.monotonic() + self.work_patience
        while True:
            try:
                await session.connection()
                return
            except PoolTimeout:
                if time.monotonic() >= deadline:
                    raise


class Waiting:
    """A client waiting for the start of its answer (kit/http.py makes one per HTTP request).
    Shared by the tasks the request starts (a streaming body's among them), so `answered`
    reaches them all: once the response has begun, a 503 can no longer be sent, and the rest
    of a stream waits its turn for a connection as background work does."""

    def __init__(self) -> None:
        self.waiting = True

    def answered(self) -> None:
        self.waiting = False


_client: ContextVar[Waiting | None] = ContextVar("client", default=None)


def _client_waiting() -> bool:
    client = _client.get()
    return client is not None and client.waiting


@contextmanager
def client_waiting(client: Waiting | None = None) -> Iterator[Waiting]:
    """Mark the work done within as a client's, waiting for its answer, until `answered`
    (durable work starts in a fresh context, kit/durable.py `start`, and is never a client's)."""
    client = client or Waiting()
    token = _client.set(client)
    try:
        yield client
    finally:
        _client.reset(token)


def after_commit(
    session: AsyncSession | Session, hook: Callable[[], Awaitable[None]], *, last: bool = False
) -> None:
    """Run `hook` once the session's transaction has committed (never if it rolls back), in
    the order given; `last` ones after every other."""
    key = LAST_AFTER_COMMIT_KEY if last else AFTER_COMMIT_KEY
    session.info.setdefault(key, []).append(hook)


async def writes_already(session: AsyncSession) -> bool:
    """Whether this SQLite transaction has written, and so holds the database's write lock until
    it ends (no later write of another transaction can slip in between). Always False on
    PostgreSQL, whose locks are per row."""
    if session.get_bind().dialect.name != "sqlite" or not session.in_transaction():
        return False
    return _HOLDS_WRITE_TURN in (await session.connection()).info


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


async def owned_by(
    session: AsyncSession, model: type[ModelT], tenant_id: uuid.UUID, **equal: Any
) -> ModelT | None:
    """The tenant's one row of `model` whose attributes equal `equal` (a unique key: an
    idempotency key, a (draft, connection) pair), None when there is none. Soft-deleted rows
    count: a caller that wants live ones says so in its own query."""
    criteria = [getattr(model, name) == value for name, value in equal.items()]
    statement = select(model).where(model.tenant_id == tenant_id, *criteria)  # type: ignore[attr-defined]
    return (await session.execute(statement)).scalar_one_or_none()


FunctionT = TypeVar("FunctionT", bound=Callable[..., Any])


def cross_tenant(why: str) -> Callable[[FunctionT], FunctionT]:
    """Marks a repository function that does not take one tenant first, and says why: a sweep of
    every tenant's rows (the reconciler, the scheduler, retention), a platform table (plans,
    tenants, users), rows that carry their own tenant, or a key that is how the tenant is found.
    tests/test_tenancy_lint.py lets only these through; the function is returned unchanged."""
    if not why.strip():
        raise ValueError("say why the function is not one tenant's")

    def mark(function: FunctionT) -> FunctionT:
        return function

    return mark


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


class Required(Generic[ModelT]):
    """A service's `require`: the row `lookup` finds, or `missing(id)` raised (a 404) when it
    finds none. `require = Required(repository.get, JobNotFound)`, then
    `await require(session, tenant_id, job_id, for_update=True)`."""

    def __init__(self, lookup: Owned[ModelT], missing: type[RecordNotFound]) -> None:
        self.lookup = lookup
        self.missing = missing

    async def __call__(
        self,
        session: AsyncSession,
        tenant_id: uuid.UUID,
        record_id: uuid.UUID,
        *,
        for_update: bool = False,
    ) -> ModelT:
        found = await self.lookup(session, tenant_id, record_id, for_update=for_update)
        return require(found, self.missing, record_id)


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


def plain(statement: Select[ModelT]) -> Select[Any]:
    """`select(Model).where(...)` reading the model's columns instead of ORM objects: `page_of`
    returns its rows as dicts, which a record validates from straight away (several times faster
    than from objects or rows). For lists, where loading objects into the session's identity map,
    to track changes nobody makes, was most of the cost."""
    entity = statement.column_descriptions[0]["entity"]
    return statement.with_only_columns(*entity.__table__.columns, maintain_column_froms=True)


def count_of(statement: Select[Any]) -> Select[int]:
    """How many rows `statement` selects, counted over its FROM and WHERE alone when it allows
    (no grouping, distinct or limit), so the database can count an index instead of wide rows."""
    if statement._group_by_clauses or statement._distinct or statement._limit_clause is not None:
        return select(func.count()).select_from(statement.subquery())
    return statement.with_only_columns(func.count(), maintain_column_froms=True).order_by(None)


async def page_of(
    session: AsyncSession,
    statement: Select[RowT],
    *order_by: Any,
    limit: int,
    offset: int,
    total: Select[Any] | None = None,
) -> tuple[list[RowT], int]:
    """One page of what `statement` selects, in `order_by` order, and how many there are: the
    objects of a `select(Model)`, or the rows of a `plain(...)` one as dicts. `total`: a statement
    that tells how many for less than counting them (a maintained count), instead of counting."""
    paged = statement.order_by(*order_by).limit(limit).offset(offset)
    counted = count_of(statement) if total is None else total
    if len(statement.column_descriptions) == 1:
        how_many = await session.scalar(counted)
        return list((await session.execute(paged)).scalars()), int(how_many or 0)
    # Columns, not objects: through the session's connection (its transaction), skipping the
    # ORM's result machinery.
    connection = await session.connection()
    how_many = (await connection.execute(counted)).scalar()
    result = await connection.execute(paged)
    keys = tuple(result.keys())
    rows: list[Any] = [dict(zip(keys, row, strict=True)) for row in result]
    return rows, int(how_many or 0)


def json_items(dialect: str, name: str, items: dict[str, Any]) -> TableValuedAlias:
    """`items` sent as ONE bound parameter (a JSON object) and read back as a table of its
    (`key`, `value`) pairs, to join on: a statement about many rows compiles once whatever their
    number, where an `IN` list is expanded into a parameter per item at every execution.
    `value` is text on PostgreSQL (`json_each_text`) and the JSON value on SQLite (`json_each`):
    cast it to compare."""
    given = bindparam(name, items, type_=JSON)
    if dialect == "postgresql":
        return func.json_each_text(given).table_valued("key", "value").render_derived()
    # SQLite names json_each's columns itself, and takes no list of them.
    return func.json_each(given).table_valued("key", "value")


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
    "Required",
    "SoftDeleteMixin",
    "TenantMixin",
    "UTCDateTime",
    "after_commit",
    "claim",
    "count_of",
    "counts_by",
    "get_owned",
    "insert_ignoring_conflicts",
    "json_dumps",
    "json_loads",
    "lock_rows",
    "owned_by",
    "page_of",
    "plain",
    "utcnow",
    "writes_already",
]
