"""Support's rules: tickets and their thread, staff's answers and notes, the public contact form.
Never commits (the request's unit of work does).

States: open <-> pending -> resolved -> closed. A customer's reply moves a pending or resolved
ticket to open; closed takes no reply (409). Close is idempotent. A customer never sees an
internal note: the customer's reads ask the repository for public messages only.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from altcha.v1 import verify_solution as verify_altcha
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Identity, Role, TenantAccess
from contentplatform.config import Settings
from contentplatform.core.runtime import Runtime
from contentplatform.documents import service as documents
from contentplatform.drafts import service as drafts
from contentplatform.events import service as events
from contentplatform.generation import service as generation
from contentplatform.job_instances import service as job_instances
from contentplatform.kit import text
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, FieldError, NotFound, TooManyRequests
from contentplatform.kit.schemas import offset_of
from contentplatform.mail import service as mail
from contentplatform.mail.errors import MailRefused
from contentplatform.media import service as media
from contentplatform.publishers import service as publishers
from contentplatform.support import repository, request_log, schemas
from contentplatform.support.errors import (
    AttachmentNotFound,
    CaptchaRefused,
    CitedResourceNotFound,
    TicketClosed,
    TicketNotFound,
)
from contentplatform.support.models import SupportMessage, SupportTicket
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

NAME_LENGTH = 255
REPLIED = "support_ticket.replied"
# A solved captcha is good once: its signature is remembered (in the rate limiter's store,
# shared by every process with Redis) for longer than any challenge should live.
CAPTCHA_ONCE = "1/day"
CONTACT_CATEGORY = "question"
SUBJECT_LENGTH = 200


async def _mail(session: AsyncSession, *, subject: str, **sent: Any) -> bool:
    """Queue a mail; False when the mailer refuses the address (an identity provider's email
    that is none): the answer on the ticket stands, in the app, without it."""
    try:
        return await mail.send(session, subject=subject[:SUBJECT_LENGTH], **sent)
    except MailRefused:
        log.warning("support mail %s not sent: the mailer refused it", sent.get("message_id"))
        return False


# --- records ----------------------------------------------------------------------------------


def _ticket(ticket: SupportTicket) -> schemas.Ticket:
    return schemas.Ticket.model_validate(ticket)


def _resource(ticket: SupportTicket) -> schemas.CitedResource | None:
    if ticket.resource_type is None or ticket.resource_id is None:
        return None
    return schemas.CitedResource.model_validate(
        {"type": ticket.resource_type, "id": ticket.resource_id}
    )


def _staff_ticket(ticket: SupportTicket) -> schemas.StaffTicket:
    return schemas.StaffTicket.model_validate(ticket)


async def _detail(session: AsyncSession, ticket: SupportTicket) -> schemas.TicketDetail:
    assert ticket.tenant_id is not None
    # Public messages only: the one read a customer's answer is made from.
    thread = await repository.messages(session, ticket.tenant_id, ticket.id, internal=False)
    return schemas.TicketDetail(
        **_ticket(ticket).model_dump(),
        resource=_resource(ticket),
        messages=[schemas.TicketMessage.model_validate(message) for message in thread],
    )


# --- a tenant's tickets -----------------------------------------------------------------------


def _own_only(tenant: TenantAccess, subject: str) -> str | None:
    """Whose tickets the caller sees: an admin every ticket of the tenant, a member their own."""
    return None if tenant.role.includes(Role.admin) else subject


async def list_tickets(
    session: AsyncSession, tenant: TenantAccess, subject: str, data: schemas.ListTicketsInput
) -> schemas.TicketPage:
    rows, total = await repository.page(
        session,
        tenant.tenant_id,
        created_by=_own_only(tenant, subject),
        status=data.status,
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    return schemas.TicketPage(
        data=[_ticket(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def _visible(
    session: AsyncSession,
    tenant: TenantAccess,
    subject: str,
    ticket_id: uuid.UUID,
    *,
    for_update: bool = False,
) -> SupportTicket:
    found = await repository.ticket(
        session,
        tenant.tenant_id,
        ticket_id,
        created_by=_own_only(tenant, subject),
        for_update=for_update,
    )
    if found is None:
        raise TicketNotFound(ticket_id)
    return found


async def get_ticket(
    session: AsyncSession, tenant: TenantAccess, subject: str, ticket_id: uuid.UUID
) -> schemas.TicketDetail:
    return await _detail(session, await _visible(session, tenant, subject, ticket_id))


async def _check_resource(
    session: AsyncSession, tenant: TenantAccess, resource: schemas.ResourceRef
) -> None:
    """The resource is the tenant's, by its own domain's service (404 otherwise)."""
    try:
        if resource.type == "draft":
            await drafts.require(session, tenant.tenant_id, resource.id)
        elif resource.type == "document":
            await documents.require(session, tenant, resource.id)
        elif resource.type == "generation_run":
            await generation.get_run(session, tenant.tenant_id, resource.id)
        elif resource.type == "publish_attempt":
            if not await publishers.attempt_exists(session, tenant.tenant_id, resource.id):
                raise NotFound()
        elif await job_instances.find(session, tenant.tenant_id, resource.id) is None:
            raise NotFound()
    except NotFound:
        raise CitedResourceNotFound(resource.type.replace("_", " "), resource.id) from None


async def _check_attachments(
    session: AsyncSession, tenant_id: uuid.UUID, ids: Sequence[uuid.UUID]
) -> list[str]:
    """The ids, each a media asset of the tenant (404 otherwise), once each, as stored."""
    unique = list(dict.fromkeys(ids))
    for media_id in unique:
        try:
            await media.require(session, tenant_id, media_id)
        except NotFound:
            raise AttachmentNotFound(media_id) from None
    return [str(media_id) for media_id in unique]


def _author_name(identity: Identity) -> str | None:
    return text.cleaned(identity.name or identity.email or "", NAME_LENGTH) or None


async def create_ticket(
    session: AsyncSession,
    settings: Settings,
    tenant: TenantAccess,
    identity: Identity,
    data: schemas.CreateTicketInput,
) -> schemas.TicketDetail:
    if data.resource is not None:
        await _check_resource(session, tenant, data.resource)
    attachments = await _check_attachments(session, tenant.tenant_id, data.attachment_ids)
    profile = await tenants.member_profile(session, tenant)
    now = utcnow()
    ticket = SupportTicket(
        id=uuid.uuid4(),
        tenant_id=tenant.tenant_id,
        source="app",
        subject=data.subject,
        category=data.category,
        priority=data.priority,
        status="open",
        created_by=identity.subject,
        requester_name=_author_name(identity) or profile.name,
        requester_email=identity.email or profile.email,
        request_ids=list(dict.fromkeys(data.request_ids)),
        resource_type=data.resource.type if data.resource else None,
        resource_id=data.resource.id if data.resource else None,
        last_message_at=now,
        created_at=now,
        updated_at=now,
    )
    await repository.add_numbered(session, ticket)
    message = _message(ticket, "customer", identity, data.body, attachments)
    session.add(message)
    await session.flush()
    await _tell_staff(session, settings, ticket, message, "New ticket")
    return await _detail(session, ticket)


def _message(
    ticket: SupportTicket,
    author_type: str,
    identity: Identity | None,
    body: str,
    attachments: list[str],
    *,
    internal: bool = False,
    author_name: str | None = None,
) -> SupportMessage:
    now = utcnow()
    return SupportMessage(
        id=uuid.uuid4(),
        ticket_id=ticket.id,
        tenant_id=ticket.tenant_id,
        author_type=author_type,
        author_id=text.cleaned(identity.subject, NAME_LENGTH) if identity else None,
        author_name=author_name or (_author_name(identity) if identity else None),
        body=body,
        internal=internal,
        attachment_ids=attachments,
        created_at=now,
        updated_at=now,
    )


async def reply_ticket(
    session: AsyncSession,
    settings: Settings,
    tenant: TenantAccess,
    identity: Identity,
    data: schemas.ReplyTicketInput,
) -> schemas.TicketMessage:
    ticket = await _visible(session, tenant, identity.subject, data.id, for_update=True)
    if ticket.status == "closed":
        raise TicketClosed(ticket.number)
    attachments = await _check_attachments(session, tenant.tenant_id, data.attachment_ids)
    message = _message(ticket, "customer", identity, data.body, attachments)
    session.add(message)
    # The customer answered: whatever waited on them (pending) or was resolved is open again.
    ticket.status = "open"
    ticket.last_message_at = message.created_at
    await session.flush()
    await _tell_staff(session, settings, ticket, message, "Customer reply")
    return schemas.TicketMessage.model_validate(message)


async def close_ticket(
    session: AsyncSession, tenant: TenantAccess, subject: str, data: schemas.CloseTicketInput
) -> schemas.Ticket:
    ticket = await _visible(session, tenant, subject, data.id, for_update=True)
    if ticket.status != "closed":
        ticket.status = "closed"
        ticket.closed_at = utcnow()
        ticket.close_reason = data.reason
        await session.flush()
    return _ticket(ticket)


async def open_tickets(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """The tenant's tickets still open or pending (for the operators' view of a tenant)."""
    return await repository.open_count(session, tenant_id)


async def is_tenants_ticket(
    session: AsyncSession, tenant_id: uuid.UUID, ticket_id: uuid.UUID
) -> bool:
    """Whether the ticket is one of the tenant's (an impersonation may be bound to it)."""
    return await repository.ticket(session, tenant_id, ticket_id) is not None


# --- staff (superadmins) ----------------------------------------------------------------------


async def staff_list(
    session: AsyncSession, data: schemas.AdminListTicketsInput
) -> schemas.StaffTicketPage:
    filters = {
        "status": data.status,
        "priority": data.priority,
        "source": data.source,
        "tenant_id": data.tenant_id,
    }
    rows, total = await repository.any_page(
        session, filters, limit=data.limit, offset=offset_of(data.page, data.limit)
    )
    return schemas.StaffTicketPage(
        data=[_staff_ticket(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def _any(
    session: AsyncSession, ticket_id: uuid.UUID, *, for_update: bool = False
) -> SupportTicket:
    found = await repository.any_ticket(session, ticket_id, for_update=for_update)
    if found is None:
        raise TicketNotFound(ticket_id)
    return found


async def staff_get(session: AsyncSession, ticket_id: uuid.UUID) -> schemas.StaffTicketDetail:
    ticket = await _any(session, ticket_id)
    thread = await repository.thread(session, ticket)
    return schemas.StaffTicketDetail(
        **_staff_ticket(ticket).model_dump(),
        requester=schemas.Requester(
            name=ticket.requester_name,
            email=ticket.requester_email,
            company=ticket.company,
            topic=ticket.topic,
        ),
        resource=_resource(ticket),
        request_ids=list(ticket.request_ids),
        requests=await request_log.resolve(session, ticket.tenant_id, ticket.request_ids),
        messages=[schemas.StaffMessage.model_validate(message) for message in thread],
    )


async def staff_reply(
    session: AsyncSession, settings: Settings, identity: Identity, data: schemas.AdminReplyInput
) -> schemas.StaffReply:
    ticket = await _any(session, data.id, for_update=True)
    # A note may still be added to a closed ticket; an answer may not (nobody reads it there).
    if ticket.status == "closed" and not (data.internal and data.status in (None, "closed")):
        raise TicketClosed(ticket.number)
    name = text.cleaned(identity.name or "", NAME_LENGTH) or "Support"
    message = _message(
        ticket, "staff", identity, data.body, [], internal=data.internal, author_name=name
    )
    session.add(message)
    now = message.created_at
    if data.priority is not None:
        ticket.priority = data.priority
    if data.status is not None and data.status != ticket.status:
        ticket.status = data.status
        if data.status == "resolved":
            ticket.resolved_at = now
        elif data.status == "closed":
            ticket.closed_at = now
    if not data.internal:
        ticket.last_message_at = now
        if ticket.first_response_at is None:
            ticket.first_response_at = now
    await session.flush()
    if not data.internal:
        await _tell_customer(session, ticket, message)
    return schemas.StaffReply(
        **schemas.StaffMessage.model_validate(message).model_dump(), ticket_status=ticket.status
    )


async def _tell_customer(
    session: AsyncSession, ticket: SupportTicket, message: SupportMessage
) -> None:
    """A staff answer reaches the customer: in the app (an event the notifications route to the
    ticket's creator) for a tenant's ticket, and by mail always."""
    if ticket.tenant_id is not None:
        events.emit(
            session,
            ticket.tenant_id,
            REPLIED,
            resource_id=ticket.id,
            payload={
                "ticket_id": ticket.id,
                "number": ticket.number,
                "subject": ticket.subject,
                "status": ticket.status,
                "created_by": ticket.created_by,
            },
        )
    if ticket.requester_email:
        where = (
            "Answer it in the app under Support."
            if ticket.tenant_id is not None
            else "Reply through the contact form, quoting the reference below."
        )
        await _mail(
            session,
            message_id=f"support-reply-{message.id}",
            to=ticket.requester_email,
            subject=f"[#{ticket.number}] {ticket.subject}",
            text=f"{message.body}\n\n--\n{where}\nReference: {ticket.id}\n",
            kind="support_reply",
            tenant_id=ticket.tenant_id,
        )


async def _tell_staff(
    session: AsyncSession,
    settings: Settings,
    ticket: SupportTicket,
    message: SupportMessage,
    what: str,
) -> None:
    """One mail to platform staff (SUPPORT_STAFF_EMAIL, when set) for each customer message."""
    if settings.support_staff_email is None:
        return
    where = f"tenant {ticket.tenant_id}" if ticket.tenant_id else "the contact form"
    await _mail(
        session,
        message_id=f"support-staff-{message.id}",
        to=settings.support_staff_email,
        subject=f"{what}: #{ticket.number} {ticket.subject}",
        text=(
            f"{what} from {message.author_name or 'a customer'} ({where}), priority "
            f"{ticket.priority}.\n\n{message.body}\n\n--\nTicket {ticket.id} "
            "(admin.getSupportTicket)\n"
        ),
        kind="support_staff",
        reply_to=ticket.requester_email,
    )


# --- the public contact form ------------------------------------------------------------------


async def contact(
    session: AsyncSession, runtime: Runtime, client_address: str, data: schemas.ContactInput
) -> schemas.ContactReceipt:
    settings = runtime.settings
    # Every message counts, the trapped and the refused too: a robot is slowed down as well.
    await runtime.limiter.check(settings.contact_rate_limit, f"contact:{client_address}")
    if data.website.strip():
        # The trap was filled: the same answer as a message taken, and nothing kept or sent.
        return schemas.ContactReceipt(received=True, reference=str(uuid.uuid4()))
    if settings.altcha_hmac_key is not None:
        await _check_captcha(runtime, settings.altcha_hmac_key.get_secret_value(), data)
    now = utcnow()
    ticket = SupportTicket(
        id=uuid.uuid4(),
        tenant_id=None,
        source="contact",
        subject=text.cleaned(f"Contact ({data.topic}) from {data.name}", 200),
        category=CONTACT_CATEGORY,
        priority="normal",
        status="open",
        requester_name=data.name,
        requester_email=data.email,
        company=data.company,
        topic=data.topic,
        request_ids=[],
        last_message_at=now,
        created_at=now,
        updated_at=now,
    )
    await repository.add_numbered(session, ticket)
    message = _message(ticket, "customer", None, data.message, [], author_name=data.name)
    session.add(message)
    await session.flush()
    try:
        await mail.send(
            session,
            message_id=f"support-contact-{ticket.id}",
            to=data.email,
            subject=f"We received your message (#{ticket.number})",
            text=(
                f"Hello {data.name},\n\nThank you for writing to us; we will answer at this "
                f"address.\n\nYour message:\n\n{data.message}\n\n--\nReference: {ticket.id}\n"
            ),
            kind="contact_ack",
        )
    except MailRefused:
        raise BadRequest(
            "This email address cannot be written to.",
            errors=[FieldError("email", "not an address mail can be sent to")],
        ) from None
    await _tell_staff(session, settings, ticket, message, "Contact message")
    return schemas.ContactReceipt(received=True, reference=str(ticket.id))


async def _check_captcha(runtime: Runtime, key: str, data: schemas.ContactInput) -> None:
    """The ALTCHA solution is genuine (signed with our key, its number found), not expired, and
    used for the first time."""
    if not data.captcha_token:
        raise CaptchaRefused("a solved challenge is required")
    try:
        payload = json.loads(base64.b64decode(data.captcha_token, validate=True))
    except (binascii.Error, ValueError):
        raise CaptchaRefused("not an ALTCHA payload") from None
    if not isinstance(payload, dict):
        raise CaptchaRefused("not an ALTCHA payload")
    try:
        verified, _ = verify_altcha(data.captcha_token, key, True)
    except (TypeError, ValueError, AttributeError):
        verified = False
    if not verified:
        raise CaptchaRefused("the solution is wrong, forged or expired")
    try:
        await runtime.limiter.check(CAPTCHA_ONCE, f"altcha:{payload.get('signature')}")
    except TooManyRequests:
        raise CaptchaRefused("this solution was used already") from None
