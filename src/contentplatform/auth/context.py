"""Who is calling: the verified identity and, for tenant-scoped operations, tenant and role."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal


class Role(StrEnum):
    member = "member"
    editor = "editor"
    admin = "admin"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def includes(self, needed: Role) -> bool:
        return self.rank >= needed.rank

    @classmethod
    def from_claim(cls, value: object) -> Role | None:
        """`org:admin`, `admin`, ... to a Role; unknown custom roles count as member."""
        if not isinstance(value, str) or not value:
            return None
        name = value.removeprefix("org:")
        try:
            return cls(name)
        except ValueError:
            return cls.member


_RANK = {Role.member: 1, Role.editor: 2, Role.admin: 3}


class Access(StrEnum):
    """What an operation requires of its caller."""

    public = "public"  # no token
    user = "user"  # any verified token, no organization needed
    member = "member"
    editor = "editor"
    admin = "admin"
    superadmin = "superadmin"  # only admin.* on /api/admin/*

    @property
    def tenant_role(self) -> Role | None:
        return {
            Access.member: Role.member,
            Access.editor: Role.editor,
            Access.admin: Role.admin,
        }.get(self)


@dataclass(frozen=True)
class Identity:
    """A caller proven by a verified token."""

    subject: str
    email: str | None
    name: str | None
    superadmin: bool
    # Organizations the token itself vouches for, with the role it states there.
    organizations: dict[str, Role]
    organization_names: dict[str, str]
    # How it was proven: a JWT, an API key, a stream token (auth/stream_tokens.py), or an
    # impersonation token this service minted (auth/impersonation_tokens.py).
    auth: Literal["jwt", "api_key", "stream_token", "impersonation"] = "jwt"
    claims: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class TenantAccess:
    tenant_id: uuid.UUID
    org_id: str
    org_name: str
    user_id: uuid.UUID
    role: Role


@dataclass(frozen=True)
class KeyAccess:
    """What an API key resolves to: the key's own identity (`auth` api_key, its subject
    `apikey_<id>`), the one tenant it acts in with its role, and when it stops working."""

    key_id: uuid.UUID
    identity: Identity
    tenant: TenantAccess
    expires_at: datetime | None


ImpersonationMode = Literal["read_only", "read_write"]


@dataclass(frozen=True)
class ImpersonationAccess:
    """What an open impersonation session gives its token: the tenant access of the member it
    acts as (`tenant`), in `mode`, until `expires_at`, for the superadmin `actor`."""

    session_id: uuid.UUID
    actor: str
    tenant: TenantAccess
    mode: ImpersonationMode
    expires_at: datetime


@dataclass(frozen=True)
class Principal:
    identity: Identity | None
    tenant: TenantAccess | None
    client_address: str
    # Proven by a stream token: the one stream it may read (auth/stream_tokens.py).
    stream: str | None = None
