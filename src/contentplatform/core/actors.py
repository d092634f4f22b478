"""Who is acting in this unit of work, for the events it writes (the activity trail).

Set once per request from the verified caller (core/routing.py); durable work and
anything else outside a request acts as the system. Services never pass it along: an event
written anywhere below a request names its caller.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from contentplatform.auth.context import Identity
from contentplatform.kit import text

ActorType = Literal["user", "system", "api_key"]
# The events' actor columns are this long.
NAME_LENGTH = 255


@dataclass(frozen=True)
class Actor:
    type: ActorType
    id: str | None
    display_name: str | None
    # The superadmin acting as this user (the token's `act.sub`), if any.
    impersonated_by: str | None = None
    ip: str | None = None
    user_agent: str | None = None
    request_id: str | None = None


def of_identity(identity: Identity, **where: str | None) -> Actor:
    """The verified caller as events name it; `where` adds ip, user_agent, request_id."""
    acting_for = identity.claims.get("act")
    impersonator = acting_for.get("sub") if isinstance(acting_for, dict) else None
    # The claims are the identity provider's, signed but never checked as our inputs are: made
    # fit to store (no NUL, which PostgreSQL refuses; no control or invisible characters).
    return Actor(
        type="api_key" if identity.auth == "api_key" else "user",
        id=text.cleaned(identity.subject, NAME_LENGTH),
        display_name=text.cleaned(identity.name or identity.email or identity.subject, NAME_LENGTH)
        or None,
        impersonated_by=(
            text.cleaned(impersonator, NAME_LENGTH) if isinstance(impersonator, str) else None
        ),
        **where,
    )


SYSTEM = Actor(type="system", id=None, display_name="System")

_current: contextvars.ContextVar[Actor] = contextvars.ContextVar("actor", default=SYSTEM)


def current() -> Actor:
    return _current.get()


@contextlib.contextmanager
def acting(actor: Actor) -> Iterator[None]:
    token = _current.set(actor)
    try:
        yield
    finally:
        _current.reset(token)
