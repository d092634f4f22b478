"""analytics.createExport, listExports, getExport and deleteExport over REST and RPC: the
durable workflow writes the file, the signed URL downloads it exactly."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from sqlalchemy import update

from contentplatform.analytics.exports import durable, reports
from contentplatform.analytics.models import Export
from contentplatform.config import Settings
from contentplatform.credits import repository as ledger
from contentplatform.kit import durable as kit_durable
from contentplatform.kit.db import Database, utcnow
from contentplatform.storage.store import ObjectStore
from tests.analytics.exports.support import Exports, add_runs, at
from tests.support.database import run_on
from tests.support.orgs import org_fixture
from tests.support.servers import AppServer

pytestmark = pytest.mark.shared_org

exports = org_fixture(Exports)
other = org_fixture(Exports, second=True)

COLUMNS = "id,job_id,status,step,started_at,finished_at,duration_ms,error"
# Runs of the organization's job (made once per organization): three in March 2025, one after.
RUNS: list[dict[str, Any]] = [
    {
        "status": "completed",
        "step": "publish",
        "started_at": at("2025-03-03T10:00:00"),
        "finished_at": at("2025-03-03T10:01:30"),
    },
    {
        "status": "failed",
        "step": "draft",
        "started_at": at("2025-03-10T08:00:00"),
        "finished_at": at("2025-03-10T08:00:01.500000"),
        "error": '=HYPERLINK("http://evil","click")',
    },
    {
        "status": "failed",
        "step": "research",
        "started_at": at("2025-03-31T23:00:00"),
        "finished_at": None,
        "error": "-2+3, @SUM(A1)",
    },
    {"status": "completed", "step": "publish", "started_at": at("2025-04-01T00:00:00")},
]
_seeded: dict[str, tuple[str, list[str]]] = {}


@pytest.fixture
def runs(exports: Exports, settings: Settings) -> tuple[str, list[str]]:
    """The organization's job and its runs' ids (in RUNS' order)."""
    if exports.org not in _seeded:
        job = exports.ok("jobs.create", {"name": "Runs", "topics": ["Soil"]}, role="editor")
        ids = add_runs(settings, exports.tenant_id, job["id"], RUNS)
        _seeded[exports.org] = (job["id"], ids)
    return _seeded[exports.org]


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """automation_runs held before its first row until the test opens the gate (opened at the
    end in any case, so no workflow is left waiting)."""
    opened = threading.Event()
    report = reports.REPORTS["automation_runs"]

    async def held(db: Database, scope: reports.Scope) -> reports.Batches:
        await asyncio.to_thread(opened.wait)  # set from the test's thread
        async for batch in report.rows(db, scope):
            yield batch

    monkeypatch.setitem(reports.REPORTS, "automation_runs", dataclasses.replace(report, rows=held))
    yield opened
    opened.set()


def until_one_is(exports: Exports, export_ids: list[str], status: str) -> dict[str, Any]:
    """The first of the exports seen in `status` (bounded)."""
    deadline = time.monotonic() + 30
    while True:
        for export_id in export_ids:
            found = exports.get(export_id)
            if found["status"] == status:
                return found
        assert time.monotonic() < deadline, f"none of {export_ids} is {status}"
        time.sleep(0.02)


def test_a_csv_export_is_written_and_downloaded_exactly(exports: Exports, runs):
    job_id, ids = runs
    made = exports.create()
    assert made["status"] == "queued" and made["format"] == "csv"
    assert made["download_url"] is None and made["row_count"] is None
    assert made["params"] == {
        "date_from": "2025-03-01", "date_to": "2025-03-31", "time_zone": "UTC", "filters": {},
    }  # fmt: skip
    export = exports.wait(made["id"])
    assert export["status"] == "succeeded", export
    assert export["created_by"] == exports.users["member"]
    body = exports.download(export["download_url"])
    assert body.status_code == 200, body.text
    # Formula-like text gets a leading quote (OWASP); quoting is the csv module's.
    expected = (
        f"{COLUMNS}\r\n"
        f"{ids[0]},{job_id},completed,publish,2025-03-03T10:00:00Z,2025-03-03T10:01:30Z,90000,\r\n"
        f"{ids[1]},{job_id},failed,draft,2025-03-10T08:00:00Z,2025-03-10T08:00:01.500000Z,1500,"
        '"\'=HYPERLINK(""http://evil"",""click"")"\r\n'
        f'{ids[2]},{job_id},failed,research,2025-03-31T23:00:00Z,,,"\'-2+3, @SUM(A1)"\r\n'
    )
    assert body.content.decode() == expected
    assert export["row_count"] == 3 and export["bytes"] == len(expected.encode())
    assert export["finished_at"] is not None
    kept = export["file_expires_at"]
    assert kept is not None and kept > export["finished_at"]
    # Each getExport signs a URL afresh; the record is otherwise the same.
    again = exports.get(made["id"])
    assert {k: v for k, v in again.items() if k != "download_url"} == {
        k: v for k, v in export.items() if k != "download_url"
    }


def test_jsonl_with_filters_carries_values_unguarded(exports: Exports, runs):
    job_id, ids = runs
    export = exports.written(format="jsonl", filters={"status": "failed", "jobId": job_id})
    assert export["params"]["filters"] == {"status": "failed", "job_id": job_id}
    lines = exports.download(export["download_url"]).content.decode().splitlines()
    assert [json.loads(line) for line in lines] == [
        {
            "id": ids[1], "job_id": job_id, "status": "failed", "step": "draft",
            "started_at": "2025-03-10T08:00:00Z", "finished_at": "2025-03-10T08:00:01.500000Z",
            "duration_ms": 1500, "error": RUNS[1]["error"],
        },
        {
            "id": ids[2], "job_id": job_id, "status": "failed", "step": "research",
            "started_at": "2025-03-31T23:00:00Z", "finished_at": None, "duration_ms": None,
            "error": "-2+3, @SUM(A1)",
        },
    ]  # fmt: skip
    assert export["row_count"] == 2


def test_an_ai_usage_export_has_its_header(exports: Exports):
    export = exports.written(report="ai_usage", filters={"kind": "generation.article"})
    body = exports.download(export["download_url"]).content.decode()
    assert body == "bucket_start,bucket_end,kind,credits,operations,input_tokens,output_tokens\r\n"
    assert export["row_count"] == 0


def test_the_failures_report_names_each_failed_run_and_its_reason(exports: Exports, runs):
    _, ids = runs
    export = exports.written(report="automation_failures", format="jsonl")
    lines = exports.download(export["download_url"]).content.decode().splitlines()
    found = [json.loads(line) for line in lines]
    assert [(row["id"], row["status"], row["reason"], row["step"]) for row in found] == [
        (ids[1], "failed", "unknown", "draft"),
        (ids[2], "failed", "unknown", "research"),
    ]


def test_the_usage_events_report_has_one_row_per_line_item(exports: Exports, settings: Settings):
    made = uuid.uuid4()

    async def scenario(db: Database) -> None:
        async with db.sessionmaker() as session:
            await ledger.add_entries(
                session,
                exports.tenant_id,
                [
                    {
                        "id": made,
                        "entry_type": "debit",
                        "amount": -3,
                        "balance_after": 0,
                        "kind": "chat.message",
                        "bucket_id": None,
                        "reservation_id": None,
                        "period": None,
                        "actor_type": "system",
                        "actor_id": None,
                        "resource_type": None,
                        "resource_id": None,
                        "description": "chat.message (test)",
                        "input_tokens": 1200,
                        "output_tokens": 300,
                        "model": "gpt-4o-mini",
                        "workflow_id": None,
                        "workflow_run_id": None,
                        "job_instance_id": None,
                        "created_at": at("2025-03-12T09:00:00"),
                    }
                ],
            )
            await session.commit()

    if exports.org not in _events_seeded:
        run_on(settings, scenario)
        _events_seeded.add(exports.org)
    export = exports.written(report="ai_usage_events", format="jsonl")
    rows = [json.loads(line) for line in exports.download(export["download_url"]).text.splitlines()]
    assert len(rows) == 1 and export["row_count"] == 1
    assert rows[0]["kind"] == "chat.message" and rows[0]["model"] == "gpt-4o-mini"
    assert (rows[0]["input_tokens"], rows[0]["output_tokens"], rows[0]["credits"]) == (1200, 300, 3)
    assert rows[0]["cost_usd"] is None


_events_seeded: set[str] = set()


def test_download_urls_refuse_tampering_and_expiry(exports: Exports, runs, settings: Settings):
    export = exports.written()
    url = urlsplit(export["download_url"])
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    longer = {**query, "expires": str(int(query["expires"]) + 3600)}
    other_path = url._replace(path=url.path.replace(".csv", ".jsonl"))
    for tampered in (
        url._replace(query=urlencode(longer)).geturl(),
        url._replace(query=urlencode({**query, "signature": "0" * 64})).geturl(),
        url._replace(query="").geturl(),
        other_path.geturl(),
    ):
        refused = exports.download(tampered)
        assert refused.status_code == 403, (tampered, refused.text)
        assert refused.json()["code"] == "FORBIDDEN"
    # A genuine signature whose time is up.
    path = url.path.removeprefix("/v1/downloads/")
    signer = ObjectStore.from_settings(settings).signer
    stale = signer.download_url(f"{url.scheme}://{url.netloc}", path, expires=int(time.time()) - 1)
    assert exports.download(stale).status_code == 403
    # Valid for an hour at most.
    assert int(query["expires"]) <= time.time() + 3600 + 60


def test_an_expired_export_is_gone(exports: Exports, runs, settings: Settings):
    export = exports.written()
    url = export["download_url"]

    async def past(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(Export)
                .where(Export.id == uuid.UUID(export["id"]))
                .values(file_expires_at=utcnow() - timedelta(minutes=1))
            )

    run_on(settings, past)
    expired = exports.get(export["id"])
    assert expired["status"] == "expired" and expired["download_url"] is None
    gone = exports.download(url)
    assert gone.status_code == 410, gone.text
    assert gone.json()["code"] == "NOT_FOUND"
    listed = exports.ok("analytics.listExports", {"status": "expired", "limit": 100})
    assert export["id"] in [e["id"] for e in listed["data"]]


def test_the_sweep_expires_files_past_their_time(exports: Exports, runs, settings: Settings):
    export = exports.written()

    async def sweep(db: Database) -> tuple[str, str | None, bool]:
        store = ObjectStore.from_settings(settings)
        async with db.unit_of_work() as session:
            await session.execute(
                update(Export)
                .where(Export.id == uuid.UUID(export["id"]))
                .values(file_expires_at=utcnow() - timedelta(seconds=1))
            )
        # The service's own maintenance pass may sweep it first: what is asserted is what the
        # sweep leaves behind, whichever pass got there.
        await durable.expire_due(db, store)
        async with db.unit_of_work() as session:
            row = await session.get(Export, uuid.UUID(export["id"]))
            assert row is not None
            kept = row.storage_path is not None and await store.head(row.storage_path) is not None
            return row.status, row.storage_path, kept

    status, path, kept = run_on(settings, sweep)
    assert status == "expired" and path is not None and not kept
    assert exports.download(export["download_url"]).status_code == 410
    assert exports.get(export["id"])["status"] == "expired"


def test_more_rows_than_allowed_fail_the_export(
    exports: Exports, runs, monkeypatch: pytest.MonkeyPatch, settings: Settings
):
    monkeypatch.setattr(durable, "MAX_ROWS", 2)
    export = exports.wait(exports.create()["id"])
    assert export["status"] == "failed" and export["download_url"] is None
    assert export["error"]["code"] == "too_many_rows"
    assert "more than 2 rows" in export["error"]["message"]
    assert export["row_count"] is None


def test_the_same_idempotency_key_is_the_same_export(exports: Exports, runs):
    key = f"export-{uuid.uuid4().hex}"
    first = exports.create(idempotencyKey=key)
    again = exports.create(idempotencyKey=key, format="jsonl")
    assert again["id"] == first["id"] and again["format"] == "csv"
    assert exports.wait(first["id"])["status"] == "succeeded"
    other = exports.create(idempotencyKey=f"export-{uuid.uuid4().hex}")
    assert other["id"] != first["id"]
    exports.wait(other["id"])


@pytest.mark.own_org
def test_lists_filter_by_status_and_creator(exports: Exports, runs):
    mine = exports.written(role="member")
    theirs = exports.written(role="admin")
    third = exports.written(role="admin", report="ai_usage")
    everything = exports.ok("analytics.listExports", {"limit": 2})
    assert everything["total"] == 3 and everything["page"] == 1 and everything["limit"] == 2
    assert [e["id"] for e in everything["data"]] == [third["id"], theirs["id"]]
    assert all(e["download_url"] is None for e in everything["data"])
    second = exports.ok("analytics.listExports", {"limit": 2, "page": 2})
    assert [e["id"] for e in second["data"]] == [mine["id"]]
    own = exports.ok("analytics.listExports", {"mine": True})
    assert [e["id"] for e in own["data"]] == [mine["id"]] and own["total"] == 1
    succeeded = exports.ok("analytics.listExports", {"status": "succeeded"})
    assert succeeded["total"] == 3
    assert exports.ok("analytics.listExports", {"status": "queued"})["total"] == 0
    assert exports.request("analytics.listExports", {"status": "done"}).status_code == 400
    assert exports.request("analytics.listExports", {"limit": 101}).status_code == 400


def test_members_delete_their_own_exports_and_admins_any(exports: Exports, runs):
    theirs = exports.written(role="editor")
    refused = exports.request("analytics.deleteExport", {"id": theirs["id"]}, role="member")
    assert refused.status_code == 403 and refused.json()["code"] == "FORBIDDEN"
    mine = exports.written(role="member")
    deleted = exports.ok("analytics.deleteExport", {"id": mine["id"]}, role="member")
    assert deleted == {"success": True, "status": "deleted"}
    assert exports.request("analytics.getExport", {"id": mine["id"]}).status_code == 404
    assert exports.download(mine["download_url"]).status_code == 410  # its file went too
    by_admin = exports.ok("analytics.deleteExport", {"id": theirs["id"]}, role="admin")
    assert by_admin == {"success": True, "status": "deleted"}
    again = exports.request("analytics.deleteExport", {"id": theirs["id"]}, role="admin")
    assert again.status_code == 404


@pytest.mark.own_org
def test_a_running_export_is_cancelled_and_a_sixth_is_429(
    exports: Exports, runs, gate: threading.Event, settings: Settings
):
    keys = [f"held-{i}-{uuid.uuid4().hex}" for i in range(5)]
    made = [exports.create(idempotencyKey=key) for key in keys]
    # One organization's exports run one at a time: whichever the queue took first runs.
    running = until_one_is(exports, [export["id"] for export in made], "running")
    waiting = next(export for export in reversed(made) if export["id"] != running["id"])
    sixth = exports.request(
        "analytics.createExport",
        {"report": "automation_runs", "dateFrom": "2025-03-01", "dateTo": "2025-03-31"},
    )
    assert sixth.status_code == 429, sixth.text
    assert sixth.json()["code"] == "TOO_MANY_REQUESTS" and sixth.headers["retry-after"]
    # The same key still answers its export, not 429.
    assert exports.create(idempotencyKey=keys[1])["id"] == made[1]["id"]
    cancelled = exports.ok("analytics.deleteExport", {"id": running["id"]})
    assert cancelled == {"success": True, "status": "cancelled"}
    queued = exports.ok("analytics.deleteExport", {"id": waiting["id"]}, role="admin")
    assert queued == {"success": True, "status": "cancelled"}
    gate.set()
    ended = {export["id"]: exports.wait(export["id"]) for export in made}
    cancelled_ids = {running["id"], waiting["id"]}
    assert {key: e["status"] for key, e in ended.items()} == {
        key: "cancelled" if key in cancelled_ids else "succeeded" for key in ended
    }
    stopped = ended[running["id"]]
    assert stopped["download_url"] is None and stopped["row_count"] is None

    async def kept(db: Database) -> bool:
        store = ObjectStore.from_settings(settings)
        return await store.head(f"{exports.org}/exports/{running['id']}.csv") is not None

    assert run_on(settings, kept) is False  # a cancelled export keeps no file
    # A cancelled one is then deleted.
    assert exports.ok("analytics.deleteExport", {"id": running["id"]})["status"] == "deleted"


def test_another_organization_sees_nothing(exports: Exports, other: Exports, runs):
    export = exports.written()
    for operation in ("analytics.getExport", "analytics.deleteExport"):
        response = other.request(operation, {"id": export["id"]}, role="admin")
        assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"
    listed = other.ok("analytics.listExports", {"limit": 100})
    assert export["id"] not in [e["id"] for e in listed["data"]]
    # Its own export of the same period reads its own runs: none.
    empty = other.written()
    assert empty["row_count"] == 0
    assert other.request("analytics.getExport", {"id": str(uuid.uuid4())}).status_code == 404


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"dateFrom": "2025-03-02", "dateTo": "2025-03-01"}, "dateTo"),
        ({"dateFrom": "2024-01-01", "dateTo": "2025-01-01"}, "dateTo"),  # 367 days
        ({"dateFrom": None}, "dateFrom"),
        ({"dateFrom": "9999-01-01", "dateTo": "9999-12-31"}, "dateTo"),
        ({"dateFrom": "0001-01-01", "dateTo": "0001-01-02"}, "dateFrom"),
        ({"report": "content_performance"}, "report"),
        ({"format": "xlsx"}, "format"),
        ({"filters": {"status": "done"}}, "filters.status"),
        ({"filters": {"kind": "x"}}, "filters.kind"),
        ({"idempotencyKey": "short"}, "idempotencyKey"),
    ],
)
def test_bad_inputs_are_400_naming_the_field(exports: Exports, change, field):
    data = {"report": "automation_runs", "dateFrom": "2025-03-01", "dateTo": "2025-03-31"}
    data.update(change)
    data = {k: v for k, v in data.items() if v is not None}
    response = exports.request("analytics.createExport", data)
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "BAD_REQUEST"
    assert field in [e["path"] for e in problem["errors"]], problem


def test_366_days_are_allowed_and_the_limit_is_named(exports: Exports):
    leap = exports.create(dateFrom="2024-01-01", dateTo="2024-12-31")
    assert leap["status"] == "queued"
    exports.wait(leap["id"])
    longer = exports.request(
        "analytics.createExport",
        {"report": "automation_runs", "dateFrom": "2024-01-01", "dateTo": "2025-01-01"},
    )
    assert "at most 366 days" in longer.json()["detail"]


def _left_running(exports: Exports, settings: Settings, *, quiet_for: timedelta) -> str:
    """An export a crash left `running` (no workflow, its heartbeat `quiet_for` old), with
    part of a file written: its id."""
    export_id = uuid.uuid4()
    path = f"{exports.org}/exports/{export_id}.csv"
    moment = utcnow() - quiet_for

    async def scenario(db: Database) -> None:
        await ObjectStore.from_settings(settings).put(path, b"id,job_id,sta")
        async with db.unit_of_work() as session:
            session.add(
                Export(
                    id=export_id,
                    tenant_id=exports.tenant_id,
                    report="automation_runs",
                    format="csv",
                    params={
                        "date_from": "2025-03-01",
                        "date_to": "2025-03-31",
                        "time_zone": "UTC",
                        "filters": {},
                    },
                    status="running",
                    storage_path=path,
                    created_by=exports.users["member"],
                    started_at=moment,
                    created_at=moment,
                    updated_at=moment,
                )
            )

    run_on(settings, scenario)
    return str(export_id)


def test_an_export_a_crash_left_running_is_written_again(
    exports: Exports, runs, settings: Settings, server: AppServer
):
    export_id = _left_running(exports, settings, quiet_for=timedelta(seconds=1))
    # What the reconciler does for it (it may do so first: the workflow id makes it once).
    restart = kit_durable.restarter(
        durable.write_export,
        durable.workflow_id(uuid.UUID(export_id)),
        str(exports.tenant_id),
        export_id,
        queue=durable.QUEUE,
    )
    assert server.loop is not None
    asyncio.run_coroutine_threadsafe(restart(), server.loop).result(10)
    export = exports.wait(export_id)
    assert export["status"] == "succeeded" and export["row_count"] == 3
    body = exports.download(export["download_url"]).content.decode()
    assert body.startswith(f"{COLUMNS}\r\n") and body.count("\r\n") == 4


def test_a_stalled_export_fails_visibly(exports: Exports, runs, settings: Settings):
    export_id = _left_running(exports, settings, quiet_for=timedelta(minutes=20))

    async def reconcile(db: Database) -> None:
        async with db.unit_of_work() as session:
            work = [
                item
                for item in await durable.unfinished_exports(session)
                if item.workflow_id == f"export:{export_id}"
            ]
        if not work:
            return  # the service's own reconciler came first
        assert work[0].stalled_reason == "stalled"
        async with db.unit_of_work() as session:
            await work[0].give_up(session, "stalled")

    run_on(settings, reconcile)
    export = exports.get(export_id)
    assert export["status"] == "failed" and export["error"]["code"] == "stalled"
    assert export["finished_at"] is not None
