from __future__ import annotations

import uuid

from pydantic import BaseModel


class Member(BaseModel):
    id: uuid.UUID
    idp_user_id: str
    email: str | None
    name: str | None
