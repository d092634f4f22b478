"""Rank tracking (seo.*TrackedKeyword*, seo.checkRankings): tracked keywords, each check's
position of each keyword, and the stored SERPs. The rank settings' new keys (depth,
stop_at_own_domain) need no data migration: settings blocks are read over their defaults.

Revision 0050_seo_rank of 2026-12-09 (issue 42, part a).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0050_seo_rank"
down_revision = "0049_seo_pagespeed"

PENDING = sa.text("status IN ('pending', 'posted')")
SORT_COLUMNS = ("position", "change_7d", "search_volume", "estimated_traffic", "keyword")


def _owned(table: str) -> list[Any]:
    return [
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f(f"fk_{table}_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
    ]


def _keyword_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["keyword_id"],
        ["seo_tracked_keywords.id"],
        name=op.f(f"fk_{table}_keyword_id_seo_tracked_keywords"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "seo_tracked_keywords",
        sa.Column("keyword", sa.String(length=100), nullable=False),
        sa.Column("location_code", sa.Integer(), nullable=False),
        sa.Column("language_code", sa.String(length=35), nullable=False),
        sa.Column("device", sa.String(length=10), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("target_url", sa.String(length=2048), nullable=True),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("search_volume", sa.Integer(), nullable=True),
        sa.Column("keyword_difficulty", sa.Integer(), nullable=True),
        sa.Column("cpc", sa.Float(), nullable=True),
        sa.Column("intent", sa.String(length=20), nullable=True),
        sa.Column("position", sa.Integer(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("previous_position", sa.Integer(), nullable=True),
        sa.Column("movement", sa.String(length=10), nullable=True),
        sa.Column("change_1d", sa.Integer(), nullable=True),
        sa.Column("change_7d", sa.Integer(), nullable=True),
        sa.Column("change_30d", sa.Integer(), nullable=True),
        sa.Column("best_position", sa.Integer(), nullable=True),
        sa.Column("estimated_traffic", sa.Float(), nullable=True),
        sa.Column("serp_features", sa.JSON(), nullable=False),
        sa.Column("ai_overview_present", sa.Boolean(), nullable=False),
        sa.Column("ai_overview_cited", sa.Boolean(), nullable=False),
        sa.Column("competitors", sa.JSON(), nullable=False),
        sa.Column("cannibalization", sa.JSON(), nullable=False),
        sa.Column("last_checked_at", UTCDateTime(), nullable=True),
        *_owned("seo_tracked_keywords"),
        sa.UniqueConstraint(
            "tenant_id",
            "keyword",
            "location_code",
            "language_code",
            "device",
            name="uq_seo_tracked_keywords_market",
        ),
    )
    op.create_index(
        op.f("ix_seo_tracked_keywords_tenant_id"), "seo_tracked_keywords", ["tenant_id"]
    )
    for column in SORT_COLUMNS:
        op.create_index(
            f"ix_seo_tracked_keywords_{column}",
            "seo_tracked_keywords",
            ["tenant_id", column, "id"],
        )

    op.create_table(
        "seo_keyword_positions",
        sa.Column("keyword_id", sa.Uuid(), nullable=False),
        sa.Column("sync_run_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("check_date", sa.Date(), nullable=False),
        sa.Column("checked_at", UTCDateTime(), nullable=True),
        sa.Column("position", sa.Integer(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("serp_features", sa.JSON(), nullable=False),
        sa.Column("ai_overview_present", sa.Boolean(), nullable=False),
        sa.Column("ai_overview_cited", sa.Boolean(), nullable=False),
        sa.Column("competitors", sa.JSON(), nullable=False),
        sa.Column("cannibalization", sa.JSON(), nullable=False),
        sa.Column("pages", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        *_owned("seo_keyword_positions"),
        _keyword_fk("seo_keyword_positions"),
        sa.UniqueConstraint(
            "tenant_id", "sync_run_id", "keyword_id", name="uq_seo_keyword_positions"
        ),
    )
    op.create_index(
        op.f("ix_seo_keyword_positions_tenant_id"), "seo_keyword_positions", ["tenant_id"]
    )
    op.create_index(
        "ix_seo_keyword_positions_history",
        "seo_keyword_positions",
        ["tenant_id", "keyword_id", "check_date"],
    )
    op.create_index(
        "ix_seo_keyword_positions_date", "seo_keyword_positions", ["tenant_id", "check_date"]
    )
    op.create_index(
        "ix_seo_keyword_positions_pending",
        "seo_keyword_positions",
        ["created_at"],
        sqlite_where=PENDING,
        postgresql_where=PENDING,
    )

    op.create_table(
        "seo_serp_snapshots",
        sa.Column("keyword_id", sa.Uuid(), nullable=False),
        sa.Column("sync_run_id", sa.Uuid(), nullable=False),
        sa.Column("check_date", sa.Date(), nullable=False),
        sa.Column("checked_at", UTCDateTime(), nullable=False),
        sa.Column("location_code", sa.Integer(), nullable=False),
        sa.Column("language_code", sa.String(length=35), nullable=False),
        sa.Column("device", sa.String(length=10), nullable=False),
        sa.Column("provider", sa.String(length=40), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("stopped_at_own_domain", sa.Boolean(), nullable=False),
        sa.Column("item_types", sa.JSON(), nullable=False),
        sa.Column("items", sa.JSON(), nullable=False),
        *_owned("seo_serp_snapshots"),
        _keyword_fk("seo_serp_snapshots"),
        sa.UniqueConstraint("tenant_id", "sync_run_id", "keyword_id", name="uq_seo_serp_snapshots"),
    )
    op.create_index(op.f("ix_seo_serp_snapshots_tenant_id"), "seo_serp_snapshots", ["tenant_id"])
    op.create_index(
        "ix_seo_serp_snapshots_keyword",
        "seo_serp_snapshots",
        ["tenant_id", "keyword_id", "check_date"],
    )


def downgrade() -> None:
    op.drop_table("seo_serp_snapshots")
    op.drop_table("seo_keyword_positions")
    op.drop_table("seo_tracked_keywords")
