"""Team: members kept in step with the identity provider, invitations, identity events."""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0014_team"
down_revision = "0013_settings"


def upgrade() -> None:
    with op.batch_alter_table("tenants") as tenants:
        tenants.add_column(sa.Column("idp_updated_at", UTCDateTime(), nullable=True))
    with op.batch_alter_table("users") as users:
        users.add_column(sa.Column("avatar_url", sa.String(2048), nullable=True))
        users.add_column(sa.Column("idp_updated_at", UTCDateTime(), nullable=True))
    with op.batch_alter_table("memberships") as memberships:
        memberships.add_column(
            sa.Column("status", sa.String(20), nullable=False, server_default="active")
        )
        memberships.add_column(sa.Column("joined_at", UTCDateTime(), nullable=True))
        memberships.add_column(sa.Column("last_active_at", UTCDateTime(), nullable=True))
        memberships.add_column(sa.Column("removed_at", UTCDateTime(), nullable=True))
        memberships.add_column(sa.Column("role_set_at", UTCDateTime(), nullable=True))
        memberships.add_column(sa.Column("idp_membership_id", sa.String(255), nullable=True))
        memberships.add_column(sa.Column("idp_updated_at", UTCDateTime(), nullable=True))
    # Members provisioned before this revision joined when their membership was made.
    op.execute("UPDATE memberships SET joined_at = created_at WHERE joined_at IS NULL")

    op.create_table(
        "team_invitations",
        *shapes.owned(),
        sa.Column("idp_invitation_id", sa.String(255), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("invited_by", sa.Uuid(), nullable=True),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("idp_updated_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("team_invitations"),
        sa.UniqueConstraint(
            "idp_invitation_id", name=op.f("uq_team_invitations_idp_invitation_id")
        ),
    )
    shapes.index_tenant("team_invitations")

    op.create_table(
        "identity_events",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("source", sa.String(40), nullable=False),
        sa.Column("event_id", sa.String(255), nullable=False),
        sa.Column("type", sa.String(100), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("processed_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_events")),
        sa.UniqueConstraint("source", "event_id", name=op.f("uq_identity_events_source_event_id")),
    )
    op.create_index(op.f("ix_identity_events_status"), "identity_events", ["status"])


def downgrade() -> None:
    op.drop_index(op.f("ix_identity_events_status"), table_name="identity_events")
    op.drop_table("identity_events")
    op.drop_index(op.f("ix_team_invitations_tenant_id"), table_name="team_invitations")
    op.drop_table("team_invitations")
    with op.batch_alter_table("memberships") as memberships:
        for column in (
            "idp_updated_at",
            "idp_membership_id",
            "role_set_at",
            "removed_at",
            "last_active_at",
            "joined_at",
            "status",
        ):
            memberships.drop_column(column)
    with op.batch_alter_table("users") as users:
        users.drop_column("idp_updated_at")
        users.drop_column("avatar_url")
    with op.batch_alter_table("tenants") as tenants:
        tenants.drop_column("idp_updated_at")
