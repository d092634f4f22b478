"""The request path against its floor: drafts.list, a cached documents.list and system.whoami.

    .venv/bin/python bench/list.py              # SQLite
    .venv/bin/python bench/list.py --postgres   # PostgreSQL: a database of its own, dropped after
    # options: --rounds 3, --seconds 5 (per wrk run), --connections 16, --drafts 1000,
    #          --write-seconds 10, --writers 16, --redis redis://127.0.0.1:6379/0

Starts `contentplatform serve` and, beside it, the lean floor (bench/floor.py) on the same
database and dev key; seeds one tenant with --drafts live drafts shaped like generated ones (and
some deleted ones and documents); then loads both with wrk, interleaved round by round so that
machine noise hits both alike. Prints req/s and p99 per target and round, the median ratios and
whether each target is met, then a write leg: --writers concurrent `drafts.update` callers.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from serving import free_port, service_env, supervised

# The repository root, for the test suite's throwaway PostgreSQL databases.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert

from contentplatform.config import Settings
from contentplatform.documents.models import Document
from contentplatform.drafts import seo
from contentplatform.drafts.models import Draft
from contentplatform.kit.db import Database, utcnow
from tests.support.backends import postgres_databases

BIN = Path(sys.executable).parent
HERE = Path(__file__).resolve().parent
MAINTENANCE_URL = "postgresql://postgres@127.0.0.1:5432/test"
ORG = "bench"
TARGETS = {"drafts.list": 0.9, "system.whoami": 0.8, "documents.list": 0.9}
WRITE_P99_MS = 250


# --- what is measured ---------------------------------------------------------------------------


@dataclass
class Run:
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int
    # CPU time the server process spent per request (all its threads): what the request path
    # costs, less sensitive to whatever else the machine runs than req/s.
    cpu_ms: float = 0.0


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
TICKS = os.sysconf("SC_CLK_TCK")


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(number) * _UNITS[unit]


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def wrk(
    url: str,
    headers: dict[str, str],
    seconds: float,
    connections: int,
    *,
    pid: int | None = None,
    script: Path | None = None,
) -> Run:
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency", "--timeout", "10s"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    if script is not None:
        command += ["-s", str(script)]
    cpu_before = cpu_seconds(pid) if pid else 0.0
    out = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    cpu = cpu_seconds(pid) - cpu_before if pid else 0.0
    percentile = dict(re.findall(r"^\s*(50|99)%\s+([\d.]+(?:us|ms|s))\s*$", out, re.M))
    if len(percentile) != 2:
        raise SystemExit(f"could not read wrk's output:\n{out}")
    failures = r"(?:Non-2xx or 3xx responses|connect|read|write|timeout):? (\d+)"
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return Run(
        requests_per_second=float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        p50_ms=_ms(percentile["50"]),
        p99_ms=_ms(percentile["99"]),
        requests=requests,
        errors=sum(int(n) for n in re.findall(failures, out)),
        cpu_ms=cpu * 1000 / max(requests, 1),
    )


# --- the two servers ----------------------------------------------------------------------------


@contextmanager
def databases(args: argparse.Namespace, scratch: Path) -> Iterator[dict[str, str]]:
    if not args.postgres:
        yield {}
        return
    name = f"cp_bench_list_{uuid.uuid4().hex[:8]}"
    with postgres_databases(args.postgres, name) as (database_url, dbos_url):
        yield {"database_url": database_url, "dbos_database_url": dbos_url}


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)


def tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


def dev_token(env: dict[str, str], role: str) -> str:
    return subprocess.run(
        [
            BIN / "contentplatform",
            "dev-token",
            "--org",
            ORG,
            "--user",
            f"bench-{role}",
            "--role",
            role,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


# --- the tenant's data --------------------------------------------------------------------------

PROSE = (
    "soil water compost seed harvest garden season root mulch bed tomato basil frost shade "
    "pollinator pruning yield drip irrigation raised planting weed nitrogen clay sandy loam"
)
WORDS = PROSE.split()


def sentence(rng: random.Random, words: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def article(rng: random.Random) -> tuple[str, str]:
    """A title and about 4 KB of HTML shaped like a generated article."""
    title = f"{sentence(rng, 6)[:-1]} guide"
    parts = [f"<p>{' '.join(sentence(rng) for _ in range(4))}</p>"]
    for section in range(4):
        parts.append(f"<h2>Section {section + 1}: {sentence(rng, 4)[:-1]}</h2>")
        parts += [
            f'<p>{" ".join(sentence(rng) for _ in range(3))} <a href="#s{n}">[{n}]</a></p>'
            for n in range(2)
        ]
    parts.append(
        "<h2>Sources</h2><ol>" + "".join(f"<li>Source {n}</li>" for n in range(6)) + "</ol>"
    )
    return title, "".join(parts)


def draft_row(rng: random.Random, tenant_id: uuid.UUID, n: int, deleted: bool) -> dict[str, Any]:
    title, content = article(rng)
    keywords = [rng.choice(WORDS) for _ in range(4)]
    seo_meta: dict[str, Any] = {
        "seo_title": title[:60],
        "meta_description": sentence(rng, 22)[:158],
        "slug": "-".join(title.lower().split()[:6]),
        "focus_keywords": keywords,
    }
    seo_meta["score_breakdown"] = seo.score(title, content, seo_meta).as_json()
    run_id = uuid.uuid4()
    created = utcnow() - timedelta(minutes=n)
    return {
        "id": uuid.uuid4(),
        "tenant_id": tenant_id,
        "title": title,
        "content": content,
        "content_text": re.sub(r"<[^>]+>", " ", content),
        "excerpt": sentence(rng, 25),
        "seo_meta": seo_meta,
        "seo_score": seo_meta["score_breakdown"]["total"],
        "status": rng.choice(["reviewing", "approved", "rejected", "published"]),
        "run_id": run_id,
        "provenance": {
            "writer": "offline",
            "provider": "offline",
            "model": "extractive-1",
            "prompt_version": "2026-11",
            "run_id": str(run_id),
            "generated_at": created.isoformat(),
            "sources": [
                {
                    "number": s + 1,
                    "chunk_id": str(uuid.uuid4()),
                    "document_id": str(uuid.uuid4()),
                    "filename": f"handbook-{s}.pdf",
                    "heading": sentence(rng, 5),
                }
                for s in range(6)
            ],
            "sections": [{"heading": f"Section {s + 1}", "sources": [1, 2, 3]} for s in range(4)],
            "usage": {"input_tokens": 5200, "output_tokens": 1400},
            "seo_score_at_generation": seo_meta["score_breakdown"]["total"],
        },
        "version": 1,
        "created_at": created,
        "updated_at": created,
        "deleted_at": created if deleted else None,
    }


def document_row(tenant_id: uuid.UUID, n: int) -> dict[str, Any]:
    created = utcnow() - timedelta(hours=n)
    return {
        "id": uuid.uuid4(),
        "tenant_id": tenant_id,
        "filename": f"handbook-{n}.pdf",
        "file_type": "pdf",
        "storage_path": f"{ORG}/uploads/{uuid.uuid4().hex}/handbook-{n}.pdf",
        "source": "upload",
        "source_metadata": {"knowledge": {"audience": "gardeners", "tags": ["soil", "water"]}},
        "status": "ready",
        "chunk_count": 40,
        "document_version": 1,
        "content_hash": uuid.uuid4().hex * 2,
        "size_bytes": 180_000,
        "created_at": created,
        "updated_at": created,
    }


async def seed(database_url: str, tenant_id: uuid.UUID, drafts: int, documents: int) -> None:
    rng = random.Random(14)
    db = Database(database_url)
    try:
        async with db.unit_of_work() as session:
            rows = [
                draft_row(rng, tenant_id, n, deleted=n % 10 == 9) for n in range(drafts * 10 // 9)
            ]
            await session.execute(insert(Draft.__table__), rows)
            await session.execute(
                insert(Document.__table__), [document_row(tenant_id, n) for n in range(documents)]
            )
        async with db.engine.connect() as connection:
            await connection.exec_driver_sql("ANALYZE")
            await connection.commit()
    finally:
        await db.dispose()


# --- the run ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--postgres",
        nargs="?",
        const=MAINTENANCE_URL,
        default=None,
        help="run on PostgreSQL: a maintenance database to create the bench's own on",
    )
    parser.add_argument(
        "--redis", default=None, help="give the service this Redis (rate limits, cache)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--drafts", type=int, default=1000)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--write-seconds", type=float, default=10)
    args = parser.parse_args()
    with running(args) as (service, floor, headers, scratch):
        measure(args, headers, service, floor)
        write_leg(service[0], service[1], headers, args, scratch)


def scale(
    *,
    postgres: str | None = None,
    rounds: int = 3,
    seconds: float = 5,
    connections: int = 16,
    drafts: int = 1000,
) -> list[PathFigures]:
    """The request path's figures (drafts.list and whoami against the floor), for bench/scale.py."""
    args = argparse.Namespace(
        postgres=postgres,
        redis=None,
        rounds=rounds,
        seconds=seconds,
        connections=connections,
        drafts=drafts,
        documents=100,
    )
    with running(args) as (service, floor, headers, _):
        measured = measure(args, headers, service, floor)
    backend = "PostgreSQL" if postgres else "SQLite"
    return [
        PathFigures(name, backend, runs)
        for name, runs in measured.items()
        if name != "documents.list"  # held to whoami's floor: a cache, not the path
    ]


@contextmanager
def running(
    args: argparse.Namespace,
) -> Iterator[tuple[tuple[str, int], tuple[str, int], dict[str, str], Path]]:
    """The service and the floor on one seeded database: (url, pid) of each, the headers of the
    tenant's admin, the scratch directory."""
    if shutil.which("wrk") is None:
        raise SystemExit("bench/list.py needs wrk (https://github.com/wg/wrk): apt-get install wrk")

    with tempfile.TemporaryDirectory() as scratch_dir, ExitStack() as stack:
        scratch = Path(scratch_dir)
        urls = stack.enter_context(databases(args, scratch))
        settings = {
            **urls,
            **(
                {"redis_url": args.redis, "redis_prefix": f"bench:{uuid.uuid4().hex[:8]}:"}
                if args.redis
                else {}
            ),
        }
        env = service_env(scratch, **settings)
        service_port, floor_port = free_port(), free_port()
        service_url, floor_url = (
            f"http://127.0.0.1:{service_port}",
            f"http://127.0.0.1:{floor_port}",
        )
        service_log, floor_log = scratch / "service.log", scratch / "floor.log"
        service = start(
            [str(BIN / "contentplatform"), "serve", "--port", str(service_port)], env, service_log
        )
        stack.enter_context(supervised(service, service_url, lambda: tail(service_log)))

        admin = dev_token(env, "admin")
        headers = {"Authorization": f"Bearer {admin}", "x-idp-org-id": ORG}
        me = httpx.get(f"{service_url}/v1/system/whoami", headers=headers, timeout=30).json()
        database_url = Settings(
            _env_file=None, data_dir=scratch / "data", **urls
        ).resolved_database_url  # type: ignore[call-arg]
        asyncio.run(seed(database_url, uuid.UUID(me["tenant_id"]), args.drafts, args.documents))

        floor = start(
            [
                sys.executable,
                str(HERE / "floor.py"),
                "--database-url",
                database_url,
                "--data-dir",
                str(scratch / "data"),
                "--port",
                str(floor_port),
            ],
            env,
            floor_log,
        )
        stack.enter_context(
            supervised(
                floor,
                floor_url,
                lambda: tail(floor_log),
                probe="/v1/system/whoami",
                headers=headers,
                name="the floor",
            )
        )

        backend = "PostgreSQL" if args.postgres else "SQLite"
        print(
            f"bench/list.py on {backend}{' + Redis' if args.redis else ''}: {args.drafts} live "
            f"drafts (+{args.drafts // 9} deleted), {args.documents} documents; "
            f"wrk -t1 -c{args.connections}, {args.rounds} rounds of {args.seconds:g} s, "
            "service and floor interleaved"
        )
        yield (service_url, service.pid), (floor_url, floor.pid), headers, scratch


@dataclass
class PathFigures:
    """One operation against its floor, round by round (service run, floor run)."""

    name: str
    backend: str
    runs: list[tuple[Run, Run]]

    def summary(self) -> dict[str, Any]:
        ratios = [o.requests_per_second / t.requests_per_second for o, t in self.runs]
        ratio = statistics.median(ratios)
        return {
            "name": f"request path: {self.name}",
            "backend": self.backend,
            "measure": "req/s of the service / of the lean floor (bench/floor.py), wrk",
            "ratio": round(ratio, 2),
            "spread": [round(min(ratios), 2), round(max(ratios), 2)],
            "cpu_ratio": round(statistics.median(t.cpu_ms / o.cpu_ms for o, t in self.runs), 2),
            "target": TARGETS[self.name],
            "at_least": True,
            "met": ratio >= TARGETS[self.name],
        }


# (target, the service's path, the floor's path it is held to)
LOADS = [
    ("drafts.list", "/v1/drafts?limit=50", "/v1/drafts?limit=50"),
    ("documents.list", "/v1/documents?limit=50", "/v1/system/whoami"),
    ("system.whoami", "/v1/system/whoami", "/v1/system/whoami"),
]


def measure(
    args: argparse.Namespace,
    headers: dict[str, str],
    service: tuple[str, int],
    floor: tuple[str, int],
) -> dict[str, list[tuple[Run, Run]]]:
    """Each round runs every load on the service and on the floor, one right after the other,
    alternating which goes first, so that what else the machine does hits both alike."""

    def run(server: tuple[str, int], path: str, seconds: float) -> Run:
        url, pid = server
        return wrk(f"{url}{path}", headers, seconds, args.connections, pid=pid)

    for _, ours, theirs in LOADS:  # warm-up; fills the documents cache
        run(service, ours, 1)
        run(floor, theirs, 1)
    measured: dict[str, list[tuple[Run, Run]]] = {name: [] for name, _, _ in LOADS}
    for round_ in range(args.rounds):
        for name, ours_path, theirs_path in LOADS:
            if round_ % 2 == 0:
                ours = run(service, ours_path, args.seconds)
                theirs = run(floor, theirs_path, args.seconds)
            else:
                theirs = run(floor, theirs_path, args.seconds)
                ours = run(service, ours_path, args.seconds)
            measured[name].append((ours, theirs))
            errors = (
                f" | errors {ours.errors}/{theirs.errors}" if ours.errors + theirs.errors else ""
            )
            print(
                f"  round {round_ + 1} {name:14} service {ours.requests_per_second:6.0f} req/s "
                f"p99 {ours.p99_ms:6.1f} ms {ours.cpu_ms:5.2f} ms CPU | floor {theirs_path:19} "
                f"{theirs.requests_per_second:6.0f} req/s p99 {theirs.p99_ms:6.1f} ms "
                f"{theirs.cpu_ms:5.2f} ms CPU{errors}"
            )
    print("results (medians over the rounds; ratios taken round by round, service / floor):")
    for name, _, theirs_path in LOADS:
        runs = measured[name]
        ratio = statistics.median(o.requests_per_second / t.requests_per_second for o, t in runs)
        cpu_ratio = statistics.median(t.cpu_ms / o.cpu_ms for o, t in runs if o.cpu_ms)
        target = TARGETS[name]
        print(
            f"  {name:14} {statistics.median(o.requests_per_second for o, _ in runs):6.0f} req/s "
            f"p99 {statistics.median(o.p99_ms for o, _ in runs):6.1f} ms; floor {theirs_path} "
            f"{statistics.median(t.requests_per_second for _, t in runs):6.0f} req/s "
            f"p99 {statistics.median(t.p99_ms for _, t in runs):6.1f} ms; "
            f"ratio {ratio:.2f} (target >= {target}: {'met' if ratio >= target else 'NOT met'}); "
            f"CPU per request, floor / service: {cpu_ratio:.2f}"
        )
    return measured


WRITER_SCRIPT = """
local ids = {%(ids)s}
local n = 0
wrk.method = "PATCH"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  local body = '{"title":"Edited by writer ' .. n .. '"}'
  return wrk.format(nil, "/v1/drafts/" .. ids[(n %% #ids) + 1], nil, body)
end
"""


def write_leg(
    url: str, pid: int, headers: dict[str, str], args: argparse.Namespace, scratch: Path
) -> None:
    """--writers connections editing drafts at once, each request a real edit (a new title: the
    draft and a new revision written)."""
    page = httpx.get(f"{url}/v1/drafts?limit={args.writers}", headers=headers, timeout=30).json()
    ids = [draft["id"] for draft in page["data"]]
    script = scratch / "writers.lua"
    script.write_text(WRITER_SCRIPT % {"ids": ", ".join(f'"{i}"' for i in ids)})
    run = wrk(f"{url}/v1/drafts", headers, args.write_seconds, args.writers, pid=pid, script=script)
    met = run.p99_ms < WRITE_P99_MS and run.errors == 0
    print(
        f"write leg: {args.writers} concurrent drafts.update for {args.write_seconds:g} s: "
        f"{run.requests} writes, {run.requests_per_second:.0f}/s, p50 {run.p50_ms:.1f} ms, "
        f"p99 {run.p99_ms:.1f} ms, errors {run.errors}, {run.cpu_ms:.2f} ms CPU each "
        f"(target p99 < {WRITE_P99_MS} ms and no errors: {'met' if met else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
