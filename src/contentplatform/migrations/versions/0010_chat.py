"""Chat: conversations and their messages (revision of 2026-11-25)."""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0010_chat"
down_revision = "0009_streams"


def upgrade() -> None:
    op.create_table(
        "chat_conversations",
        *shapes.owned(),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("document_ids", sa.JSON(), nullable=False),
        sa.Column("message_count", sa.Integer(), nullable=False),
        sa.Column("last_message_at", UTCDateTime(), nullable=True),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("chat_conversations"),
    )
    shapes.index_tenant("chat_conversations")
    op.create_index(
        "ix_chat_conversations_tenant_id_created_by_last_message_at",
        "chat_conversations",
        ["tenant_id", "created_by", "last_message_at"],
    )
    op.create_table(
        "chat_messages",
        *shapes.owned(),
        sa.Column("conversation_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(10), nullable=False),
        sa.Column("reply_to", sa.Uuid(), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("phase", sa.String(20), nullable=True),
        sa.Column("finish_reason", sa.String(20), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("retriever_resources", sa.JSON(), nullable=False),
        sa.Column("usage", sa.JSON(), nullable=True),
        sa.Column("terminal", sa.JSON(), nullable=True),
        sa.Column("reservation_id", sa.Uuid(), nullable=True),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.Column("request", sa.JSON(), nullable=True),
        sa.Column("model", sa.String(255), nullable=True),
        sa.Column("stop_requested_at", UTCDateTime(), nullable=True),
        sa.Column("feedback_rating", sa.String(10), nullable=True),
        sa.Column("feedback_comment", sa.Text(), nullable=True),
        sa.Column("feedback_updated_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("chat_messages"),
        shapes.references("chat_messages", "conversation_id", "chat_conversations"),
        sa.UniqueConstraint(
            "tenant_id", "idempotency_key", name="uq_chat_messages_tenant_id_idempotency_key"
        ),
        sa.UniqueConstraint(
            "conversation_id", "position", name="uq_chat_messages_conversation_id_position"
        ),
    )
    shapes.index_tenant("chat_messages")
    op.create_index(op.f("ix_chat_messages_conversation_id"), "chat_messages", ["conversation_id"])
    op.create_index("ix_chat_messages_status", "chat_messages", ["status"])


def downgrade() -> None:
    op.drop_index("ix_chat_messages_status", table_name="chat_messages")
    op.drop_index(op.f("ix_chat_messages_conversation_id"), table_name="chat_messages")
    op.drop_index(op.f("ix_chat_messages_tenant_id"), table_name="chat_messages")
    op.drop_table("chat_messages")
    op.drop_index(
        "ix_chat_conversations_tenant_id_created_by_last_message_at",
        table_name="chat_conversations",
    )
    op.drop_index(op.f("ix_chat_conversations_tenant_id"), table_name="chat_conversations")
    op.drop_table("chat_conversations")
