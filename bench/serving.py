"""What the benchmarks share: a `contentplatform serve` child process on a free loopback port,
on a database of its own if asked."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

# The repository root, for the settings and the test suite's throwaway PostgreSQL databases.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contentplatform.config import Settings
from tests.support.backends import postgres_databases

# Where this interpreter's scripts are: the venv's `contentplatform`.
BIN = Path(sys.executable).parent


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


def timed_ms(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def interleaved_p95(
    served: Callable[[], object], floor: Callable[[], object], rounds: int, requests: int
) -> tuple[float, float]:
    """The p95 in ms of `served` and of `floor`, each called `rounds` x `requests` times, in
    turn, so both see the same machine (a figure means something only beside its floor)."""
    served_ms: list[float] = []
    floor_ms: list[float] = []
    for _ in range(rounds):
        for _ in range(requests):
            served_ms.append(timed_ms(served))
            floor_ms.append(timed_ms(floor))
    return p95(served_ms), p95(floor_ms)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def service_env(directory: Path, **settings: str) -> dict[str, str]:
    """The environment of a service with a fresh data directory (SQLite) and no rate limits."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTENTPLATFORM_")}
    env.update(
        CONTENTPLATFORM_DATA_DIR=str(directory / "data"),
        CONTENTPLATFORM_LOG_LEVEL="WARNING",
        CONTENTPLATFORM_RATE_LIMIT="1000000/minute",
        CONTENTPLATFORM_RATE_LIMIT_PUBLIC="1000000/minute",
    )
    env.update({f"CONTENTPLATFORM_{key.upper()}": value for key, value in settings.items()})
    return env


@contextmanager
def supervised(
    process: subprocess.Popen[bytes],
    url: str,
    tail: Callable[[], str],
    *,
    probe: str = "/readyz",
    headers: dict[str, str] | None = None,
    name: str = "the service",
    within: float = 60,
) -> Iterator[None]:
    """Wait (at most `within` s) until `name` answers 200 at `probe`; terminate it afterwards."""
    try:
        deadline = time.monotonic() + within
        while True:
            if process.poll() is not None:
                raise SystemExit(f"{name} exited with {process.returncode}:\n{tail()}")
            try:
                if httpx.get(f"{url}{probe}", headers=headers, timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"{name} did not get ready in {within:g} s:\n{tail()}")
            time.sleep(0.1)
        yield
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def dev_headers(
    env: dict[str, str], directory: Path, org: str, role: str = "editor"
) -> dict[str, str]:
    """The headers of a `bench` user of `org` with `role`, its token from `contentplatform
    dev-token` on the service's data directory (`env`)."""
    token = subprocess.run(
        [BIN / "contentplatform", "dev-token", "--org", org, "--user", "bench", f"--role={role}"],
        env=env,
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return {"Authorization": f"Bearer {token}", "x-idp-org-id": org}


@contextmanager
def serving(
    directory: Path, env: dict[str, str], *, within: float = 60
) -> Iterator[tuple[str, int]]:
    """`contentplatform serve` on a free loopback port with `env`, its log in
    `directory/service.log`, ready (within `within` s): its URL and pid. A failure inside prints
    the log's end."""
    port = free_port()
    log_path = directory / "service.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [BIN / "contentplatform", "serve", "--port", str(port)],
            env=env,
            cwd=directory,  # no stray .env file
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"

    def tail() -> str:
        return log_path.read_text(errors="replace")[-4000:]

    with supervised(process, url, tail, within=within):
        try:
            yield url, process.pid
        except BaseException:
            print(f"the service's log ends:\n{tail()}", file=sys.stderr)
            raise


@dataclass(frozen=True)
class OwnService:
    """A service on a database of its own: its URL, the environment it runs with, and the URL
    of its database (for seeding and for the floor's queries)."""

    url: str
    env: dict[str, str]
    database_url: str


def own_service(
    stack: ExitStack, directory: Path, postgres: str | None, name: str, *, within: float = 300
) -> OwnService:
    """`serving` on a SQLite file in `directory`, or, given the URL of a PostgreSQL server, on
    databases it makes there (`name` and a random suffix), which `stack` drops once it has
    stopped the service. `within`: a loaded machine can take a minute to start one."""
    urls: dict[str, str] = {}
    if postgres:
        made = f"{name}_{uuid.uuid4().hex[:6]}"
        database_url, dbos_url = stack.enter_context(postgres_databases(postgres, made))
        urls = {"database_url": database_url, "dbos_database_url": dbos_url}
    env = service_env(directory, **urls)
    url, _pid = stack.enter_context(serving(directory, env, within=within))
    settings = Settings(_env_file=None, data_dir=directory / "data", **urls)  # type: ignore[call-arg]
    return OwnService(url, env, settings.resolved_database_url)
