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
    with _postgres(server_url, run) if server_url else _sqlite(data_dir) as (db_url, dbos_url):
        try:
            yield Backends(db_url, dbos_url, redis_url, prefix)
        finally:
            if redis_url:
                client = redis.Redis.from_url(redis_url)
                for key in client.scan_iter(match=f"{prefix}*", count=500):
                    client.delete(key)
                client.close()


@contextmanager
def _sqlite(data_dir: Path) -> Iterator[tuple[str, str]]:
    yield f"sqlite:///{data_dir / 'test.db'}", f"sqlite:///{data_dir / 'test-dbos.sqlite'}"


@contextmanager
def _postgres(server_url: str, run: str) -> Iterator[tuple[str, str]]:
    server = make_url(server_url).set(drivername="postgresql+psycopg")
    names = [f"cp_test_{run}", f"cp_test_{run}_dbos"]
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        for name in names:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield (
            server.set(drivername="postgresql", database=names[0]).render_as_string(False),
            server.set(drivername="postgresql", database=names[1]).render_as_string(False),
        )
    finally:
        with admin.connect() as connection:
            for name in names:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
