"""Technical SEO audits: audit runs, their issues (one row per check) and findings (one row per
check and URL), and each tenant's check overrides.

Revision 0048_seo_audits of 2026-12-07 (issue 41).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0048_seo_audits"
down_revision = "0047_seo_pages"


def upgrade() -> None:
    with op.batch_alter_table("seo_settings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("next_audit_at", UTCDateTime(), nullable=True))
        batch_op.create_index(
            "ix_seo_settings_next_audit_at",
            ["next_audit_at"],
            unique=False,
            sqlite_where=sa.text("next_audit_at IS NOT NULL"),
            postgresql_where=sa.text("next_audit_at IS NOT NULL"),
        )
    op.create_table(
        "seo_audit_check_settings",
        sa.Column("check_id", sa.String(length=64), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("severity", sa.String(length=10), nullable=True),
        sa.Column("threshold", sa.JSON(), nullable=False),
        sa.Column("exclude_url_patterns", sa.JSON(), nullable=False),
        sa.Column("updated_by", sa.String(length=255), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_seo_audit_check_settings_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_audit_check_settings")),
        sa.UniqueConstraint("tenant_id", "check_id", name="uq_seo_audit_check_settings_check"),
    )
    with op.batch_alter_table("seo_audit_check_settings", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_seo_audit_check_settings_tenant_id"), ["tenant_id"], unique=False
        )

    op.create_table(
        "seo_audit_runs",
        sa.Column("config_id", sa.Uuid(), nullable=False),
        sa.Column("snapshot_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("trigger", sa.String(length=12), nullable=False),
        sa.Column("checks_version", sa.String(length=16), nullable=False),
        sa.Column("checks", sa.JSON(), nullable=False),
        sa.Column("pages_analyzed", sa.Integer(), nullable=False),
        sa.Column("health_score", sa.Float(), nullable=True),
        sa.Column("issue_counts", sa.JSON(), nullable=False),
        sa.Column("category_counts", sa.JSON(), nullable=False),
        sa.Column("not_evaluated", sa.JSON(), nullable=False),
        sa.Column("new_issue_count", sa.Integer(), nullable=False),
        sa.Column("fixed_issue_count", sa.Integer(), nullable=False),
        sa.Column("previous_audit_id", sa.Uuid(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(length=255), nullable=True),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_seo_audit_runs_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_audit_runs")),
    )
    with op.batch_alter_table("seo_audit_runs", schema=None) as batch_op:
        batch_op.create_index(
            "ix_seo_audit_runs_active",
            ["created_at"],
            unique=False,
            sqlite_where=sa.text("status IN ('queued', 'running')"),
            postgresql_where=sa.text("status IN ('queued', 'running')"),
        )
        batch_op.create_index(
            "ix_seo_audit_runs_config",
            ["tenant_id", "config_id", "status", "finished_at"],
            unique=False,
        )
        batch_op.create_index(
            "ix_seo_audit_runs_snapshot",
            ["tenant_id", "snapshot_id", "checks_version"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_seo_audit_runs_tenant_id"), ["tenant_id"], unique=False
        )
        batch_op.create_index(
            "ix_seo_audit_runs_tenant_id_created_at", ["tenant_id", "created_at"], unique=False
        )

    op.create_table(
        "seo_audit_findings",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("audit_id", sa.Uuid(), nullable=False),
        sa.Column("check_id", sa.String(length=64), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("url_hash", sa.String(length=64), nullable=False),
        sa.Column("page_id", sa.Uuid(), nullable=True),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("change", sa.String(length=12), nullable=False),
        sa.Column("draft_id", sa.Uuid(), nullable=True),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["audit_id"],
            ["seo_audit_runs.id"],
            name=op.f("fk_seo_audit_findings_audit_id_seo_audit_runs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_seo_audit_findings_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_audit_findings")),
    )
    with op.batch_alter_table("seo_audit_findings", schema=None) as batch_op:
        batch_op.create_index(
            "ix_seo_audit_findings_check",
            ["tenant_id", "audit_id", "check_id", "change"],
            unique=False,
        )
        batch_op.create_index(
            "ix_seo_audit_findings_url", ["tenant_id", "audit_id", "url_hash"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_seo_audit_findings_tenant_id"), ["tenant_id"], unique=False
        )

    op.create_table(
        "seo_audit_issues",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("audit_id", sa.Uuid(), nullable=False),
        sa.Column("check_id", sa.String(length=64), nullable=False),
        sa.Column("category", sa.String(length=20), nullable=False),
        sa.Column("severity", sa.String(length=10), nullable=False),
        sa.Column("severity_rank", sa.Integer(), nullable=False),
        sa.Column("affected_urls", sa.Integer(), nullable=False),
        sa.Column("previous_affected_urls", sa.Integer(), nullable=False),
        sa.Column("change", sa.String(length=12), nullable=True),
        sa.Column("not_evaluated", sa.Integer(), nullable=False),
        sa.Column("sample_urls", sa.JSON(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["audit_id"],
            ["seo_audit_runs.id"],
            name=op.f("fk_seo_audit_issues_audit_id_seo_audit_runs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_seo_audit_issues_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_audit_issues")),
        sa.UniqueConstraint("audit_id", "check_id", name="uq_seo_audit_issues_check"),
    )
    with op.batch_alter_table("seo_audit_issues", schema=None) as batch_op:
        batch_op.create_index(
            "ix_seo_audit_issues_order",
            ["tenant_id", "audit_id", "severity_rank", "affected_urls"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_seo_audit_issues_tenant_id"), ["tenant_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("seo_audit_issues", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_seo_audit_issues_tenant_id"))
        batch_op.drop_index("ix_seo_audit_issues_order")

    op.drop_table("seo_audit_issues")
    with op.batch_alter_table("seo_audit_findings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_seo_audit_findings_tenant_id"))
        batch_op.drop_index("ix_seo_audit_findings_url")
        batch_op.drop_index("ix_seo_audit_findings_check")

    op.drop_table("seo_audit_findings")
    with op.batch_alter_table("seo_audit_runs", schema=None) as batch_op:
        batch_op.drop_index("ix_seo_audit_runs_tenant_id_created_at")
        batch_op.drop_index(batch_op.f("ix_seo_audit_runs_tenant_id"))
        batch_op.drop_index("ix_seo_audit_runs_snapshot")
        batch_op.drop_index("ix_seo_audit_runs_config")
        batch_op.drop_index(
            "ix_seo_audit_runs_active",
            sqlite_where=sa.text("status IN ('queued', 'running')"),
            postgresql_where=sa.text("status IN ('queued', 'running')"),
        )

    op.drop_table("seo_audit_runs")
    with op.batch_alter_table("seo_audit_check_settings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_seo_audit_check_settings_tenant_id"))

    op.drop_table("seo_audit_check_settings")
    with op.batch_alter_table("seo_settings", schema=None) as batch_op:
        batch_op.drop_index("ix_seo_settings_next_audit_at")
        batch_op.drop_column("next_audit_at")
