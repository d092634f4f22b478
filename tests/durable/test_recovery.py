"""The durable-work pattern, proven on real worker processes (see `demo_worker.py`).

Each test runs the demo domain through `contentplatform.cli.run_worker` in a separate process,
with a DBOS system database of its own (a SQLite file, or a PostgreSQL database created here
when CONTENTPLATFORM_TEST_DATABASE_URL is set), and reads back what happened from the files
the workflows write and from DBOS's system database.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOSClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from contentplatform import __version__
from contentplatform.config import Settings
from contentplatform.kit import migrations
from contentplatform.kit.durable import APP_NAME
from tests.support.backends import Backends

DEMO = Path(__file__).with_name("demo_worker.py")
TIMEOUT = 90.0  # for any one thing to happen; a second or two, far more on a loaded CI host


@pytest.fixture(scope="module")
def app_database_url(backends: Backends, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Our own database, migrated: the session's on PostgreSQL, a fresh file on SQLite."""
    if backends.backend == "postgresql":
        url = backends.database_url
        data_dir = tmp_path_factory.mktemp("durable-data")
    else:
        data_dir = tmp_path_factory.mktemp("durable-app")
        url = f"sqlite:///{data_dir / 'app.db'}"
    migrations.upgrade(Settings(_env_file=None, data_dir=data_dir, database_url=url))  # type: ignore[call-arg]
    return url


@pytest.fixture
def dbos_database_url(backends: Backends, tmp_path: Path) -> Iterator[str]:
    """A DBOS system database for this test only, so the session's server is left alone."""
    if backends.backend != "postgresql":
        yield f"sqlite:///{tmp_path / 'dbos.sqlite'}"
        return
    server = make_url(backends.dbos_database_url).set(drivername="postgresql+psycopg")
    name = f"cp_test_demo_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        yield server.set(drivername="postgresql", database=name).render_as_string(False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    output: Path

    def tail(self) -> str:
        return self.output.read_text(errors="replace")[-4000:]

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise AssertionError(
                f"worker exited early with {self.process.returncode}:\n{self.tail()}"
            )

    def terminate(self) -> int:
        """SIGTERM, as a deployment stops it; returns its exit code."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker ignored SIGTERM for {TIMEOUT}s:\n{self.tail()}") from None


@dataclass
class Demo:
    dir: Path
    database_url: str
    dbos_database_url: str
    workers: list[Worker] = field(default_factory=list)

    def spawn(self, mode: str, reconcile_interval_seconds: float = 30, **extra: Any) -> Worker:
        config = {
            "dir": str(self.dir),
            "mode": mode,
            "database_url": self.database_url,
            "dbos_database_url": self.dbos_database_url,
            "reconcile_interval_seconds": reconcile_interval_seconds,
            **extra,
        }
        number = len(self.workers) + 1
        config_path = self.dir / f"worker{number}.json"
        config_path.write_text(json.dumps(config))
        output = self.dir / f"worker{number}.out"
        env = {k: v for k, v in os.environ.items() if not k.startswith("CONTENTPLATFORM_")}
        with output.open("wb") as sink:
            process = subprocess.Popen(
                [sys.executable, str(DEMO), str(config_path)],
                cwd=self.dir,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        worker = Worker(process, output)
        self.workers.append(worker)
        return worker

    def lines(self, name: str) -> list[str]:
        path = self.dir / name
        return path.read_text().splitlines() if path.exists() else []

    def go(self) -> None:
        (self.dir / "go").touch()

    def state(self) -> dict[str, Any]:
        return json.loads((self.dir / "state.json").read_text())

    def statuses(self, *workflow_ids: str) -> dict[str, Any]:
        """DBOS's record of each workflow, read from its system database (absent: never started)."""
        client = DBOSClient(system_database_url=self.dbos_database_url)
        try:
            found = client.list_workflows(
                workflow_ids=list(workflow_ids), load_input=False, load_output=False
            )
        finally:
            client.destroy()
        return {status.workflow_id: status for status in found}

    def status(self, workflow_id: str) -> str | None:
        found = self.statuses(workflow_id).get(workflow_id)
        return found.status if found else None


@pytest.fixture
def demo(app_database_url: str, dbos_database_url: str, tmp_path: Path) -> Iterator[Demo]:
    work = tmp_path / "work"
    work.mkdir()
    running = Demo(work, app_database_url, dbos_database_url)
    try:
        yield running
    finally:
        for worker in running.workers:
            if worker.process.poll() is None:
                worker.process.kill()
                worker.process.wait(10)


def wait_for(what: str, check: Callable[[], bool], worker: Worker | None = None) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        if worker is not None:
            worker.check_alive()
        if time.monotonic() > deadline:
            detail = f":\n{worker.tail()}" if worker else ""
            raise AssertionError(f"timed out after {TIMEOUT}s waiting for {what}{detail}")
        time.sleep(0.05)


def steps_of(demo: Demo, workflow_id: str) -> list[str]:
    return [line.split()[1] for line in demo.lines("steps.log") if line.split()[0] == workflow_id]


def attempts_of(demo: Demo, workflow_id: str) -> list[tuple[str, int]]:
    found = []
    for line in demo.lines("attempts.log"):
        wid, step, pid = line.split()
        if wid == workflow_id:
            found.append((step, int(pid)))
    return found


def test_a_workflow_killed_mid_step_finishes_after_restart_and_each_done_step_runs_once(
    demo: Demo,
) -> None:
    wid = "demo:crash"
    first = demo.spawn("start", workflow_id=wid)
    # Step 2 begins only once step 1's checkpoint is written: kill it then, in mid-step.
    wait_for(
        "step 2 to begin", lambda: ("step2", first.process.pid) in attempts_of(demo, wid), first
    )
    first.process.kill()
    first.process.wait(10)
    assert steps_of(demo, wid) == ["step1"]
    assert demo.status(wid) == "PENDING"

    demo.go()
    second = demo.spawn("serve")
    wait_for("step 3 to finish", lambda: "step3" in steps_of(demo, wid), second)
    wait_for("DBOS to record SUCCESS", lambda: demo.status(wid) == "SUCCESS", second)

    assert steps_of(demo, wid) == ["step1", "step2", "step3"]
    # Step 1 was checkpointed before the kill, so the restart skipped it; step 2 was cut off
    # and ran again; step 3 ran once, in the restarted process.
    assert attempts_of(demo, wid) == [
        ("step1", first.process.pid),
        ("step2", first.process.pid),
        ("step2", second.process.pid),
        ("step3", second.process.pid),
    ]
    assert demo.lines("events.log") == ["started"]  # the second process recovered, not restarted

    status = demo.statuses(wid)[wid]
    assert status.name.endswith("demo_workflow")
    assert status.app_version == __version__
    assert status.application_name == APP_NAME

    assert second.terminate() == 0, second.tail()
    assert demo.lines("events.log") == ["started", "stopped"]
    assert "Traceback" not in second.tail()


def seconds_to_a_clean_exit(worker: Worker) -> float:
    """How long a worker sent SIGTERM took to exit, which it must do with status 0 (bounded)."""
    started = time.monotonic()
    try:
        code = worker.process.wait(TIMEOUT)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"worker ignored SIGTERM:\n{worker.tail()}") from None
    assert code == 0, worker.tail()
    return time.monotonic() - started


def test_sigterm_lets_the_workflow_in_flight_finish(demo: Demo) -> None:
    wid = "demo:draining"
    # A grace far longer than the work left: a shutdown that waited all of it cannot pass for
    # one slowed by a loaded machine (DBOS also joins its background threads after the wait).
    worker = demo.spawn("start", workflow_id=wid, shutdown_grace_seconds=60)
    wait_for(
        "step 2 to begin", lambda: ("step2", worker.process.pid) in attempts_of(demo, wid), worker
    )
    worker.process.send_signal(signal.SIGTERM)
    demo.go()  # the work in flight can now finish within the shutdown's grace period
    took = seconds_to_a_clean_exit(worker)

    assert demo.status(wid) == "SUCCESS", worker.tail()
    assert took < 30, f"shutdown waited {took:.1f}s for work that could finish at once"
    assert steps_of(demo, wid) == ["step1", "step2", "step3"]


def test_sigterm_without_grace_stops_at_once_and_the_next_start_finishes_the_work(
    demo: Demo,
) -> None:
    """SHUTDOWN_GRACE_SECONDS=0: the worker stops without waiting for the step in flight, which
    the next start runs again, as after a crash (the step before it is not run again)."""
    wid = "demo:no-grace"
    first = demo.spawn("start", workflow_id=wid, shutdown_grace_seconds=0)
    wait_for(
        "step 2 to begin", lambda: ("step2", first.process.pid) in attempts_of(demo, wid), first
    )
    first.process.send_signal(signal.SIGTERM)  # step 2 waits for `go`, which has not come
    took = seconds_to_a_clean_exit(first)
    # The default grace (10 s) would have waited all of it for a step that cannot end.
    assert took < 9, f"shutdown took {took:.1f} s without a grace period"
    assert steps_of(demo, wid) == ["step1"]
    assert demo.status(wid) == "PENDING"

    demo.go()
    second = demo.spawn("serve")
    wait_for("DBOS to record SUCCESS", lambda: demo.status(wid) == "SUCCESS", second)
    assert steps_of(demo, wid) == ["step1", "step2", "step3"]
    assert [step for step, _ in attempts_of(demo, wid)] == ["step1", "step2", "step2", "step3"]


def test_the_reconciler_restarts_missing_work_once_and_gives_up_on_failed_work(
    demo: Demo,
) -> None:
    items = [
        {"id": "demo:missing", "kind": "ok", "status": "unfinished"},
        {"id": "demo:doomed", "kind": "fail", "status": "unfinished"},
        {"id": "demo:finished", "kind": "ok", "status": "done"},
    ]
    (demo.dir / "state.json").write_text(json.dumps({"items": items}))
    demo.go()
    worker = demo.spawn("serve", reconcile_interval_seconds=0.2)

    def passes() -> int:
        return demo.lines("reconcile.log").count("pass")

    wait_for(
        "the missing work to finish", lambda: "step3" in steps_of(demo, "demo:missing"), worker
    )
    wait_for(
        "the failed work to be given up",
        lambda: demo.state()["items"][1]["status"] == "failed",
        worker,
    )
    seen = passes()
    wait_for("three more reconcile passes", lambda: passes() >= seen + 3, worker)
    assert worker.terminate() == 0, worker.tail()

    log = [line for line in demo.lines("reconcile.log") if line != "pass"]
    # Restarted once each although "demo:missing" stays unfinished in our records for every
    # later pass: its workflow exists now, so the reconciler leaves it be.
    assert sorted(log) == ["give_up demo:doomed", "restart demo:doomed", "restart demo:missing"]
    assert log.index("restart demo:doomed") < log.index("give_up demo:doomed")
    assert steps_of(demo, "demo:missing") == ["step1", "step2", "step3"]
    assert [step for step, _ in attempts_of(demo, "demo:missing")] == ["step1", "step2", "step3"]
    assert attempts_of(demo, "demo:doomed") == [("fail", worker.process.pid)]
    assert attempts_of(demo, "demo:finished") == []

    doomed = demo.state()["items"][1]
    assert doomed["reason"] == "background work ended with status ERROR"
    assert demo.state()["items"][0]["status"] == "unfinished"
    assert demo.state()["items"][2] == items[2]

    statuses = demo.statuses("demo:missing", "demo:doomed", "demo:finished")
    assert {wid: s.status for wid, s in statuses.items()} == {
        "demo:missing": "SUCCESS",
        "demo:doomed": "ERROR",
    }


def test_work_starts_only_after_its_transaction_commits_and_only_once_per_id(demo: Demo) -> None:
    demo.go()
    worker = demo.spawn("commit")
    wait_for("the commit scenario", lambda: (demo.dir / "commit.json").exists(), worker)
    assert worker.terminate() == 0, worker.tail()

    result = json.loads((demo.dir / "commit.json").read_text())
    assert result["before_commit"] is None  # not started while the transaction was open
    assert result["after_commit"] in {"PENDING", "SUCCESS"}  # started once it committed
    assert result["result"] == "done"
    assert result["rolled_back"] is None

    assert demo.statuses("commit:rolled-back") == {}  # never started, not even later
    assert demo.status("commit:committed") == "SUCCESS"
    # Started four times under one id (after commit, twice at once, once after it finished).
    assert steps_of(demo, "commit:committed") == ["step1", "step2", "step3"]
    assert [step for step, _ in attempts_of(demo, "commit:committed")] == [
        "step1",
        "step2",
        "step3",
    ]
    assert attempts_of(demo, "commit:rolled-back") == []


def began(demo: Demo) -> set[str]:
    return {line.split()[0] for line in demo.lines("fair.log") if line.endswith(" begin")}


def ended(demo: Demo) -> set[str]:
    return {line.split()[0] for line in demo.lines("fair.log") if line.endswith(" end")}


def test_a_share_per_tenant_starts_another_tenants_work_beside_a_burst_once_older_entries_ran(
    demo: Demo,
) -> None:
    """Entries enqueued while the queue had no partitions have none, and a partitioned queue
    never takes them: the next version leaves the queue as it was until they have run, and the
    start after that partitions it. Then, two slots, one per tenant: a tenant's two entries,
    enqueued first, take one slot between them, and another tenant's entry starts in the other
    (without the share, the first tenant's two would take both and the other's would wait)."""
    tenant = str(uuid.uuid4())
    old = [[tenant, "old1"], [tenant, "old2"], [tenant, "old3"]]
    first = demo.spawn("fair", fair=old, gate="old-open", per_tenant=None, fair_workers=1)
    wait_for("the old entries enqueued", lambda: "enqueued" in demo.lines("events.log"), first)
    wait_for("the first old entry running", lambda: began(demo) == {"old1"}, first)
    first.process.kill()
    first.process.wait(TIMEOUT)

    second = demo.spawn("serve")
    (demo.dir / "old-open").touch()
    wait_for("the old entries run", lambda: ended(demo) == {"old1", "old2", "old3"}, second)
    assert "gets its share per tenant once what waits on it has run" in second.tail()
    assert second.terminate() == 0

    other = str(uuid.uuid4())
    new = [[tenant, "new1"], [tenant, "new2"], [other, "new3"]]
    third = demo.spawn("fair", fair=new, gate="new-open")
    wait_for("two new entries running", lambda: len(began(demo)) == 5, third)
    time.sleep(1.5)  # three polls of the queue: a third entry would have begun by now
    assert began(demo) - {"old1", "old2", "old3"} == {"new1", "new3"}, third.tail()
    (demo.dir / "new-open").touch()
    wait_for("all ended", lambda: len(ended(demo)) == 6, third)
    assert "gets its share per tenant" not in third.tail()
    assert third.terminate() == 0
