"""One SMTP conversation (aiosmtplib), and what came of it: no database, no retry of its own.

A message's `Message-ID` header is derived from its outbox key, so a copy sent twice (a crash
between the server's acceptance and our record of it) is recognisable as the same message by
the recipient's mail system and by whoever reads the logs.
"""

from __future__ import annotations

import hashlib
import re
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, parseaddr

import aiosmtplib

from contentplatform.config import Settings

# Where `serve` runs its own SMTP server in `local` when no host is set (mail/local_server.py).
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    tls: str  # none | starttls | tls


def target(settings: Settings) -> Target | None:
    """The server mail is handed to: the configured one; in `local` without one, `serve`'s own
    loopback server; None when mail is not configured (mail waits, queued)."""
    if settings.smtp_host:
        return Target(settings.smtp_host, settings.smtp_port, settings.smtp_tls)
    if settings.is_local:
        return Target(LOOPBACK, settings.mail_local_port, "none")
    return None


def header_message_id(message_id: str, sender: str) -> str:
    """`<hash@domain>`: the same for every copy of one outbox message, whatever its key holds."""
    digest = hashlib.sha256(message_id.encode()).hexdigest()[:40]
    domain = parseaddr(sender)[1].rpartition("@")[2] or "localhost"
    return f"<{digest}@{domain}>"


def build(
    settings: Settings,
    *,
    message_id: str,
    to: str,
    subject: str,
    text: str,
    reply_to: str | None,
) -> EmailMessage:
    message = EmailMessage()
    message["From"] = settings.mail_from
    message["To"] = to
    message["Subject"] = subject
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = header_message_id(message_id, settings.mail_from)
    # Sent by the service itself: auto-responders must not answer it (RFC 3834).
    message["Auto-Submitted"] = "auto-generated"
    if reply_to:
        message["Reply-To"] = reply_to
    message.set_content(text)
    return message


@dataclass(frozen=True)
class Outcome:
    """`sent`; or not, `permanent` (a 5xx answer: no retry will help) or not (retry)."""

    sent: bool
    permanent: bool = False
    error: str | None = None


async def deliver(settings: Settings, found: Target, message: EmailMessage) -> Outcome:
    """Hand `message` to the server; a connection error, a timeout or a 4xx answer is
    transient, a 5xx answer permanent."""
    password = settings.smtp_password.get_secret_value() if settings.smtp_password else None
    context = ssl.create_default_context() if found.tls != "none" else None
    try:
        await aiosmtplib.send(
            message,
            hostname=found.host,
            port=found.port,
            username=settings.smtp_username,
            password=password,
            use_tls=found.tls == "tls",
            start_tls=found.tls == "starttls",
            tls_context=context,
            timeout=settings.smtp_timeout_seconds,
        )
    except aiosmtplib.SMTPRecipientsRefused as refused:
        codes = [recipient.code for recipient in refused.recipients]
        return Outcome(
            sent=False,
            permanent=all(code >= 500 for code in codes),
            error=_said(codes[0] if codes else 0, refused.recipients[0].message if codes else ""),
        )
    except aiosmtplib.SMTPResponseException as answer:
        return Outcome(
            sent=False, permanent=answer.code >= 500, error=_said(answer.code, answer.message)
        )
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as failure:
        # Connection refused or dropped, a timeout, a TLS failure: the server may be back soon.
        return Outcome(sent=False, error=f"{type(failure).__name__}: {failure}"[:300])
    return Outcome(sent=True)


def _said(code: int, text: str) -> str:
    return f"the SMTP server answered {code}: {text}"[:300]


# RFC 5322's dot-atom local part and a dotted host name, ASCII only: what every SMTP server takes
# without the SMTPUTF8 extension. Quoted local parts and address literals are refused.
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_ADDRESS = re.compile(rf"{_ATOM}(?:\.{_ATOM})*@{_LABEL}(?:\.{_LABEL})+")


def valid_address(value: str) -> str | None:
    """The address if `value` is exactly one plain address (`user@example.com`: no display
    name, no line break, no second address), else None."""
    if len(value) > 254 or not _ADDRESS.fullmatch(value) or len(value.partition("@")[0]) > 64:
        return None
    return value
