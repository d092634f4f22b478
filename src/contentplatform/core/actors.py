"""Who is acting in this unit of work, for the events it writes (the activity trail).

Set once per request from the verified caller (core/procedures.py); durable work and
anything else outside a request acts as the system. Services never pass it along: an event
written anywhere below a request names its caller.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

ActorType = Literal["user", "system", "api_key"]


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
