"""SQLAlchemy's aiosqlite driver, with one trip to the connection's thread per statement.

aiosqlite runs each sqlite3 call on the connection's own thread, and SQLAlchemy's adapter makes
four such calls per query (make a cursor, execute, fetch the rows, close the cursor), three per
write. Each trip ends by waiting for the event loop to pick its result up, behind whatever else
the loop is doing, and a writing transaction holds SQLite's one write lock through all of them:
under load, the trips, not SQLite, set the pace of every write. This cursor does the four calls
in one function on the connection's thread, so a statement costs one trip.

It queues work on aiosqlite's connection as SQLAlchemy's own adapter does to set the isolation
level (`aiosqlite.Connection._execute`, the method behind every aiosqlite call).
"""

from __future__ import annotations

import collections
import importlib
import sqlite3
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import EMPTY_DICT

# What one statement left behind: its rows (None for a statement that returns none), the
# cursor's description, rowcount and lastrowid.
_Outcome = tuple[list[Any] | None, Any, int, int | None]


def _run(connection: sqlite3.Connection, operation: str, parameters: Any, many: bool) -> _Outcome:
    cursor = connection.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        else:
            cursor.execute(operation, () if parameters is None else parameters)
        rows = cursor.fetchall() if cursor.description else None
        return rows, cursor.description, cursor.rowcount, cursor.lastrowid
    finally:
        cursor.close()


class OneTripCursor(AsyncAdapt_aiosqlite_cursor):
    """A buffered cursor whose statement, rows and close are one trip to the thread."""

    __slots__ = ("_arraysize", "_description", "_lastrowid", "_rowcount")
    # Nothing to close on the thread: the sqlite3 cursor closed with its statement.
    _awaitable_cursor_close = False

    def __init__(self, adapt_connection: Any) -> None:
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]
        self._rows = collections.deque()
        self._soft_closed_memoized = EMPTY_DICT
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None
        self._arraysize = 1

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> Any:
        return self._lastrowid

    @property
    def arraysize(self) -> int:
        return self._arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._arraysize = value

    async def _execute_async(self, operation: Any, parameters: Any) -> Any:
        await self._one_trip(operation, parameters, many=False)

    async def _executemany_async(self, operation: Any, seq_of_parameters: Any) -> Any:
        await self._one_trip(operation, seq_of_parameters, many=True)

    async def _one_trip(self, operation: str, parameters: Any, *, many: bool) -> None:
        connection: aiosqlite.Connection = self._connection  # type: ignore[assignment]
        async with self._adapt_connection._execute_mutex:
            outcome: _Outcome = await connection._execute(  # type: ignore[no-untyped-call]
                _run, connection._conn, operation, parameters, many
            )
        rows, self._description, self._rowcount, self._lastrowid = outcome
        self._rows = collections.deque(rows or ())

    def close(self) -> None:
        self._rows.clear()


class OneTripConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()
    _cursor_cls = OneTripCursor

    # The sqlite3 driver reads in autocommit and begins a transaction only before its first
    # write, so a transaction that only read has nothing to end; and the pool's rollback on
    # return follows every commit. Each would still be a trip to the connection's thread (of a
    # read-only request's three trips, two): asked first, from here, whether there is one.
    def commit(self) -> None:
        if self._open_transaction():
            super().commit()

    def rollback(self) -> None:
        if self._open_transaction():
            super().rollback()

    def _open_transaction(self) -> bool:
        raw = self._connection._connection
        # No raw connection (closed, or not yet open): let the driver say what it says.
        return raw is None or bool(raw.in_transaction)


class OneTripDriver(AsyncAdapt_aiosqlite_dbapi):
    """The DBAPI module SQLAlchemy's aiosqlite dialect is given (`create_engine(module=...)`).

    With `extensions` (paths of SQLite loadable extensions), every connection loads them as it
    opens, and is made by `sqlite` (a sqlite3 module that can load extensions, such as pysqlite3)
    instead of the standard library's."""

    def __init__(
        self, aiosqlite: ModuleType, sqlite: ModuleType, extensions: Sequence[str] = ()
    ) -> None:
        self.extensions = tuple(extensions)
        super().__init__(aiosqlite, sqlite)

    def _init_dbapi_attributes(self) -> None:
        super()._init_dbapi_attributes()
        # SQLAlchemy takes the exception classes from aiosqlite, which re-exports the standard
        # library's; pysqlite3 raises classes of its own, which SQLAlchemy would then neither
        # wrap nor map (IntegrityError, a lost connection): take them from the module in use.
        for name in _EXCEPTIONS:
            setattr(self, name, getattr(self.sqlite, name))

    def connect(self, *arg: Any, **kw: Any) -> OneTripConnection:
        if self.sqlite is not sqlite3 or self.extensions:
            kw["async_creator_fn"] = self._open
        adapted = super().connect(*arg, **kw)
        return OneTripConnection(self, adapted._connection)

    def _open(self, database: str, **kw: Any) -> aiosqlite.Connection:
        """What `aiosqlite.connect` makes, with our module's connect and the extensions loaded
        (on the connection's own thread, where the connector runs)."""
        sqlite, extensions = self.sqlite, self.extensions

        def connector() -> sqlite3.Connection:
            connection: sqlite3.Connection = sqlite.connect(database, **kw)
            if extensions:
                connection.enable_load_extension(True)
                for path in extensions:
                    connection.load_extension(path)
                connection.enable_load_extension(False)
            return connection

        connection = aiosqlite.Connection(connector, iter_chunk_size=64)
        connection._thread.daemon = True  # as SQLAlchemy does: a forgotten one never blocks exit
        return connection


_EXCEPTIONS = (
    "DatabaseError",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "DataError",
    "Warning",
    "sqlite_version",
    "sqlite_version_info",
)


class ExtensionsUnavailable(RuntimeError):
    """No sqlite3 module here can load extensions."""


def loading_module() -> ModuleType:
    """A sqlite3 module whose connections can load extensions: the standard library's when it
    was built with them (many Python builds, pyenv's and CI's among them, are not), else
    pysqlite3 (the `pysqlite3-binary` wheel on Linux)."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        return importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        raise ExtensionsUnavailable(
            "this Python's sqlite3 cannot load extensions and pysqlite3 is not installed"
        ) from None


def driver(extensions: Sequence[str] = ()) -> OneTripDriver:
    """The standard library's sqlite3 without `extensions`; with them, a module that loads them
    (`loading_module`, which raises ExtensionsUnavailable when there is none)."""
    if not extensions:
        return OneTripDriver(aiosqlite, sqlite3)
    return OneTripDriver(aiosqlite, loading_module(), extensions)
