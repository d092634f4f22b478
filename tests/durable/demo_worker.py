"""A stand-in domain for the durable-work tests, run as its own process.

    python demo_worker.py <config.json>

The JSON config carries the settings values (`database_url`, `dbos_database_url`,
`reconcile_interval_seconds`), the working directory `dir` the workflows write to, and `mode`:

- `serve`: run the worker (DBOS, the reconciler) and nothing else. A restarted worker in this
  mode only recovers what DBOS left pending and what the reconciler finds.
- `start`: as `serve`, after starting `demo_workflow` under the config's `workflow_id`.
- `commit`: as `serve`, after exercising `start_after_commit` (writes `commit.json`).
- `fair`: as `serve`, after enqueueing `held_workflow` on the queue `demo.fair` for the
  config's `fair` list of `[tenant id, name]` pairs, in order, once the worker is configured.
  The queue runs `fair_workers` at once (2) and `per_tenant` of one tenant's (1; null: no share).

Everything runs through `contentplatform.cli.run_worker`, so the worker is configured exactly as
in production (application version, system database, reconciler, SIGTERM handling).

Files in `dir`:
- `steps.log`: `<workflow id> <step>` once a step has finished its work.
- `attempts.log`: `<workflow id> <step> <pid>` whenever a step begins (a re-run shows twice).
- `go`: step 2 waits until it exists.
- `state.json`: the domain's records, `{"items": [{"id", "kind", "status", "reason"?}]}`;
  `status` "unfinished" makes the reconcile source report the item; `kind` "ok" runs
  `demo_workflow`, "fail" runs `failing_workflow`; `give_up` sets status "failed" and the reason.
- `reconcile.log`: `pass` per reconcile pass, `restart <id>` per restart, `give_up <id>`.
- `fair.log`: `<name> begin` when a held workflow begins, `<name> end` once its `gate` file
  exists.
"""

from __future__ import annotations

import asyncio
import faulthandler
import json
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

from dbos import DBOS
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.cli import run_worker
from contentplatform.config import Settings
from contentplatform.core import runtime
from contentplatform.kit import durable

config: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text())
WORK = Path(config["dir"])


def append(name: str, line: str) -> None:
    with (WORK / name).open("a") as file:
        file.write(line + "\n")


@DBOS.step()
async def step_one() -> None:
    append("attempts.log", f"{DBOS.workflow_id} step1 {os.getpid()}")
    append("steps.log", f"{DBOS.workflow_id} step1")


@DBOS.step()
async def step_two() -> None:
    append("attempts.log", f"{DBOS.workflow_id} step2 {os.getpid()}")
    # Another process (the test) creates the file, so there is nothing to await but the disk.
    while not (WORK / "go").exists():  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    append("steps.log", f"{DBOS.workflow_id} step2")


@DBOS.step()
async def step_three() -> None:
    append("attempts.log", f"{DBOS.workflow_id} step3 {os.getpid()}")
    append("steps.log", f"{DBOS.workflow_id} step3")


@DBOS.workflow()
async def demo_workflow() -> str:
    await step_one()
    await step_two()
    await step_three()
    return "done"


@DBOS.workflow()
async def failing_workflow() -> None:
    append("attempts.log", f"{DBOS.workflow_id} fail {os.getpid()}")
    raise RuntimeError("the demo work failed")


WORKFLOWS = {"ok": demo_workflow, "fail": failing_workflow}

FAIR = durable.declare_queue(
    "demo.fair",
    worker_concurrency=config.get("fair_workers", 2),
    per_tenant=config.get("per_tenant", 1),
)


@DBOS.workflow()
async def held_workflow(tenant_id: str, name: str, gate: str) -> None:
    append("fair.log", f"{name} begin")
    while not (WORK / gate).exists():  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    append("fair.log", f"{name} end")


def read_state() -> dict[str, Any]:
    path = WORK / "state.json"
    return json.loads(path.read_text()) if path.exists() else {"items": []}


def write_state(state: dict[str, Any]) -> None:
    path = WORK / "state.json.tmp"
    path.write_text(json.dumps(state))
    path.replace(WORK / "state.json")


def restarter(item: dict[str, Any]) -> Any:
    async def restart() -> None:
        append("reconcile.log", f"restart {item['id']}")
        await durable.start(WORKFLOWS[item["kind"]], item["id"])

    return restart


def giver_up(item: dict[str, Any]) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        await session.execute(text("SELECT 1"))  # the pass's unit of work is open and usable
        append("reconcile.log", f"give_up {item['id']}")
        state = read_state()
        for record in state["items"]:
            if record["id"] == item["id"]:
                record.update(status="failed", reason=reason)
        write_state(state)

    return give_up


@durable.reconcile_source("demo")
async def unfinished_demo_work(session: AsyncSession) -> list[durable.Unfinished]:
    await session.execute(text("SELECT 1"))
    append("reconcile.log", "pass")
    return [
        durable.Unfinished(item["id"], restarter(item), giver_up(item))
        for item in read_state()["items"]
        if item["status"] == "unfinished"
    ]


class Boom(Exception):
    pass


async def exercise_start_after_commit() -> None:
    db = runtime.current().db
    result: dict[str, Any] = {}

    try:
        async with db.unit_of_work() as session:
            durable.start_after_commit(session, demo_workflow, "commit:rolled-back")
            await session.execute(text("SELECT 1"))
            raise Boom
    except Boom:
        pass

    async with db.unit_of_work() as session:
        durable.start_after_commit(session, demo_workflow, "commit:committed")
        await session.execute(text("SELECT 1"))
        status = await DBOS.get_workflow_status_async("commit:committed")
        result["before_commit"] = status.status if status else None
    status = await DBOS.get_workflow_status_async("commit:committed")
    result["after_commit"] = status.status if status else None

    # Two more starts under the same id, one of them while the first run may still be going.
    await asyncio.gather(
        durable.start(demo_workflow, "commit:committed"),
        durable.start(demo_workflow, "commit:committed"),
    )
    result["result"] = await (await DBOS.retrieve_workflow_async("commit:committed")).get_result()
    await durable.start(demo_workflow, "commit:committed")
    status = await DBOS.get_workflow_status_async("commit:rolled-back")
    result["rolled_back"] = status.status if status else None
    (WORK / "commit.json").write_text(json.dumps(result))


def passes() -> int:
    path = WORK / "reconcile.log"
    return path.read_text().split().count("pass") if path.exists() else 0


async def act() -> None:
    if config["mode"] == "start":
        await durable.start(demo_workflow, config["workflow_id"])
        append("events.log", "started")
    elif config["mode"] == "commit":
        await exercise_start_after_commit()
    elif config["mode"] == "fair":
        # The queues are registered before this worker's reconciler makes its first pass (the
        # passes logged before are earlier workers').
        earlier = passes()
        while passes() == earlier:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        # A queue stored before is polled from launch on, and its poller reads the settings
        # `configure` stored at its next poll (every 0.5 s): entries enqueued sooner may still
        # be taken under the settings before.
        await asyncio.sleep(1)
        for tenant_id, name in config["fair"]:
            await durable.start(
                held_workflow, f"fair:{name}", tenant_id, name, config["gate"], queue=FAIR
            )
        append("events.log", "enqueued")


def report_failure(action: asyncio.Task[None]) -> None:
    if not action.cancelled() and action.exception() is not None:
        error = action.exception()
        traceback.print_exception(type(error), error, error.__traceback__)  # for the test's output
        sys.stderr.flush()


async def main() -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        env="local",
        data_dir=WORK / "data",
        database_url=config["database_url"],
        dbos_database_url=config["dbos_database_url"],
        reconcile_interval_seconds=config["reconcile_interval_seconds"],
        shutdown_grace_seconds=config.get("shutdown_grace_seconds", 10),
    )
    # run_worker launches DBOS before its first await, so this task runs with DBOS up.
    action = asyncio.create_task(act())
    action.add_done_callback(report_failure)
    await run_worker(settings)
    action.cancel()
    if action.done() and not action.cancelled():
        action.result()  # an exercise that failed fails the process
    append("events.log", "stopped")


if __name__ == "__main__":
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # stacks on demand, for hangs
    asyncio.run(main())
