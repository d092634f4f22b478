"""The databases and Redis a test run uses: its own, created for the run and dropped after.

CONTENTPLATFORM_TEST_DATABASE_URL (a PostgreSQL server's maintenance database, e.g.
postgresql://127.0.0.1:5432/test) switches the suite from SQLite to PostgreSQL;
CONTENTPLATFORM_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/0) adds Redis.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url


@dataclass
class Backends:
    database_url: str
    dbos_database_url: str
    redis_url: str | None
    redis_prefix: str

    @property
    def backend(self) -> str:
        return make_url(self.database_url).get_backend_name()


@contextmanager
def test_backends(data_dir: Path) -> Iterator[Backends]:
    run = uuid.uuid4().hex[:10]
    server_url = os.environ.get("CONTENTPLATFORM_TEST_DATABASE_URL")
    redis_url = os.environ.get("CONTENTPLATFORM_TEST_REDIS_URL")
    prefix = f"cptest:{run}:"
    databases = (
        postgres_databases(server_url, f"cp_test_{run}") if server_url else _sqlite(data_dir)
    )
    with databases as (db_url, dbos_url):
        try:
            yield Backends(db_url, dbos_url, redis_url, prefix)
        finally:
            clear_redis(redis_url, prefix)


@contextmanager
def _sqlite(data_dir: Path) -> Iterator[tuple[str, str]]:
    yield f"sqlite:///{data_dir / 'test.db'}", f"sqlite:///{data_dir / 'test-dbos.sqlite'}"


@contextmanager
def postgres_databases(server_url: str, name: str) -> Iterator[tuple[str, str]]:
    """Two new databases on the PostgreSQL server, `name` (ours) and `name_dbos`, dropped after."""
    server = make_url(server_url).set(drivername="postgresql+psycopg")
    names = [name, f"{name}_dbos"]
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            for each in names:
                connection.execute(text(f'CREATE DATABASE "{each}"'))
        yield (
            server.set(drivername="postgresql", database=names[0]).render_as_string(False),
            server.set(drivername="postgresql", database=names[1]).render_as_string(False),
        )
    finally:
        with admin.connect() as connection:
            for each in names:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{each}" WITH (FORCE)'))
        admin.dispose()


def clear_redis(url: str | None, prefix: str) -> None:
    """Delete every key under `prefix`."""
    if not url:
        return
    client = redis.Redis.from_url(url)
    try:
        for key in client.scan_iter(match=f"{prefix}*", count=500):
            client.delete(key)
    finally:
        client.close()
