"""Issue 36's figures in one run: does each request's cost follow the tenant's own work?

    .venv/bin/python bench/scale.py                       # every part, SQLite and PostgreSQL
    .venv/bin/python bench/scale.py --quick               # fewer rounds and rows: a smoke run
    .venv/bin/python bench/scale.py --parts retrieval,lists --backends sqlite
    .venv/bin/python bench/scale.py --json figures.json   # also write every figure as JSON
                                    [--postgres postgresql://postgres@127.0.0.1:5432/test]

Gathers what the parts measure, each as a ratio to its own floor taken in the same run,
interleaved (so that the machine's load falls on both alike):

- `retrieval` (bench/scale_retrieval.py): a 1,000-chunk tenant's `chat.retrieve` beside a
  100,000-chunk neighbour against alone (<= 1.3x), and 100,000 chunks of its own against 1,000
  (<= 2x);
- `lists` (bench/scale_lists.py): `drafts.list` first page, `?search=`, `?status=` and
  `documents.list` at 100,000 rows of the tenant against 1,000 (<= 2x);
- `streams` (bench/scale_streams.py, SQLite: what a stream costs is the process's): 1,000 open
  chat streams against as many bare sse-starlette streams (memory per stream <= 2x, idle CPU
  <= 5% of a core), 200 readers of one answer all served, the first token of one answer against
  the bare stream's first event (<= 10x);
- `scheduler` (bench/scale_scheduler.py): 1,000 due jobs over 1,000 tenants against over 10
  (<= 2x on PostgreSQL);
- `path` (bench/list.py): `drafts.list` and `system.whoami` against the lean floor of the stack
  (>= 0.9x and >= 0.8x of the floor's req/s; meaningful on a quiet machine only).

Prints one line per figure (its ratio, the spread over rounds where the part gives one, the
target and whether it is met), and the load average before and after: read a run made under load
with care (load slows a floor more than the service, so ratios to it flatter). Asserts nothing;
exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MAINTENANCE_URL = "postgresql://postgres@127.0.0.1:5432/test"
BACKENDS = ("sqlite", "postgresql")


def _module(file: str) -> Any:
    """A bench script as a module (bench/list.py's name would shadow the builtin)."""
    spec = importlib.util.spec_from_file_location(f"bench_{Path(file).stem}", HERE / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _summaries(figures: Any) -> list[dict[str, Any]]:
    items = figures if isinstance(figures, list | tuple) else [figures]
    return [item.summary() for item in items]


# part -> backend -> what runs it, given --quick and the PostgreSQL maintenance URL.
Runner = Callable[[bool, str], Any]


def _retrieval(sqlite: bool) -> Runner:
    return lambda quick, url: _module("scale_retrieval.py").scale(
        sqlite, rounds=3 if quick else 7, database_url=url
    )


def _lists(sqlite: bool) -> Runner:
    return lambda quick, url: _module("scale_lists.py").scale(
        sqlite=sqlite,
        postgres=url,
        large=10_000 if quick else 100_000,
        rounds=2 if quick else 5,
    )


def _scheduler(sqlite: bool) -> Runner:
    return lambda quick, url: _module("scale_scheduler.py").scale(
        sqlite=sqlite, runs=1 if quick else 3, database_url=url
    )


def _path(sqlite: bool) -> Runner:
    return lambda quick, url: _module("list.py").scale(
        postgres=None if sqlite else url, rounds=1 if quick else 3, seconds=2 if quick else 5
    )


def _streams(sqlite: bool) -> Runner:
    # Open streams cost the process, not the database: measured on the embedded default only.
    if not sqlite:
        return lambda quick, url: []
    return lambda quick, url: _module("scale_streams.py").scale(
        streams=200 if quick else 1000, readers=200
    )


PARTS: dict[str, dict[str, Runner]] = {
    part: {"sqlite": make(True), "postgresql": make(False)}
    for part, make in (
        ("retrieval", _retrieval),
        ("lists", _lists),
        ("streams", _streams),
        ("scheduler", _scheduler),
        ("path", _path),
    )
}


def line(summary: dict[str, Any]) -> str:
    spread = summary.get("spread")
    spread_text = f" ({spread[0]:g}-{spread[1]:g})" if spread else ""
    comparison = ">=" if summary.get("at_least") else "<="
    met = "met" if summary.get("met") else "NOT met"
    return (
        f"  {summary['name']:<44} {summary['backend']:<10} {summary['ratio']:>7g}x{spread_text:<16}"
        f" target {comparison} {summary['target']:g}: {met}   [{summary['measure']}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--parts", default=",".join(PARTS), help="comma-separated: " + ",".join(PARTS)
    )
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--postgres", default=MAINTENANCE_URL)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    parts = [part.strip() for part in args.parts.split(",") if part.strip()]
    backends = [backend.strip() for backend in args.backends.split(",") if backend.strip()]
    for name in parts:
        if name not in PARTS:
            raise SystemExit(f"no part {name!r}: {', '.join(PARTS)}")
    for backend in backends:
        if backend not in BACKENDS:
            raise SystemExit(f"no backend {backend!r}: {', '.join(BACKENDS)}")

    print(f"bench/scale.py: load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    gathered: list[dict[str, Any]] = []
    failed: list[str] = []
    for part in parts:
        for backend in backends:
            started = time.monotonic()
            print(f"== {part} on {backend} ...", flush=True)
            try:
                summaries = _summaries(PARTS[part][backend](args.quick, args.postgres))
            except Exception:  # one part failing must not lose the others' figures
                traceback.print_exc()
                failed.append(f"{part} on {backend}")
                continue
            for summary in summaries:
                summary.setdefault("backend", backend)
                print(line(summary), flush=True)
            gathered += summaries
            print(f"   ({time.monotonic() - started:.0f} s)", flush=True)

    print(f"\nall figures (load average {os.getloadavg()[0]:.2f} at the end):")
    for summary in gathered:
        print(line(summary))
    if failed:
        print("parts that failed: " + ", ".join(failed))
    if args.json is not None:
        args.json.write_text(json.dumps(gathered, indent=2, default=str))


if __name__ == "__main__":
    main()
