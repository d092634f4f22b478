"""Publisher connections, publish attempts, publications; drafts learn where they are live
(revision of 2026-11-23)."""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0007_publishers"
down_revision = "0006_jobs"

DEFAULT = sa.text("is_default AND deleted_at IS NULL")
UNFINISHED = sa.text("status IN ('scheduled', 'pending', 'running')")


def _draft_and_connection(table: str) -> list[sa.ForeignKeyConstraint]:
    return [
        shapes.references(table, "draft_id", "drafts"),
        shapes.references(table, "connection_id", "publisher_connections"),
    ]


def upgrade() -> None:
    with op.batch_alter_table("drafts") as drafts:
        drafts.add_column(sa.Column("approved_by", sa.String(255), nullable=True))
        drafts.add_column(sa.Column("published_url", sa.Text(), nullable=True))
        drafts.add_column(sa.Column("slug", sa.String(200), nullable=True))
        drafts.add_column(sa.Column("auto_publish", sa.JSON(), nullable=True))
    op.create_index("ix_drafts_tenant_id_slug", "drafts", ["tenant_id", "slug"])

    op.create_table(
        "publisher_connections",
        *shapes.owned(),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("type", sa.String(20), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("credentials_sealed", sa.Text(), nullable=True),
        sa.Column("credentials_hint", sa.String(100), nullable=True),
        sa.Column("signing_secret_sealed", sa.Text(), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("capabilities", sa.JSON(), nullable=False),
        sa.Column("last_tested_at", UTCDateTime(), nullable=True),
        sa.Column("last_test_ok", sa.Boolean(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("publisher_connections"),
    )
    op.create_index(
        op.f("ix_publisher_connections_tenant_id"), "publisher_connections", ["tenant_id"]
    )
    op.create_index(
        "ix_publisher_connections_tenant_id_created_at",
        "publisher_connections",
        ["tenant_id", "created_at"],
    )
    op.create_index(
        "uq_publisher_connections_default",
        "publisher_connections",
        ["tenant_id"],
        unique=True,
        sqlite_where=DEFAULT,
        postgresql_where=DEFAULT,
    )

    op.create_table(
        "publish_attempts",
        *shapes.owned(),
        sa.Column("draft_id", sa.Uuid(), nullable=False),
        sa.Column("connection_id", sa.Uuid(), nullable=False),
        sa.Column("mode", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("draft_version", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(255), nullable=True),
        sa.Column("external_url", sa.Text(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("triggered_by", sa.String(20), nullable=False),
        sa.Column("triggered_by_id", sa.String(255), nullable=True),
        sa.Column("scheduled_at", UTCDateTime(), nullable=True),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("publish_attempts"),
        *_draft_and_connection("publish_attempts"),
    )
    shapes.index_tenant("publish_attempts")
    op.create_index(
        "ix_publish_attempts_tenant_id_draft_id",
        "publish_attempts",
        ["tenant_id", "draft_id", "created_at"],
    )
    op.create_index(
        "ix_publish_attempts_tenant_id_connection_id",
        "publish_attempts",
        ["tenant_id", "connection_id", "created_at"],
    )
    op.create_index(
        "ix_publish_attempts_unfinished",
        "publish_attempts",
        ["created_at"],
        sqlite_where=UNFINISHED,
        postgresql_where=UNFINISHED,
    )

    op.create_table(
        "publications",
        *shapes.owned(),
        sa.Column("draft_id", sa.Uuid(), nullable=False),
        sa.Column("connection_id", sa.Uuid(), nullable=False),
        sa.Column("external_id", sa.String(255), nullable=False),
        sa.Column("external_url", sa.Text(), nullable=True),
        sa.Column("remote_version", sa.String(255), nullable=True),
        sa.Column("remote_status", sa.String(20), nullable=False),
        sa.Column("published_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("publications"),
        *_draft_and_connection("publications"),
        sa.UniqueConstraint(
            "draft_id", "connection_id", name="uq_publications_draft_id_connection_id"
        ),
    )
    shapes.index_tenant("publications")


def downgrade() -> None:
    op.drop_table("publications")
    op.drop_table("publish_attempts")
    op.drop_table("publisher_connections")
    op.drop_index("ix_drafts_tenant_id_slug", table_name="drafts")
    with op.batch_alter_table("drafts") as drafts:
        for column in ("auto_publish", "slug", "published_url", "approved_by"):
            drafts.drop_column(column)
