"""Real `contentplatform serve` processes on backends of their own, for crash and recovery tests.

A `Stack` is what one service instance runs on (data directory, our database, DBOS's, Redis under
a prefix of its own): SQLite files in a temporary directory, or two PostgreSQL databases created
for the test and dropped after when CONTENTPLATFORM_TEST_DATABASE_URL is set. `Services` starts,
kills and stops service processes on it; `wait_for` polls with a bound and the log on failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

import httpx
import pytest
from dbos import DBOSClient
from sqlalchemy import Engine, Executable, create_engine
from sqlalchemy.engine import make_url

from contentplatform.auth import devkeys
from contentplatform.auth.context import Role
from tests.support import zygote
from tests.support.backends import clear_redis, postgres_databases

TIMEOUT = 60.0  # for any one thing to happen; normally it takes a second or two
# One client for every request to a service process: `httpx.get` makes a client, and so an SSL
# context (its CA bundle read and parsed, ~25 ms of CPU), per call; polling `/readyz` every 50 ms
# that way was a third of a test worker's CPU while services started.
LOOPBACK = httpx.Client(trust_env=False, timeout=30)
CLI = (sys.executable, "-m", "contentplatform.cli")

T = TypeVar("T")


# --- the service's backends ---------------------------------------------------------------------


@dataclass
class Stack:
    """What one service instance runs on; it outlives the processes that use it."""

    dir: Path
    database_url: str
    dbos_database_url: str
    redis_url: str | None
    redis_prefix: str
    engine: Engine = field(init=False)
    # The loopback port of the local SMTP server a service of this stack runs (`serve` in local
    # starts one): the stack's own, so no test's services take another's, or its mail.
    mail_port: int = field(init=False, default_factory=lambda: free_port())

    def __post_init__(self) -> None:
        url = make_url(self.database_url)
        if url.get_backend_name() == "postgresql":
            url = url.set(drivername="postgresql+psycopg")
        self.engine = create_engine(url)

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    def env(self, **settings: str) -> dict[str, str]:
        values = {
            "CONTENTPLATFORM_ENV": "local",
            "CONTENTPLATFORM_DATA_DIR": str(self.data_dir),
            "CONTENTPLATFORM_DATABASE_URL": self.database_url,
            "CONTENTPLATFORM_DBOS_DATABASE_URL": self.dbos_database_url,
            "CONTENTPLATFORM_RECONCILE_INTERVAL_SECONDS": "0.5",
            # No job scheduler ticking beside what a test watches, unless it asks for one.
            "CONTENTPLATFORM_SCHEDULER_INTERVAL_SECONDS": "0",
            "CONTENTPLATFORM_RATE_LIMIT": "100000/minute",
            "CONTENTPLATFORM_RATE_LIMIT_PUBLIC": "100000/minute",
            "CONTENTPLATFORM_LOG_LEVEL": "INFO",
            # Small pools, as the suite's own service (tests/conftest.py `_pools`), smaller
            # still on PostgreSQL: a test starts two or three of these beside every worker's
            # own service.
            **_pools(self.database_url),
            "CONTENTPLATFORM_REDIS_PREFIX": self.redis_prefix,
            "CONTENTPLATFORM_MAIL_LOCAL_PORT": str(self.mail_port),
        }
        if self.redis_url:
            values["CONTENTPLATFORM_REDIS_URL"] = self.redis_url
        values.update({f"CONTENTPLATFORM_{key.upper()}": value for key, value in settings.items()})
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("CONTENTPLATFORM_")}
        return {**inherited, **values}

    def token(self, org: str, user: str, role: str) -> str:
        """What `contentplatform dev-token --org ORG --user USER --role ROLE` prints for the
        services of this stack (the same function, on the same data directory)."""
        return devkeys.mint_token(self.data_dir, org=org, user=user, role=Role(role))

    def rows(self, query: Executable) -> list[Any]:
        """What `query` reads from our database, in a connection of its own."""
        with self.engine.connect() as connection:
            return list(connection.execute(query))

    def one(self, query: Executable) -> Any:
        """The one row `query` reads from our database (an error unless exactly one)."""
        with self.engine.connect() as connection:
            return connection.execute(query).one()

    def ended_workflow_status(self, workflow_id: str) -> str | None:
        """DBOS's status of a workflow once it is no longer PENDING (bounded): DBOS records a
        workflow's end just after its last step's own transaction commits, so a test that saw
        that commit may read PENDING for a moment."""
        return wait_for(
            f"workflow {workflow_id} to end",
            lambda: (status := self.workflow_status(workflow_id)) != "PENDING" and status,
        )

    def workflow_status(self, workflow_id: str) -> str | None:
        """DBOS's status of a workflow, read from its system database (None: never started)."""
        client = DBOSClient(system_database_url=self.dbos_database_url)
        try:
            found = client.list_workflows(
                workflow_ids=[workflow_id], load_input=False, load_output=False
            )
        finally:
            client.destroy()
        return found[0].status if found else None


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    redis_url = os.environ.get("CONTENTPLATFORM_TEST_REDIS_URL")
    run = uuid.uuid4().hex[:10]
    prefix = f"cptest:proc:{run}:"
    with _databases(tmp_path, run) as (database_url, dbos_database_url):
        found = Stack(tmp_path, database_url, dbos_database_url, redis_url, prefix)
        try:
            yield found
        finally:
            found.engine.dispose()
            clear_redis(redis_url, prefix)


@contextmanager
def _databases(tmp_path: Path, run: str) -> Iterator[tuple[str, str]]:
    """Ours and DBOS's: SQLite files, or two PostgreSQL databases made for this test only."""
    server_url = os.environ.get("CONTENTPLATFORM_TEST_DATABASE_URL")
    if not server_url:
        yield f"sqlite:///{tmp_path / 'app.db'}", f"sqlite:///{tmp_path / 'dbos.sqlite'}"
        return
    with postgres_databases(server_url, f"cp_test_proc_{run}") as urls:
        yield urls


def _pools(database_url: str) -> dict[str, str]:
    if database_url.startswith("postgresql"):
        sizes = {"DATABASE_POOL_SIZE": 2, "DATABASE_MAX_OVERFLOW": 6, "DBOS_POOL_SIZE": 4}
    else:
        sizes = {"DATABASE_POOL_SIZE": 5, "DATABASE_MAX_OVERFLOW": 5, "DBOS_POOL_SIZE": 10}
    return {f"CONTENTPLATFORM_{name}": str(size) for name, size in sizes.items()}


# --- the service's processes --------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Service:
    """One `contentplatform serve` process."""

    process: subprocess.Popen[bytes] | zygote.Forked
    url: str
    log: Path

    def tail(self, chars: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def ready(self) -> bool:
        try:
            return LOOPBACK.get(f"{self.url}/readyz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise AssertionError(
                f"the service exited early with {self.process.returncode}:\n{self.tail()}"
            )

    def kill(self) -> None:
        """SIGKILL to the service and every process it started (its own process group), as when
        a machine or container dies: no shutdown hook runs, and no child of it (a worker pool)
        outlives it to linger after the test."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(TIMEOUT)

    def stop(self) -> None:
        """SIGTERM, as a deployment stops it."""
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the service ignored SIGTERM:\n{self.tail()}") from None
        # uvicorn re-raises the signal once its graceful shutdown is over.
        assert code in (0, -signal.SIGTERM), self.tail()
        assert "Application shutdown complete" in self.tail(), self.tail()


@dataclass
class Services:
    """Starts service processes on a stack; whatever is still running at the end is killed."""

    stack: Stack
    running: list[Service] = field(default_factory=list)

    def start(self, **settings: str) -> Service:
        # A port found free can be taken by another test's process before this one binds it:
        # then the service exits saying so, and is started again on another port.
        for attempt in range(3):
            service = self._launch(settings)
            try:
                wait_for("the service to be ready", service.ready, service, interval=0.1)
            except AssertionError:
                if attempt == 2 or "address already in use" not in service.tail():
                    raise
                service.kill()
                self.running.remove(service)
                continue
            return service
        raise AssertionError("unreachable")

    def _launch(self, settings: dict[str, str]) -> Service:
        number = len(self.running) + 1
        log = self.stack.dir / f"service{number}.log"
        port = free_port()
        argv = ["serve", "--port", str(port)]
        env = self.stack.env(**settings)
        # The stack's directory: no stray .env file is read. A process group of its own, so
        # kill() and close() reach its children too.
        process: subprocess.Popen[bytes] | zygote.Forked
        if zygote.AVAILABLE:
            # Forked from a process that imported the service once (tests/support/zygote.py).
            process = zygote.shared().spawn(argv, env, self.stack.dir, log)
        else:
            with log.open("wb") as sink:
                process = subprocess.Popen(
                    [*CLI, *argv],
                    cwd=self.stack.dir,
                    env=env,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        service = Service(process, f"http://127.0.0.1:{port}", log)
        self.running.append(service)
        return service

    def token(self, org: str, role: str = "editor") -> str:
        """A token for `user_<org>` as `contentplatform dev-token` mints it, on the same data
        directory (minted here: a process of its own only re-imported the same code)."""
        return self.stack.token(org, f"user_{org}", role)

    def close(self) -> None:
        for service in self.running:
            # The whole group, even when the service itself has exited: a child it started
            # may still run.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(service.process.pid, signal.SIGKILL)
            service.process.wait(TIMEOUT)


@pytest.fixture
def services(stack: Stack) -> Iterator[Services]:
    started = Services(stack)
    try:
        yield started
    finally:
        started.close()


def wait_for(
    what: str,
    check: Callable[[], T | Literal[False] | None],
    service: Service | None = None,
    *,
    timeout: float = TIMEOUT,
    interval: float = 0.05,
) -> T:
    """Poll `check` until it returns something truthy; bounded, with the log on failure."""
    deadline = time.monotonic() + timeout
    while True:
        if service is not None:
            service.check_alive()
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            detail = f"; the service's log ends with:\n{service.tail()}" if service else ""
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


class ServiceClient:
    """A member of one organization calling one running service over REST."""

    def __init__(self, service: Service, token: str, org: str) -> None:
        self.service = service
        self.org = org
        self.headers = {"Authorization": f"Bearer {token}", "x-idp-org-id": org}

    @classmethod
    def of_new_org(
        cls, services: Services, service: Service, name: str, role: str = "editor"
    ) -> Self:
        """A `role` of a new organization named after `name`, calling `service`."""
        org = f"org_{name}_{uuid.uuid4().hex[:8]}"
        return cls(service, services.token(org, role), org)

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = LOOPBACK.request(
            method, f"{self.service.url}{path}", headers=self.headers, timeout=30, **kwargs
        )
        assert response.status_code == 200, (
            f"{method} {path}: {response.status_code} {response.text}\n{self.service.tail()}"
        )
        return response.json()  # type: ignore[no-any-return]

    def upload(self, filename: str, file_type: str, content: bytes) -> dict[str, Any]:
        """createUploadUrl -> PUT -> confirmUpload, as a client sends a file; the document."""
        target = self.request(
            "POST",
            "/v1/documents/upload-url",
            json={"filename": filename, "fileType": file_type, "contentLength": len(content)},
        )
        put = LOOPBACK.put(
            target["upload_url"], content=content, headers=target["headers"], timeout=60
        )
        assert put.status_code == 200, put.text
        return self.request(
            "POST",
            "/v1/documents/confirm-upload",
            json={
                "filename": filename,
                "fileType": file_type,
                "storagePath": target["storage_path"],
            },
        )
