from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, Field, StringConstraints

from contentplatform.credits.models import (
    ActorType,
    BucketSource,
    EntryType,
    Owner,
    ReservationStatus,
)
from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import PlainMultiLine

Kind = Literal[
    "documents.ingest",
    "generation.blog",
    "chat.message",
    "website_scan.profile",
    "seo.checkRankings",
    "seo.researchKeywords",
    "seo.runAiVisibility",
    "seoPlans.generate",
]
IdempotencyKey = Annotated[
    str, StringConstraints(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9._:-]+$")
]


class BalanceBucket(Record):
    id: uuid.UUID
    source: BucketSource
    granted: int
    remaining: int
    expires_at: datetime | None


class Bucket(BalanceBucket):
    """A bucket as billing sees it when it grants one."""

    period: str | None
    reference: str | None
    description: str
    created_at: datetime


class BalancePeriod(BaseModel):
    """The current calendar month (UTC): credits granted and debited in it."""

    start: datetime
    end: datetime
    granted: int
    used: int


class Balance(BaseModel):
    """A tenant's credits now: available = unexpired bucket remainders (`total`) - open holds
    (`reserved`)."""

    available: int
    reserved: int
    total: int
    period: BalancePeriod
    buckets: list[BalanceBucket] = Field(description="Unexpired, in the order debits draw them.")
    low_balance_threshold: int = Field(
        description="10 % of the monthly grant: admins are warned below it."
    )


class Actor(BaseModel):
    type: ActorType
    id: str | None


class LedgerEntry(BaseModel):
    id: uuid.UUID
    type: EntryType
    kind: str | None
    amount: int
    balance_after: int
    bucket_id: uuid.UUID | None
    reservation_id: uuid.UUID | None
    resource_type: str | None
    resource_id: str | None
    actor: Actor
    description: str
    created_at: datetime


class LedgerPage(Page[LedgerEntry]):
    pass


class Reservation(Record):
    """A hold. `status` is `expired` as soon as `expires_at` passes, before the sweep marks it."""

    id: uuid.UUID
    kind: str
    idempotency_key: str
    amount_held: int = Field(validation_alias=AliasChoices("amount_held", "amount"))
    amount_committed: int | None = Field(
        validation_alias=AliasChoices("amount_committed", "committed_amount")
    )
    status: ReservationStatus
    owner: Owner
    resource_type: str | None
    resource_id: str | None
    created_by: str | None
    created_at: datetime
    expires_at: datetime
    settled_at: datetime | None

    @property
    def amount(self) -> int:
        return self.amount_held

    @property
    def committed_amount(self) -> int | None:
        return self.amount_committed


class ReservationPage(Page[Reservation]):
    pass


class Committed(BaseModel):
    """A settled hold and its debit: `ledger_entry` is the last of `ledger_entries` (a commit
    that spans buckets writes one row per bucket); none when it committed 0."""

    reservation: Reservation
    ledger_entry: LedgerEntry | None
    ledger_entries: list[LedgerEntry]


class Estimate(BaseModel):
    kind: str
    amount: int
    price_basis: str
    available: int
    sufficient: bool


class UsageResult(BaseModel):
    kind: str | None = None
    user_id: uuid.UUID | None = None
    job_id: uuid.UUID | None = None
    credits: int
    operations: int
    input_tokens: int
    output_tokens: int


class UsageBucket(BaseModel):
    start_time: datetime
    end_time: datetime
    results: list[UsageResult]


class Usage(BaseModel):
    data: list[UsageBucket]
    total: int


# --- inputs -------------------------------------------------------------------------------------


class ListLedgerInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)
    type: EntryType | None = None
    kind: Kind | None = None
    start_date: datetime | None = None
    end_date: datetime | None = None


class ListReservationsInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    status: ReservationStatus | None = None
    kind: Kind | None = None


class EstimateInput(Input):
    kind: Kind
    content_length: int | None = Field(None, ge=0, le=2**31 - 1, description="documents.ingest")
    target_words: int | None = Field(None, ge=300, le=5000, description="generation.blog")
    query_chars: int | None = Field(None, ge=0, le=100_000, description="chat.message")
    conversation_id: uuid.UUID | None = Field(None, description="chat.message")


class ReserveInput(Input):
    kind: Kind
    idempotency_key: IdempotencyKey
    amount: int | None = Field(None, ge=1, le=1_000_000, description="Default: the estimate.")
    ttl_seconds: int = Field(900, ge=60, le=86_400)
    resource_id: uuid.UUID | None = None
    content_length: int | None = Field(
        None, ge=0, le=2**31 - 1, description="Prices a documents.ingest hold without `amount`."
    )


class CommitInput(Input):
    id: uuid.UUID
    amount: int = Field(ge=0, le=1_000_000)
    description: PlainMultiLine | None = Field(None, max_length=500)


class ReleaseInput(Input):
    id: uuid.UUID
    reason: PlainMultiLine | None = Field(None, max_length=500)
