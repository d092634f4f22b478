"""A stand-in domain for the durable-work tests, run as its own process.

    python demo_worker.py <config.json>

The JSON config carries the settings values (`database_url`, `dbos_database_url`,
`reconcile_interval_seconds`), the working directory `dir` the workflows write to, and `mode`:

- `serve`: run the worker (DBOS, the reconciler) and nothing else. A restarted worker in this
  mode only recovers what DBOS left pending and what the reconciler finds.
- `start`: as `serve`, after starting `demo_workflow` under the config's `workflow_id`.
- `commit`: as `serve`, after exercising `start_after_commit` (writes `commit.json`).

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


async def act() -> None:
    if config["mode"] == "start":
        await durable.start(demo_workflow, config["workflow_id"])
        append("events.log", "started")
    elif config["mode"] == "commit":
        await exercise_start_after_commit()


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
