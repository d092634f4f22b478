"""What the mailer refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, FieldError


class MailRefused(BadRequest):
    """A message the mailer will not queue: an address that is not one (`to`, `reply_to`), a
    subject with a line break or control character (header injection), a body too long, or a
    message id outside its bounds. `errors` names the field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"The mail cannot be sent: {reason}", errors=[FieldError(field, reason)])
