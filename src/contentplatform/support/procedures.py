"""The Support operations, the public contact form (a Public operation) and staff's support
operations (Admin operations, superadmins only): declarations only; the rules live in
service.py. Each group's operations are mounted beside that group's own routers."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.support import schemas, service
from contentplatform.support.errors import (
    AttachmentNotFound,
    CaptchaRefused,
    CitedResourceNotFound,
    TicketClosed,
    TicketNotFound,
)

router = ProcedureRouter("support", tag="Support")
# public.contact, beside the blog feed (public/procedures.py).
public = ProcedureRouter("public", tag="Public")
# admin.*Support*, beside the operators' other operations (admin/procedures.py).
staff = ProcedureRouter("admin", tag="Admin")

WHO_SEES = (
    "A member sees the tickets they opened; an admin every ticket of the organization. Another "
    "member's or another organization's ticket is 404. Staff's internal notes never appear."
)


@router.get("listTickets", "/v1/support/tickets", access=Access.member, description=WHO_SEES)
async def list_tickets(ctx: Context, data: schemas.ListTicketsInput) -> schemas.TicketPage:
    """Support tickets: the caller's own, or all of the tenant for admins."""
    return await service.list_tickets(ctx.session, ctx.tenant, ctx.identity.subject, data)


@router.post(
    "createTicket",
    "/v1/support/tickets",
    access=Access.member,
    errors=[CitedResourceNotFound, AttachmentNotFound],
)
async def create_ticket(ctx: Context, data: schemas.CreateTicketInput) -> schemas.TicketDetail:
    """Open a support ticket.

    Its `number` counts per organization. `requestIds` (at most 10) cite the `x-request-id` of
    failed calls: staff see each resolved into the operation, status and problem code the
    service logged for this organization (its failures of the last 30 days). `resource` names
    what it is about (a generation run, a job instance, a publish attempt, a draft or a
    document of the organization: 404 otherwise); staff and the customer see it on the ticket.
    `attachmentIds` (at most 5) are media assets of the organization (404 otherwise), uploaded
    with media.createUploadUrl and media.confirmUpload. Platform staff are told by mail."""
    return await service.create_ticket(ctx.session, ctx.settings, ctx.tenant, ctx.identity, data)


@router.get(
    "getTicket",
    "/v1/support/tickets/{id}",
    access=Access.member,
    description=WHO_SEES,
    errors=[TicketNotFound],
)
async def get_ticket(ctx: Context, data: schemas.TicketIdInput) -> schemas.TicketDetail:
    """A ticket with its public thread."""
    return await service.get_ticket(ctx.session, ctx.tenant, ctx.identity.subject, data.id)


@router.post(
    "replyTicket",
    "/v1/support/tickets/{id}/messages",
    access=Access.member,
    errors=[TicketNotFound, TicketClosed, AttachmentNotFound],
)
async def reply_ticket(ctx: Context, data: schemas.ReplyTicketInput) -> schemas.TicketMessage:
    """Reply on a ticket.

    A reply to a pending or resolved ticket opens it again (status open); a closed ticket is
    409. Whoever may read the ticket may reply (its creator, the organization's admins)."""
    return await service.reply_ticket(ctx.session, ctx.settings, ctx.tenant, ctx.identity, data)


@router.post(
    "closeTicket", "/v1/support/tickets/{id}/close", access=Access.member, errors=[TicketNotFound]
)
async def close_ticket(ctx: Context, data: schemas.CloseTicketInput) -> schemas.Ticket:
    """Close a ticket.

    By its creator or an admin of the organization; closing a closed ticket changes nothing
    (its first `closed_at` stays). A closed ticket takes no more replies."""
    return await service.close_ticket(ctx.session, ctx.tenant, ctx.identity.subject, data)


@public.post("contact", "/api/contact", access=Access.public, errors=[CaptchaRefused])
async def contact(ctx: Context, data: schemas.ContactInput) -> schemas.ContactReceipt:
    """Public contact form of the platform.

    No token. The message is kept as a support ticket of no organization (source `contact`,
    in admin.listSupportTickets) and its sender gets an acknowledgement by mail; `reference`
    names it. Text is plain text (markup stripped). `website` is a trap for robots: filled, the
    answer is the same and nothing is kept or sent. With ALTCHA_HMAC_KEY set, `captchaToken`
    must be a solved ALTCHA challenge issued with that key (by the site showing the form), each
    solution good once (400 otherwise). At most 5 messages an hour per client address
    (CONTACT_RATE_LIMIT; 429 with Retry-After)."""
    return await service.contact(ctx.session, ctx.runtime, ctx.principal.client_address, data)


@staff.get("listSupportTickets", "/api/admin/support/tickets", access=Access.superadmin)
async def list_support_tickets(
    ctx: Context, data: schemas.AdminListTicketsInput
) -> schemas.StaffTicketPage:
    """Tickets of every tenant and contact-form submissions.

    Latest activity first, filtered by `status`, `priority`, `source` (`app`: opened by a
    member of an organization; `contact`: the public contact form, no tenant) and `tenantId`.
    Superadmins only."""
    return await service.staff_list(ctx.session, data)


@staff.post(
    "replySupportTicket",
    "/api/admin/support/tickets/{id}/messages",
    access=Access.superadmin,
    errors=[TicketNotFound, TicketClosed],
)
async def reply_support_ticket(ctx: Context, data: schemas.AdminReplyInput) -> schemas.StaffReply:
    """Answer a ticket or add an internal note.

    A public answer tells the ticket's creator in the app (a notification) and by mail; a
    contact message's sender by mail only. It sets `first_response_at` the first time. An
    internal note (`internal: true`) is never shown to the customer nor mailed. `status` moves
    the ticket (resolved sets `resolved_at`); `priority` changes it. A closed ticket takes
    notes only (409 for an answer)."""
    return await service.staff_reply(ctx.session, ctx.settings, ctx.identity, data)
