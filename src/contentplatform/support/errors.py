"""What the support domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, FieldError, NotFound, RecordNotFound


class TicketNotFound(RecordNotFound):
    """There is no such ticket, or the caller may not see it: another organization's, or (for a
    member who is not an admin) another member's."""

    record = "ticket"


class TicketClosed(Conflict):
    """The ticket is closed: it takes no more replies (open a new one)."""

    def __init__(self, number: int) -> None:
        super().__init__(f"Ticket #{number} is closed; open a new ticket instead.")


class CitedResourceNotFound(NotFound):
    """The `resource` the ticket cites is not one of this organization's (absent, deleted, or
    another organization's)."""

    def __init__(self, kind: str, key: object) -> None:
        super().__init__(f"There is no {kind} {key} in this organization.")


class AttachmentNotFound(NotFound):
    """An `attachmentIds` entry is no media asset of this organization (upload it first with
    media.createUploadUrl and media.confirmUpload)."""

    def __init__(self, key: object) -> None:
        super().__init__(f"There is no media asset {key} in this organization to attach.")


class CaptchaRefused(BadRequest):
    """The contact form needs a solved proof-of-work challenge (`captchaToken`) and got none,
    or one that is forged, expired or used already."""

    def __init__(self, why: str) -> None:
        super().__init__(
            f"The captcha was not solved: {why}.",
            errors=[FieldError("captchaToken", why)],
        )
