"""What one API call costs a test: the suite's client over a real socket against the same app
reached in-process (tests/support/servers.py InProcessTransport), and what a new organization
costs on its first request.

    .venv/bin/python bench/calls.py [--rounds 6] [--calls 100] [--postgresql URL]

Starts the app as the test suite does (uvicorn in a thread of this process, SQLite in a temporary
directory, or two fresh PostgreSQL databases with --postgresql), then runs, from one synchronous
client as a test does, a test's typical sequence of calls (system.whoami, drafts.createDraft,
drafts.getById, drafts.list; over REST and over RPC), alternating the two transports round by
round so that both see the same load. Prints ms per call for each and the ratio. Asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contentplatform.app import create_app
from contentplatform.auth import devkeys
from contentplatform.auth.context import Role
from contentplatform.config import Settings
from contentplatform.kit import migrations
from tests.support.backends import postgres_databases
from tests.support.servers import AppServer


def sequence(client: httpx.Client, headers: dict[str, str]) -> int:
    """A test's typical calls, over REST then RPC: how many were made."""
    made = 0
    for _ in range(2):
        assert client.get("/v1/system/whoami", headers=headers).status_code == 200
        draft = client.post("/v1/drafts", json={"title": "A draft"}, headers=headers).json()
        assert client.get(f"/v1/drafts/{draft['id']}", headers=headers).status_code == 200
        assert client.get("/v1/drafts", params={"limit": 20}, headers=headers).status_code == 200
        rpc = "/api/rpc/"
        assert client.post(rpc + "system.whoami", json={}, headers=headers).status_code == 200
        assert client.post(rpc + "drafts.getById", json={"id": draft["id"]}, headers=headers)
        assert client.post(rpc + "drafts.list", json={"limit": 20}, headers=headers)
        made += 7
    return made


def timed(run: Callable[[], int]) -> float:
    """Milliseconds per call of `run`, which returns how many calls it made."""
    started = time.perf_counter()
    made = run()
    return (time.perf_counter() - started) * 1000 / made


def measure(server: AppServer, settings: Settings, rounds: int, calls: int) -> None:
    org = f"org_bench_{uuid.uuid4().hex[:8]}"
    token = devkeys.mint_token(settings.data_dir, org=org, user="admin", role=Role("admin"))
    headers = {"Authorization": f"Bearer {token}", "x-idp-org-id": org}
    results: dict[str, list[float]] = {"socket": [], "in-process": []}
    first: dict[str, list[float]] = {"socket": [], "in-process": []}
    with server.client() as over_socket, server.in_process_client() as in_process:
        clients = {"socket": over_socket, "in-process": in_process}
        for client in clients.values():  # warm-up: the tenant, the membership, the code paths
            sequence(client, headers)
        for _ in range(rounds):
            for name, client in clients.items():

                def round_of_calls(client: httpx.Client = client) -> int:
                    return sum(sequence(client, headers) for _ in range(calls // 14))

                results[name].append(timed(round_of_calls))
                # A new organization's first request makes its tenant and membership.
                for _ in range(5):
                    fresh = f"org_bench_{uuid.uuid4().hex[:8]}"
                    minted = devkeys.mint_token(
                        settings.data_dir, org=fresh, user="u", role=Role("admin")
                    )
                    new = {"Authorization": f"Bearer {minted}", "x-idp-org-id": fresh}
                    started = time.perf_counter()
                    assert client.get("/v1/system/whoami", headers=new).status_code == 200
                    first[name].append((time.perf_counter() - started) * 1000)
    socket_ms = statistics.median(results["socket"])
    in_process_ms = statistics.median(results["in-process"])
    print(f"database: {settings.resolved_database_url.split(':', 1)[0]}")
    print(f"socket (the suite's `client`):   {socket_ms:6.2f} ms per call (median of rounds)")
    print(f"in-process (the suite's `call`): {in_process_ms:6.2f} ms per call")
    print(f"in-process / socket: {in_process_ms / socket_ms:.2f}")
    for name, values in first.items():
        print(f"a new organization's first whoami, {name}: {statistics.median(values):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=140, help="calls per round and transport")
    parser.add_argument("--postgresql", help="a PostgreSQL server's maintenance database URL")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        data_dir = Path(directory)
        if args.postgresql:
            databases = postgres_databases(args.postgresql, f"cp_bench_{uuid.uuid4().hex[:8]}")
        else:
            databases = None
        urls = databases.__enter__() if databases else (None, None)
        try:
            settings = Settings(
                _env_file=None,
                env="local",
                data_dir=data_dir,
                database_url=urls[0],
                dbos_database_url=urls[1],
                log_level="WARNING",
                rate_limit="1000000/minute",
                scheduler_interval_seconds=0,
            )
            migrations.upgrade(settings)
            with AppServer(create_app(settings)) as server:
                measure(server, settings, args.rounds, args.calls)
        finally:
            if databases:
                databases.__exit__(None, None, None)


if __name__ == "__main__":
    main()
