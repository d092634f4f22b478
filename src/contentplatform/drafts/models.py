from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    Uuid,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, SoftDeleteMixin, TenantMixin, UTCDateTime

LIVE = text("deleted_at IS NULL")


class Draft(RecordMixin, TenantMixin, SoftDeleteMixin, Base):
    __tablename__ = "drafts"
    __table_args__ = (
        # Lists, counts and stats read live drafts only: partial indexes hold just those, so a
        # page and its count are read from the index, not from wide rows (migration 0008).
        Index(
            "ix_drafts_tenant_id_created_at_live",
            "tenant_id",
            "created_at",
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        ),
        # A page of one status in order, and the count of a job's or a search's (0030).
        Index(
            "ix_drafts_tenant_id_status_created_at_live",
            "tenant_id",
            "status",
            "created_at",
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        ),
        Index("ix_drafts_tenant_id_job_id", "tenant_id", "job_id"),
        Index("ix_drafts_tenant_id_slug", "tenant_id", "slug"),
    )

    title: Mapped[str] = mapped_column(String(500), nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    # The content as plain text, kept for search over title and content.
    content_text: Mapped[str] = mapped_column(Text, nullable=False, default="")
    excerpt: Mapped[str | None] = mapped_column(Text)
    seo_meta: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    seo_score: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    job_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    instance_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    # The latest generation run that wrote (or is writing) this draft.
    run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    assignee_id: Mapped[str | None] = mapped_column(String(255))
    rejection_reason: Mapped[str | None] = mapped_column(Text)
    provenance: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    # The number of the latest revision; 0 while the first generation is still running.
    version: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    approved_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Who approved it: a user's subject, or "system:auto_publish".
    approved_by: Mapped[str | None] = mapped_column(String(255))
    published_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Where it is live (the first target that took it), and its public blog slug, fixed once
    # it was first published so links keep working.
    published_url: Mapped[str | None] = mapped_column(Text)
    slug: Mapped[str | None] = mapped_column(String(200))
    # What auto-publish decided for this draft and why: {decision: published|held, reason, ...}.
    auto_publish: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class DraftRevision(RecordMixin, TenantMixin, Base):
    """The content of a draft as one change left it: who, when, what changed, AI or human."""

    __tablename__ = "draft_revisions"
    __table_args__ = (UniqueConstraint("draft_id", "version"),)

    draft_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("drafts.id", ondelete="CASCADE"), nullable=False
    )
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    title: Mapped[str] = mapped_column(String(500), nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    excerpt: Mapped[str | None] = mapped_column(Text)
    seo_meta: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    seo_score: Mapped[int | None] = mapped_column(Integer)
    author_type: Mapped[str] = mapped_column(String(10), nullable=False)  # ai | human | system
    author_id: Mapped[str | None] = mapped_column(String(255))
    change_summary: Mapped[str] = mapped_column(String(500), nullable=False)
    fields_changed: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    # For AI revisions: provider, model, prompt version and the chunks each section cites.
    provenance: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class DraftComment(RecordMixin, TenantMixin, Base):
    """A review comment on a draft, or a reply to one (replies are one level deep). The body is
    plain text as typed; `anchor` ties it to a passage of the version it was written on."""

    __tablename__ = "draft_comments"
    __table_args__ = (
        # A draft's threads in order, and each thread's replies.
        Index(
            "ix_draft_comments_tenant_id_draft_id_created_at", "tenant_id", "draft_id", "created_at"
        ),
        Index("ix_draft_comments_parent_id", "parent_id"),
    )

    draft_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("drafts.id", ondelete="CASCADE"), nullable=False
    )
    parent_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("draft_comments.id", ondelete="CASCADE")
    )
    # The identity provider's user id of who wrote it.
    author_id: Mapped[str] = mapped_column(String(255), nullable=False)
    body: Mapped[str] = mapped_column(Text, nullable=False)
    # {quote, start, end, version}: character offsets in the draft's text at that version.
    anchor: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # The members it mentions, by their identity provider's user id.
    mentions: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    # Set on a thread's first comment when a reply resolves the thread.
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    resolved_by: Mapped[str | None] = mapped_column(String(255))


class DraftCount(Base):
    """How many live drafts a tenant has in a status: a list's `total` without counting them.
    Kept by triggers on drafts in the writing transaction (migration 0030), never by the code."""

    __tablename__ = "draft_counts"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    status: Mapped[str] = mapped_column(String(20), primary_key=True)
    live: Mapped[int] = mapped_column(Integer, nullable=False)


# The search index is made by migration 0031_drafts_search with raw SQL, differently per dialect,
# so the models do not describe it: on SQLite an FTS5 table (and FTS5's shadow tables) filled by
# triggers; on PostgreSQL pg_trgm GIN indexes on expressions.
SEARCH_TABLE = "drafts_search"
SEARCH_SHADOW_TABLES = frozenset(
    f"{SEARCH_TABLE}_{part}" for part in ("data", "idx", "content", "docsize", "config")
)
SEARCH_INDEXES = frozenset(("ix_drafts_title_trigrams", "ix_drafts_content_text_trigrams"))


def include_name(name: str | None, type_: str, parent_names: Mapping[str, str | None]) -> bool:
    """Alembic `include_name` hook: leave the search index out of the drift check."""
    if type_ == "table":
        return name != SEARCH_TABLE and name not in SEARCH_SHADOW_TABLES
    return not (type_ == "index" and name in SEARCH_INDEXES)
