from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel

from contentplatform.credits.models import ReservationStatus
from contentplatform.kit.schemas import Record


class Balance(BaseModel):
    """A tenant's credits now.

    `granted` and `used` cover the current calendar month (UTC, `period`); `held` and
    `available` are totals: available = the whole ledger - open holds, so credits carried over
    from other grants count in it too.
    """

    period: str
    granted: int
    used: int
    held: int
    available: int


class Reservation(Record):
    """A hold. `status` is `expired` as soon as `expires_at` passes, before the sweep marks it."""

    id: uuid.UUID
    tenant_id: uuid.UUID
    kind: str
    idempotency_key: str
    amount: int
    status: ReservationStatus
    committed_amount: int | None
    expires_at: datetime
    created_at: datetime
    updated_at: datetime
