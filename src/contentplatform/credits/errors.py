"""What the credits domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import Conflict, NotFound, PaymentRequired


class InsufficientCredits(PaymentRequired):
    """The organization has fewer credits available than this needs; the detail says how many
    it needs and how many are left."""


class ReservationNotFound(NotFound):
    """There is no such credit hold for this organization."""

    def __init__(self) -> None:
        super().__init__("Credit reservation not found.")


class ReservationSettled(Conflict):
    """The credit hold was already committed, released or expired, or its idempotency key holds
    another amount."""
