"""Migration 0017 keeps a tenant's credits of the first model readable and reconciling."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime, timedelta

from contentplatform.config import Settings
from contentplatform.kit import migrations


def _insert(connection: sqlite3.Connection, table: str, values: dict[str, object]) -> None:
    """A row with `values`, and a filler in every other NOT NULL column without a default."""
    row = dict(values)
    for _, name, kind, not_null, default, primary in connection.execute(
        f"PRAGMA table_info({table})"
    ):
        if name in row or not not_null or default is not None or primary:
            continue
        row[name] = 0 if "INT" in kind or "BOOL" in kind else f"{name}-{uuid.uuid4().hex[:8]}"
    names = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    connection.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(row.values()))


def test_the_first_models_ledger_moves_into_buckets_that_reconcile(tmp_path):
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    migrations.upgrade(settings, "0016_features")
    tenant = uuid.uuid4()
    this_month = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    last_month = (this_month - timedelta(days=1)).replace(day=1)
    at = lambda moment: moment.strftime("%Y-%m-%d %H:%M:%S.%f")  # noqa: E731
    period = lambda moment: moment.strftime("%Y-%m")  # noqa: E731
    with sqlite3.connect(tmp_path / "contentplatform.db") as connection:
        _insert(connection, "tenants", {"id": tenant.hex})
        for entry_type, amount, row_period, moment in (
            ("monthly_grant", 100, period(last_month), last_month),
            ("debit", -30, None, last_month + timedelta(hours=1)),
            ("expiry", -70, period(last_month), this_month),
            ("monthly_grant", 100, period(this_month), this_month),
            ("grant", 15, None, this_month + timedelta(seconds=1)),
            ("debit", -40, None, this_month + timedelta(seconds=2)),
        ):
            _insert(
                connection,
                "credit_ledger",
                {
                    "id": uuid.uuid4().hex,
                    "tenant_id": tenant.hex,
                    "entry_type": entry_type,
                    "amount": amount,
                    "period": row_period,
                    "reason": "before buckets",
                    "created_at": at(moment),
                },
            )
    migrations.upgrade(settings)
    with sqlite3.connect(tmp_path / "contentplatform.db") as connection:
        buckets = connection.execute(
            "SELECT source, granted, remaining, period FROM credit_buckets ORDER BY created_at"
        ).fetchall()
        ledger = connection.execute(
            "SELECT entry_type, amount, balance_after, bucket_id IS NOT NULL, description"
            " FROM credit_ledger ORDER BY created_at, id"
        ).fetchall()
    # This month's grant holds what its month did not spend; the extra grant's rest carries
    # over; last month's expired grant holds nothing.
    assert sorted(buckets) == sorted(
        [
            ("monthly_grant", 100, 0, period(last_month)),
            ("monthly_grant", 100, 60, period(this_month)),
            ("admin_grant", 15, 15, None),
        ]
    )
    assert sorted(row[0] for row in ledger) == sorted(
        ["grant", "debit", "expiry", "grant", "grant", "debit"]
    )
    # Each row's balance after it, in the ledger's order (rows written at one instant, as a
    # month's expiry and the next grant were, in the order of their ids).
    running = [sum(row[1] for row in ledger[: n + 1]) for n in range(len(ledger))]
    assert [row[2] for row in ledger] == running
    assert running[-1] == sum(bucket[2] for bucket in buckets) == 75
    by_bucket = [row[3] for row in ledger if row[0] in ("expiry",) or row[1] == 100]
    assert by_bucket == [True, True, True]  # monthly grants and their expiry have their bucket
    assert {row[4] for row in ledger} == {"before buckets"}
