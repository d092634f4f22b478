"""Inputs and answers of the support operations (tickets, staff's view of them, the public
contact form): inputs camelCase on the wire, answers snake_case."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier, MultiLine, Name, PlainMultiLine, PlainText

Status = Literal["open", "pending", "resolved", "closed"]
Category = Literal["bug", "billing", "question", "feature_request", "account"]
Priority = Literal["low", "normal", "high", "urgent"]
Source = Literal["app", "contact"]
AuthorType = Literal["customer", "staff", "system"]
Topic = Literal["sales", "support", "partnership", "other"]
# What a ticket may be opened from: each is looked up in the caller's tenant.
ResourceType = Literal["generation_run", "job_instance", "publish_attempt", "draft", "document"]

MAX_BODY = 20_000
MAX_REQUEST_IDS = 10
MAX_ATTACHMENTS = 5
# An x-request-id as the service hands it out (and as clients may set it): short, no spaces.
RequestId = Annotated[
    Identifier, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:-]+$")
]
EMAIL = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"

TEXT = "Plain text, kept as written (code and markup included): escape it to show it as HTML."


# --- inputs -----------------------------------------------------------------------------------


class ResourceRef(Input):
    type: ResourceType = Field(description="The kind of resource the ticket is about.")
    id: uuid.UUID


class ListTicketsInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    status: Status | None = None


class CreateTicketInput(Input):
    subject: PlainText = Field(min_length=3, max_length=200, description="Markup is stripped.")
    body: MultiLine = Field(min_length=1, max_length=MAX_BODY, description=TEXT)
    category: Category
    priority: Priority = "normal"
    request_ids: list[RequestId] = Field(
        default_factory=list,
        max_length=MAX_REQUEST_IDS,
        description="The `x-request-id` of failed calls (each answer's header and problem "
        "`request_id`): staff see each resolved into the operation, status and problem code "
        "the service logged for the organization (failures of the last 30 days).",
    )
    resource: ResourceRef | None = Field(
        None, description="What the ticket is about: a failed run, a draft, a document."
    )
    attachment_ids: list[uuid.UUID] = Field(
        default_factory=list,
        max_length=MAX_ATTACHMENTS,
        description="Media assets of the organization (media.createUploadUrl, then "
        "media.confirmUpload) shown with the message.",
    )


class TicketIdInput(Input):
    id: uuid.UUID


class ReplyTicketInput(Input):
    id: uuid.UUID
    body: MultiLine = Field(min_length=1, max_length=MAX_BODY, description=TEXT)
    attachment_ids: list[uuid.UUID] = Field(default_factory=list, max_length=MAX_ATTACHMENTS)


class CloseTicketInput(Input):
    id: uuid.UUID
    reason: MultiLine | None = Field(None, max_length=500)


class AdminListTicketsInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    status: Status | None = None
    priority: Priority | None = None
    source: Source | None = None
    tenant_id: uuid.UUID | None = None


class AdminReplyInput(Input):
    id: uuid.UUID
    body: MultiLine = Field(min_length=1, max_length=MAX_BODY, description=TEXT)
    internal: bool = Field(
        False, description="An internal note: never shown to the customer, never mailed."
    )
    status: Literal["pending", "resolved", "closed"] | None = Field(
        None, description="Move the ticket (a public reply to an open ticket leaves it open)."
    )
    priority: Priority | None = None


class ContactInput(Input):
    name: Name = Field(min_length=1, max_length=100)
    email: Identifier = Field(max_length=254, pattern=EMAIL, examples=["grace@example.com"])
    company: Name | None = Field(None, max_length=200)
    topic: Topic = "other"
    message: PlainMultiLine = Field(
        min_length=10, max_length=5000, description="Plain text: markup is stripped."
    )
    website: MultiLine = Field(
        "",
        max_length=2000,
        description="Leave empty: a trap for robots (a filled one is accepted and dropped).",
    )
    captcha_token: Identifier | None = Field(
        None,
        max_length=4000,
        description="The solved ALTCHA challenge (the widget's base64 payload); required when "
        "the service has ALTCHA_HMAC_KEY set.",
    )


# --- answers ----------------------------------------------------------------------------------


class Ticket(Record):
    id: uuid.UUID
    number: int = Field(description="Counts per organization (per contact message for those).")
    subject: str
    category: Category
    priority: Priority
    status: Status
    created_by: str | None = Field(description="Who opened it (their user id).")
    last_message_at: datetime
    created_at: datetime
    closed_at: datetime | None


class TicketMessage(Record):
    id: uuid.UUID
    author_type: AuthorType
    author_name: str | None
    body: str = Field(description=TEXT)
    attachment_ids: list[uuid.UUID]
    created_at: datetime


class CitedResource(BaseModel):
    type: ResourceType
    id: uuid.UUID


class TicketDetail(Ticket):
    resource: CitedResource | None
    messages: list[TicketMessage] = Field(description="The public thread, oldest first.")


class TicketPage(Page[Ticket]):
    pass


class StaffTicket(Ticket):
    tenant_id: uuid.UUID | None = Field(description="None for a contact-form message.")
    source: Source
    first_response_at: datetime | None
    resolved_at: datetime | None


class StaffTicketPage(Page[StaffTicket]):
    pass


class StaffMessage(TicketMessage):
    internal: bool


class Requester(BaseModel):
    name: str | None
    email: str | None
    company: str | None
    topic: Topic | None


class CitedRequest(BaseModel):
    """A cited x-request-id, resolved from the failed requests the service logged for the
    ticket's organization (kept 30 days)."""

    request_id: str
    found: bool = Field(
        description="Whether a failed request of the ticket's organization was logged under "
        "this id in the last 30 days. False for a request that succeeded, a 429, one older "
        "than that, one of another organization, or an id never answered; the other fields "
        "are then null."
    )
    operation: str | None = Field(description="Its operationId (`drafts.publish`).")
    method: str | None = Field(description="Its HTTP method (an RPC call's is POST).")
    status: int | None = Field(description="The HTTP status it was answered with.")
    code: str | None = Field(description="The problem's `code` (`NOT_FOUND`, `CONFLICT`, ...).")
    at: datetime | None = Field(description="When it was answered.")


class StaffTicketDetail(StaffTicket):
    """A ticket as staff read it; admin.getSupportTicket adds its organization's summary."""

    requester: Requester
    resource: CitedResource | None
    request_ids: list[str] = Field(
        description="The x-request-id values the customer cited, as given (`requests` "
        "resolves them)."
    )
    requests: list[CitedRequest] = Field(
        description="Each cited id, in the order of `request_ids`, resolved into what the "
        "service logged of it (the latest, when a client reused an id)."
    )
    messages: list[StaffMessage] = Field(description="Every message, notes included.")


class StaffReply(StaffMessage):
    ticket_status: Status


class ContactReceipt(BaseModel):
    received: Literal[True]
    reference: str = Field(description="Quote it in any follow-up.")
