"""What the credits domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import Conflict, Forbidden, NotFound, PaymentRequired


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


class ReservationAdopted(Conflict):
    """The metered operation that runs under this hold's key adopted it: it settles the hold
    itself."""

    def __init__(self) -> None:
        super().__init__(
            "This hold was adopted by the operation run under its key; it settles itself."
        )


class KindNeedsEditor(Forbidden):
    """Holding credits for documents.ingest or generation.blog needs the editor role."""


class NotHoldCreator(Forbidden):
    """Only the member who created a hold, or an admin, may release it."""

    def __init__(self) -> None:
        super().__init__("Only the member who created this hold, or an admin, may release it.")
