"""Keyword research (seo.researchKeywords) and scheduled rank checks: the 30-day store of the
keyword provider's answers, and the SEO profile's clock of the next scheduled rank check.

An organization that tracked keywords before this revision gets its clock set here, to the next
slot its rank settings name (05:00 of its zone, daily or on the weekday; none when `off`), so
its scheduled checks start without waiting for its next add or settings change.

Revision 0052_seo_keyword_research of 2026-12-10 (issue 42, keyword research and rank gaps).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0052_seo_keyword_research"
down_revision = "0051_seo_actions"

SCHEDULED = sa.text("next_rank_check_at IS NOT NULL")
# As seo/service.py's RANK_CHECK_AT and WEEKDAYS when this revision was written (a migration
# keeps its own copy: the service's may change later).
CHECK_AT = time(5, 0)
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _next_slot(now: datetime, zone: str, rank: dict[str, Any]) -> datetime | None:
    frequency = rank.get("frequency", "weekly")
    if frequency not in ("daily", "weekly"):
        return None
    try:
        tz = ZoneInfo(zone or "UTC")
    except (KeyError, ValueError):
        tz = ZoneInfo("UTC")
    local = now.astimezone(tz)
    for offset in range(8):
        day = local.date() + timedelta(days=offset)
        moment = datetime.combine(day, CHECK_AT, tzinfo=tz)
        weekday_ok = frequency == "daily" or WEEKDAYS[day.weekday()] == rank.get("weekday", "mon")
        if moment > local and weekday_ok:
            return moment.astimezone(UTC)
    return None


def _backfill() -> None:
    connection = op.get_bind()
    settings = sa.table(
        "seo_settings",
        sa.column("tenant_id", sa.Uuid()),
        sa.column("next_rank_check_at", UTCDateTime()),
    )
    rows = connection.execute(
        sa.text(
            "SELECT s.tenant_id, s.blocks, t.timezone FROM seo_settings s "
            "JOIN tenants t ON t.id = s.tenant_id WHERE EXISTS (SELECT 1 FROM "
            "seo_tracked_keywords k WHERE k.tenant_id = s.tenant_id AND k.status = 'active')"
        ).columns(tenant_id=sa.Uuid(), blocks=sa.JSON(), timezone=sa.String())
    ).all()
    now = datetime.now(UTC)
    for tenant_id, blocks, zone in rows:
        stored = json.loads(blocks) if isinstance(blocks, str) else (blocks or {})
        rank = stored.get("rank")
        due = _next_slot(now, zone, rank if isinstance(rank, dict) else {})
        if due is not None:
            connection.execute(
                settings.update()
                .where(settings.c.tenant_id == tenant_id)
                .values(next_rank_check_at=due)
            )


def upgrade() -> None:
    with op.batch_alter_table("seo_settings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("next_rank_check_at", UTCDateTime(), nullable=True))
        batch_op.create_index(
            "ix_seo_settings_next_rank_check_at",
            ["next_rank_check_at"],
            unique=False,
            sqlite_where=SCHEDULED,
            postgresql_where=SCHEDULED,
        )
    op.create_table(
        "seo_keyword_research",
        sa.Column("location_code", sa.Integer(), nullable=False),
        sa.Column("language_code", sa.String(length=35), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("mode", sa.String(length=10), nullable=False),
        sa.Column("seeds", sa.JSON(), nullable=False),
        sa.Column("limit", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("ideas", sa.JSON(), nullable=False),
        sa.Column("credits_used", sa.Integer(), nullable=False),
        sa.Column("fetched_at", UTCDateTime(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_seo_keyword_research_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_keyword_research")),
        sa.UniqueConstraint(
            "tenant_id",
            "location_code",
            "language_code",
            "request_hash",
            name="uq_seo_keyword_research_request",
        ),
    )
    op.create_index(
        op.f("ix_seo_keyword_research_tenant_id"), "seo_keyword_research", ["tenant_id"]
    )
    _backfill()


def downgrade() -> None:
    op.drop_table("seo_keyword_research")
    with op.batch_alter_table("seo_settings", schema=None) as batch_op:
        batch_op.drop_index("ix_seo_settings_next_rank_check_at")
        batch_op.drop_column("next_rank_check_at")
