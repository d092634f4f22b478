"""Credit buckets, grant policies, a richer ledger and client-owned holds (issue 19).

Existing data stays readable and reconciles: each tenant's ledger sum becomes the remainders of
buckets (its unexpired monthly grants, what they can still hold, then one bucket without expiry
for the rest), `monthly_grant` rows become `grant` rows of their bucket, and every row gets the
balance after it.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0017_credit_buckets"
down_revision = "0016_features"


def upgrade() -> None:
    op.create_table(
        "credit_buckets",
        *shapes.owned(),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("granted", sa.Integer(), nullable=False),
        sa.Column("remaining", sa.Integer(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("period", sa.String(7), nullable=True),
        sa.Column("reference", sa.String(255), nullable=True),
        sa.Column("description", sa.String(500), nullable=False),
        *shapes.timestamps(),
        *shapes.keys("credit_buckets"),
        sa.UniqueConstraint(
            "tenant_id", "reference", name=op.f("uq_credit_buckets_tenant_id_reference")
        ),
    )
    shapes.index_tenant("credit_buckets")
    op.create_table(
        "credit_accounts",
        *shapes.owned(),
        sa.Column("monthly_credits", sa.Integer(), nullable=True),
        sa.Column("automatic", sa.Boolean(), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("rollover_cap", sa.Integer(), nullable=False),
        *shapes.timestamps(),
        *shapes.keys("credit_accounts"),
        sa.UniqueConstraint("tenant_id", name=op.f("uq_credit_accounts_tenant_id")),
    )
    shapes.index_tenant("credit_accounts")
    with op.batch_alter_table("credit_reservations") as reservations:
        reservations.add_column(
            sa.Column("owner", sa.String(10), nullable=False, server_default="operation")
        )
        reservations.add_column(sa.Column("created_by", sa.String(255), nullable=True))
        reservations.add_column(sa.Column("creator_type", sa.String(10), nullable=True))
        reservations.add_column(sa.Column("resource_type", sa.String(40), nullable=True))
        reservations.add_column(sa.Column("resource_id", sa.String(255), nullable=True))
        reservations.add_column(sa.Column("settled_at", UTCDateTime(), nullable=True))
    with op.batch_alter_table("credit_ledger") as ledger:
        ledger.drop_constraint("uq_credit_ledger_tenant_id_entry_type_period", type_="unique")
        ledger.alter_column("reason", new_column_name="description")
        ledger.add_column(sa.Column("bucket_id", sa.Uuid(), nullable=True))
        ledger.add_column(sa.Column("balance_after", sa.Integer(), nullable=True))
        ledger.add_column(
            sa.Column("actor_type", sa.String(10), nullable=False, server_default="system")
        )
        ledger.add_column(sa.Column("actor_id", sa.String(255), nullable=True))
        ledger.add_column(sa.Column("resource_type", sa.String(40), nullable=True))
        ledger.add_column(sa.Column("resource_id", sa.String(255), nullable=True))
        ledger.add_column(sa.Column("input_tokens", sa.Integer(), nullable=True))
        ledger.add_column(sa.Column("output_tokens", sa.Integer(), nullable=True))
        ledger.create_foreign_key(
            op.f("fk_credit_ledger_bucket_id_credit_buckets"),
            "credit_buckets",
            ["bucket_id"],
            ["id"],
        )
    _move_balances_into_buckets()
    with op.batch_alter_table("credit_ledger") as ledger:
        ledger.alter_column("balance_after", existing_type=sa.Integer(), nullable=False)
    op.create_index(
        "ix_credit_ledger_tenant_id_created_at", "credit_ledger", ["tenant_id", "created_at"]
    )


def _month_end(period: str) -> datetime:
    year, month = (int(part) for part in period.split("-"))
    return datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)


def _move_balances_into_buckets() -> None:
    bind = op.get_bind()
    ledger = sa.table(
        "credit_ledger",
        sa.column("id", sa.Uuid()),
        sa.column("tenant_id", sa.Uuid()),
        sa.column("entry_type", sa.String()),
        sa.column("amount", sa.Integer()),
        sa.column("period", sa.String()),
        sa.column("created_at", UTCDateTime()),
        sa.column("bucket_id", sa.Uuid()),
        sa.column("balance_after", sa.Integer()),
    )
    buckets = sa.table(
        "credit_buckets",
        sa.column("id", sa.Uuid()),
        sa.column("tenant_id", sa.Uuid()),
        sa.column("source", sa.String()),
        sa.column("granted", sa.Integer()),
        sa.column("remaining", sa.Integer()),
        sa.column("expires_at", UTCDateTime()),
        sa.column("period", sa.String()),
        sa.column("reference", sa.String()),
        sa.column("description", sa.String()),
        sa.column("created_at", UTCDateTime()),
        sa.column("updated_at", UTCDateTime()),
    )
    rows = bind.execute(
        sa.select(ledger).order_by(ledger.c.tenant_id, ledger.c.created_at, ledger.c.id)
    ).all()
    by_tenant: dict[Any, list[Any]] = defaultdict(list)
    for row in rows:
        by_tenant[row.tenant_id].append(row)
    now = datetime.now(UTC)
    for tenant_id, entries in by_tenant.items():
        expired = {e.period for e in entries if e.entry_type == "expiry"}
        left = sum(e.amount for e in entries)
        bucket_of_period: dict[str, uuid.UUID] = {}
        new_buckets: list[dict[str, Any]] = []
        # Newest grant first: the credits left are most likely this month's.
        for entry in reversed(entries):
            if entry.entry_type != "monthly_grant":
                continue
            debited = -sum(
                e.amount
                for e in entries
                if e.entry_type == "debit"
                and e.period is None
                and f"{e.created_at.astimezone(UTC):%Y-%m}" == entry.period
            )
            unexpired = entry.period not in expired
            remaining = max(0, min(entry.amount - debited, left)) if unexpired else 0
            left -= remaining
            bucket_id = uuid.uuid4()
            bucket_of_period[entry.period] = bucket_id
            new_buckets.append(
                {
                    "id": bucket_id,
                    "tenant_id": tenant_id,
                    "source": "monthly_grant",
                    "granted": entry.amount,
                    "remaining": remaining,
                    "expires_at": _month_end(entry.period),
                    "period": entry.period,
                    "reference": f"monthly:{entry.period}",
                    "description": f"Monthly credits for {entry.period}",
                    "created_at": entry.created_at,
                    "updated_at": now,
                }
            )
        if left > 0:
            new_buckets.append(
                {
                    "id": uuid.uuid4(),
                    "tenant_id": tenant_id,
                    "source": "admin_grant",
                    "granted": left,
                    "remaining": left,
                    "expires_at": None,
                    "period": None,
                    "reference": "carried-over",
                    "description": "Credits carried over from before buckets",
                    "created_at": now,
                    "updated_at": now,
                }
            )
        if new_buckets:
            bind.execute(sa.insert(buckets), new_buckets)
        balance = 0
        for entry in entries:
            balance += entry.amount
            values: dict[str, Any] = {"balance_after": balance}
            if entry.entry_type == "monthly_grant":
                values.update(entry_type="grant", bucket_id=bucket_of_period[entry.period])
            elif entry.entry_type == "expiry" and entry.period in bucket_of_period:
                values["bucket_id"] = bucket_of_period[entry.period]
            bind.execute(sa.update(ledger).where(ledger.c.id == entry.id).values(**values))


def downgrade() -> None:
    op.drop_index("ix_credit_ledger_tenant_id_created_at", table_name="credit_ledger")
    op.execute("UPDATE credit_ledger SET entry_type = 'monthly_grant' WHERE entry_type = 'grant'")
    with op.batch_alter_table("credit_ledger") as ledger:
        ledger.drop_constraint(
            op.f("fk_credit_ledger_bucket_id_credit_buckets"), type_="foreignkey"
        )
        for column in (
            "output_tokens",
            "input_tokens",
            "resource_id",
            "resource_type",
            "actor_id",
            "actor_type",
            "balance_after",
            "bucket_id",
        ):
            ledger.drop_column(column)
        ledger.alter_column("description", new_column_name="reason")
        ledger.create_unique_constraint(
            "uq_credit_ledger_tenant_id_entry_type_period", ["tenant_id", "entry_type", "period"]
        )
    with op.batch_alter_table("credit_reservations") as reservations:
        for column in (
            "settled_at",
            "resource_id",
            "resource_type",
            "creator_type",
            "created_by",
            "owner",
        ):
            reservations.drop_column(column)
    op.drop_index(op.f("ix_credit_accounts_tenant_id"), table_name="credit_accounts")
    op.drop_table("credit_accounts")
    op.drop_index(op.f("ix_credit_buckets_tenant_id"), table_name="credit_buckets")
    op.drop_table("credit_buckets")
