from __future__ import annotations

import uuid

from contentplatform.kit.schemas import Record


class Member(Record):
    id: uuid.UUID
    idp_user_id: str
    email: str | None
    name: str | None
