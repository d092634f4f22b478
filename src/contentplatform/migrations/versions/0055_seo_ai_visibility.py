"""AI visibility (SEO part 4): the prompts tracked across AI answer engines and every answer a
run got for one (prompt x engine x sample), with what was read from it; and the SEO profile's
clock of the next scheduled run (ai_visibility.frequency), which starts with the first prompt.

Revision 0055_seo_ai_visibility of 2026-12-07 (issue 45).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0055_seo_ai_visibility"
down_revision = "0054_seo_plans"

PENDING = sa.text("status = 'pending'")


def _record_columns(table: str) -> list[Any]:
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


SCHEDULED = sa.text("next_ai_visibility_at IS NOT NULL")


def upgrade() -> None:
    with op.batch_alter_table("seo_settings") as batch_op:
        batch_op.add_column(sa.Column("next_ai_visibility_at", UTCDateTime(), nullable=True))
        batch_op.create_index(
            "ix_seo_settings_next_ai_visibility_at",
            ["next_ai_visibility_at"],
            sqlite_where=SCHEDULED,
            postgresql_where=SCHEDULED,
        )
    op.create_table(
        "seo_ai_prompts",
        sa.Column("text", sa.String(length=500), nullable=False),
        sa.Column("text_key", sa.String(length=500), nullable=False),
        sa.Column("topic", sa.String(length=100), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("intent", sa.String(length=20), nullable=True),
        sa.Column("country", sa.String(length=2), nullable=True),
        sa.Column("language", sa.String(length=35), nullable=True),
        sa.Column("engines", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("source", sa.String(length=10), nullable=False),
        sa.Column("latest", sa.JSON(), nullable=True),
        sa.Column("latest_mentioned", sa.Boolean(), nullable=True),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *_record_columns("seo_ai_prompts"),
    )
    op.create_index(op.f("ix_seo_ai_prompts_tenant_id"), "seo_ai_prompts", ["tenant_id"])
    op.create_index("ix_seo_ai_prompts_key", "seo_ai_prompts", ["tenant_id", "text_key"])
    op.create_index(
        "ix_seo_ai_prompts_status", "seo_ai_prompts", ["tenant_id", "status", "created_at"]
    )

    op.create_table(
        "seo_ai_answers",
        sa.Column("sync_run_id", sa.Uuid(), nullable=False),
        sa.Column("prompt_id", sa.Uuid(), nullable=False),
        sa.Column("engine", sa.String(length=20), nullable=False),
        sa.Column("sample", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("provider", sa.String(length=40), nullable=False),
        sa.Column("model", sa.String(length=100), nullable=True),
        sa.Column("country", sa.String(length=2), nullable=True),
        sa.Column("answered_at", UTCDateTime(), nullable=True),
        sa.Column("answer_date", sa.Date(), nullable=True),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("mentions", sa.JSON(), nullable=False),
        sa.Column("citations", sa.JSON(), nullable=False),
        sa.Column("search_queries", sa.JSON(), nullable=False),
        sa.Column("brand_mentioned", sa.Boolean(), nullable=False),
        sa.Column("brand_position", sa.Integer(), nullable=True),
        sa.Column("sentiment", sa.Float(), nullable=True),
        sa.Column("sentiment_method", sa.String(150), nullable=True),
        sa.Column("sentiment_input_tokens", sa.Integer(), nullable=False),
        sa.Column("sentiment_output_tokens", sa.Integer(), nullable=False),
        sa.Column("cited", sa.Boolean(), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["prompt_id"],
            ["seo_ai_prompts.id"],
            name=op.f("fk_seo_ai_answers_prompt_id_seo_ai_prompts"),
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "tenant_id", "sync_run_id", "prompt_id", "engine", "sample", name="uq_seo_ai_answers"
        ),
        *_record_columns("seo_ai_answers"),
    )
    op.create_index(op.f("ix_seo_ai_answers_tenant_id"), "seo_ai_answers", ["tenant_id"])
    op.create_index(
        "ix_seo_ai_answers_prompt",
        "seo_ai_answers",
        ["tenant_id", "prompt_id", "engine", "answered_at"],
    )
    op.create_index("ix_seo_ai_answers_day", "seo_ai_answers", ["tenant_id", "answer_date"])
    op.create_index(
        "ix_seo_ai_answers_pending",
        "seo_ai_answers",
        ["created_at"],
        sqlite_where=PENDING,
        postgresql_where=PENDING,
    )


def downgrade() -> None:
    op.drop_table("seo_ai_answers")
    op.drop_table("seo_ai_prompts")
    with op.batch_alter_table("seo_settings") as batch_op:
        batch_op.drop_index("ix_seo_settings_next_ai_visibility_at")
        batch_op.drop_column("next_ai_visibility_at")
