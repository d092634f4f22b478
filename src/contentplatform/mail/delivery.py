"""One attempt at a queued message: mark it `sending`, hand it to the SMTP server, record what
came of it. The durable workflow (durable.py) repeats it with backoff.

`sending` is recorded (committed) before the SMTP conversation and `sent` after it, so a crash
in between leaves the row `sending`: the attempt is made again on recovery, and the recipient
may then get a second copy carrying the same `Message-ID` (smtp.py). That window is the only way
a message goes twice; it is never lost and never sent again once `sent` is recorded.
"""

from __future__ import annotations

from contentplatform.core import runtime
from contentplatform.kit import health
from contentplatform.mail import repository, smtp

NOT_CONFIGURED = "mail is not configured (no SMTP host)"


async def attempt(message_id: str, *, final: bool) -> bool:
    """One attempt; whether the message is settled (sent, failed, or gone)."""
    current = runtime.current()
    settings = current.settings
    async with current.db.unit_of_work() as session:
        row = await repository.begin_attempt(session, message_id)
        if row is None:
            return True
        message = smtp.build(
            settings,
            message_id=row.message_id,
            to=row.to_address,
            subject=row.subject,
            text=row.body,
            reply_to=row.reply_to,
        )
        attempts = row.attempts
    found = smtp.target(settings)
    if found is None:
        outcome = smtp.Outcome(sent=False, error=NOT_CONFIGURED)
    else:
        outcome = await smtp.deliver(settings, found, message)
        # The server answered (even with a refusal of this one message): mail is up.
        health.record("mail", outcome.sent or outcome.permanent)
    async with current.db.unit_of_work() as session:
        if outcome.sent:
            await repository.settle(session, message_id, status="sent")
        elif outcome.permanent:
            await repository.settle(session, message_id, status="failed", error=outcome.error)
        elif final:
            reason = f"gave up after {attempts} attempts: {outcome.error}"
            await repository.settle(session, message_id, status="failed", error=reason)
        else:
            await repository.settle(session, message_id, status="queued", error=outcome.error)
    return outcome.sent or outcome.permanent or final


def wait_before(settings_first: float, attempt: int) -> float:
    """The wait after the `attempt`-th failed attempt: the first wait, doubled each time, at
    most an hour."""
    return min(settings_first * 2.0 ** (attempt - 1), 3600.0)
