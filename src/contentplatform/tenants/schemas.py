from __future__ import annotations

import uuid
from datetime import datetime

from contentplatform.kit.schemas import Record


class Member(Record):
    id: uuid.UUID
    idp_user_id: str
    email: str | None
    name: str | None


class TeamMember(Record):
    """A member of the tenant as team.* shows them (the design's Member)."""

    user_id: uuid.UUID
    idp_user_id: str
    email: str | None
    name: str | None
    avatar_url: str | None
    role: str
    status: str
    joined_at: datetime | None
    last_active_at: datetime | None
