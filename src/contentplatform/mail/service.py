"""Queue mail: one outbox row in the caller's transaction, delivered after it commits.

`send` is what every domain calls. It never talks to SMTP itself: the row commits with the
caller's change (or not at all), and the durable delivery (durable.py) starts once it has.
"""

from __future__ import annotations

import re
import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.kit.db import after_commit
from contentplatform.mail import durable, repository, smtp
from contentplatform.mail.errors import MailRefused
from contentplatform.mail.models import OutboxMail

MAX_SUBJECT = 200
MAX_TEXT = 100_000
MAX_MESSAGE_ID = 200
_KIND = re.compile(r"[a-z][a-z0-9_.]{0,39}")
# A header value may hold no control character: a CR or LF would start a header of its own.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


async def send(
    session: AsyncSession,
    *,
    message_id: str,
    to: str,
    subject: str,
    text: str,
    kind: str,
    tenant_id: uuid.UUID | None = None,
    reply_to: str | None = None,
) -> bool:
    """Queue one mail, delivered once the caller's transaction commits; False (and nothing
    added) when `message_id` was queued already. Raises MailRefused for an address that is not
    one, a subject with a line break or control character, or a body or key out of bounds."""
    if not 0 < len(message_id) <= MAX_MESSAGE_ID or _CONTROL.search(message_id):
        raise MailRefused("message_id", f"must be 1 to {MAX_MESSAGE_ID} printable characters")
    if smtp.valid_address(to) is None:
        raise MailRefused("to", "must be one email address")
    if reply_to is not None and smtp.valid_address(reply_to) is None:
        raise MailRefused("reply_to", "must be one email address")
    if not subject.strip() or len(subject) > MAX_SUBJECT or _CONTROL.search(subject):
        raise MailRefused("subject", f"must be 1 to {MAX_SUBJECT} characters with no line break")
    if len(text) > MAX_TEXT or "\x00" in text:
        raise MailRefused("text", f"must be at most {MAX_TEXT} characters, with no NUL")
    if not _KIND.fullmatch(kind):
        raise MailRefused("kind", "must be a short lower-case name")
    added = await repository.insert_once(
        session,
        {
            "message_id": message_id,
            "tenant_id": tenant_id,
            "kind": kind,
            "to_address": to,
            "reply_to": reply_to,
            "subject": subject,
            "body": text,
        },
    )
    if added and smtp.target(runtime.current().settings) is not None:

        async def begin() -> None:
            await durable.start(message_id)

        after_commit(session, begin)
    return added


async def find(session: AsyncSession, message_id: str) -> OutboxMail | None:
    """The outbox row of `message_id` (its status, attempts, last error, sent time)."""
    return await repository.by_message_id(session, message_id)
