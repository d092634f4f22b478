"""The mailer over the real SMTP protocol: what `mail.send` queues reaches a loopback aiosmtpd
server once per message id; an outage (the server stopped) is retried with backoff and each mail
then arrives exactly once (counted by its Message-ID); a 5xx answer fails the mail visibly; an
address or subject that would inject a header is refused before anything is queued."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from dbos import DBOS
from sqlalchemy import update

from contentplatform.config import Environment, Settings
from contentplatform.core import runtime
from contentplatform.kit import durable as kit_durable
from contentplatform.kit.db import utcnow
from contentplatform.mail import durable, repository, smtp
from contentplatform.mail import service as mail
from contentplatform.mail.errors import MailRefused
from contentplatform.mail.models import OutboxMail
from tests.support.mailbox import Mailbox
from tests.support.servers import AppServer
from tests.support.waits import until_workflow_ends

T = TypeVar("T")
ADDRESS = "reader@example.com"


def on_server(server: AppServer, work: Callable[[], Awaitable[T]]) -> T:
    """Run `work()` on the service's loop, where its database and DBOS live."""
    assert server.loop is not None
    return asyncio.run_coroutine_threadsafe(work(), server.loop).result(30)  # type: ignore[arg-type]


def send(server: AppServer, *messages: dict[str, Any]) -> list[bool]:
    """Queue `messages` in one transaction (as a domain's operation would)."""

    async def work() -> list[bool]:
        async with runtime.current().db.unit_of_work() as session:
            return [
                await mail.send(session, kind="test", to=ADDRESS, text="Hello.", **message)
                for message in messages
            ]

    return on_server(server, work)


def row(server: AppServer, message_id: str) -> OutboxMail:
    async def work() -> OutboxMail:
        async with runtime.current().db.unit_of_work() as session:
            found = await mail.find(session, message_id)
            assert found is not None
            return found

    return on_server(server, work)


def until(check: Callable[[], T | None], *, timeout: float = 20, what: str) -> T:
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if answer:
            return answer
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.05)


def header_id(settings: Settings, message_id: str) -> str:
    return smtp.header_message_id(message_id, settings.mail_from)


def new_id() -> str:
    return f"test:{uuid.uuid4()}"


@pytest.fixture
def own_box(server: AppServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mailbox]:
    """A mailbox of the test's own, not yet started: the service sends there while the test
    lasts (the session's mailbox stays untouched)."""
    box = Mailbox()
    current = runtime.current()
    monkeypatch.setattr(
        current, "settings", current.settings.model_copy(update={"smtp_port": box.port})
    )
    yield box
    box.stop()


def test_a_mail_arrives_once_with_its_headers(server, settings, mailbox):
    message_id = new_id()
    assert send(server, {"message_id": message_id, "subject": "Welcome aboard"}) == [True]
    received = mailbox.wait_for(to=ADDRESS, subject_contains="Welcome aboard")
    assert received["Message-ID"] == header_id(settings, message_id)
    assert received["From"] == settings.mail_from
    assert received["Auto-Submitted"] == "auto-generated"
    assert received.get_content().strip() == "Hello."
    sent = until(
        lambda: (found := row(server, message_id)).status == "sent" and found,
        what="the row marked sent",
    )
    assert sent.attempts == 1 and sent.sent_at is not None and sent.last_error is None


def test_a_second_send_of_one_message_id_adds_nothing(server, settings, mailbox):
    message_id = new_id()
    first = {"message_id": message_id, "subject": "Only once"}
    assert send(server, first, first) == [True, False]
    assert send(server, first) == [False]
    until_workflow_ends(
        durable.workflow_id(message_id, 1),
        lambda: row(server, message_id).status == "sent" or None,
        timeout=20,
        what="the delivery",
    )
    assert mailbox.count(header_id(settings, message_id)) == 1


def test_an_outage_is_retried_and_each_mail_then_arrives_exactly_once(server, own_box):
    """Acceptance: the SMTP server is down (nothing listens on its port); every mail is tried,
    fails, waits and is tried again; once the server is back, each arrives exactly once."""
    ids = [new_id() for _ in range(3)]
    send(server, *({"message_id": one, "subject": f"Outage {one}"} for one in ids))
    for one in ids:  # at least two attempts failed, and the rows say why
        until(
            lambda one=one: (
                (found := row(server, one)).attempts >= 2
                and found.status in ("queued", "sending")
                and found.last_error
            ),
            what="a retried attempt",
        )
    assert own_box.received == []
    own_box.start()
    settings = runtime.current().settings
    for one in ids:
        sent = until(
            lambda one=one: (found := row(server, one)).status == "sent" and found,
            timeout=30,
            what="the delivery after the outage",
        )
        # The attempt that sent it ended, and no attempt comes after it.
        last = durable.workflow_id(one, sent.attempts)
        until_workflow_ends(last, lambda: True, timeout=20, what="the last attempt")
        assert DBOS.get_workflow_status(last).status == "SUCCESS"
        assert DBOS.get_workflow_status(durable.workflow_id(one, sent.attempts + 1)) is None
    for one in ids:
        assert own_box.count(header_id(settings, one)) == 1
        assert row(server, one).sent_at is not None
    assert len(own_box.received) == 3


def test_a_permanent_refusal_fails_the_mail_visibly_without_retrying(server, own_box):
    own_box.answer_with("550 5.1.1 no such mailbox")
    own_box.start()
    message_id = new_id()
    send(server, {"message_id": message_id, "subject": "Refused"})
    failed = until_workflow_ends(
        durable.workflow_id(message_id, 1),
        lambda: ((found := row(server, message_id)).status == "failed" and found) or None,
        timeout=20,
        what="the refusal",
    )
    assert failed.attempts == 1
    assert failed.last_error == "the SMTP server answered 550: 5.1.1 no such mailbox"
    assert failed.sent_at is None and own_box.received == []


def test_a_temporary_refusal_is_retried(server, own_box):
    own_box.answer_with("451 4.3.0 try again later")
    own_box.start()
    message_id = new_id()
    send(server, {"message_id": message_id, "subject": "Greylisted"})
    until(lambda: row(server, message_id).attempts >= 2, what="a second attempt")
    assert "451" in (row(server, message_id).last_error or "")
    own_box.answer_with(None)
    own_box.wait_for(to=ADDRESS, subject_contains="Greylisted")
    until(lambda: row(server, message_id).status == "sent", what="the row marked sent")
    assert own_box.count(header_id(runtime.current().settings, message_id)) == 1


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("subject", {"subject": "Hi\r\nBcc: victim@example.com"}),
        ("subject", {"subject": "Hi\nthere"}),
        ("subject", {"subject": "NUL\x00"}),
        ("subject", {"subject": "   "}),
        ("subject", {"subject": "x" * 201}),
        ("to", {"to": "reader@example.com\r\nBcc: victim@example.com"}),
        ("to", {"to": "reader@example.com, victim@example.com"}),
        ("to", {"to": "Reader <reader@example.com>"}),
        ("to", {"to": "not an address"}),
        ("reply_to", {"reply_to": "a@b.co\nBcc: c@d.co"}),
        ("text", {"text": "x" * 100_001}),
        ("text", {"text": "NUL\x00"}),
        ("message_id", {"message_id": ""}),
        ("message_id", {"message_id": "x" * 201}),
        ("kind", {"kind": "Not A Kind"}),
    ],
)
def test_what_would_inject_a_header_or_break_a_bound_is_refused_and_nothing_is_queued(
    server, field, change
):
    message_id = new_id()
    values = {"message_id": message_id, "to": ADDRESS, "subject": "Fine", "text": "Hi", "kind": "t"}
    values.update(change)

    async def work() -> str:
        async with runtime.current().db.unit_of_work() as session:
            try:
                await mail.send(session, **values)
            except MailRefused as refused:
                assert refused.errors is not None
                return refused.errors[0].path
            raise AssertionError("queued")

    assert on_server(server, work) == field

    async def stored() -> OutboxMail | None:
        async with runtime.current().db.unit_of_work() as session:
            return await mail.find(session, message_id)

    assert on_server(server, stored) is None


def test_addresses(settings):
    assert smtp.valid_address("a.b+c@mail.example.org") == "a.b+c@mail.example.org"
    for refused in ("a@b", "@b.co", "a@.co", "a..b@c.co", "é@b.co", "a@b.co\n", "<a@b.co>"):
        assert smtp.valid_address(refused) is None


def test_where_mail_goes(settings):
    """Configured: the host; `local` without one: serve's loopback server; elsewhere without
    one: nowhere (mail waits, queued)."""
    assert smtp.target(settings) == smtp.Target("127.0.0.1", settings.smtp_port, "none")
    local = settings.model_copy(update={"smtp_host": None})
    assert smtp.target(local) == smtp.Target("127.0.0.1", settings.mail_local_port, "none")
    production = settings.model_copy(update={"smtp_host": None, "env": Environment.production})
    assert smtp.target(production) is None
    assert smtp.header_message_id("x", "Team <team@example.com>").endswith("@example.com>")


@pytest.mark.parametrize("left", ["queued", "sending"])
def test_mail_left_unsettled_by_a_crash_is_resumed_by_the_reconciler(
    server, settings, mailbox, left
):
    """A crash after the send's commit and before its workflow (queued, no attempt), or one
    during an attempt whose workflow is gone (sending): the reconciler starts the attempt."""
    message_id = new_id()

    async def crashed() -> None:
        async with runtime.current().db.unit_of_work() as session:
            await repository.insert_once(
                session,
                {
                    "message_id": message_id,
                    "tenant_id": None,
                    "kind": "test",
                    "to_address": ADDRESS,
                    "reply_to": None,
                    "subject": f"Resumed {left}",
                    "body": "Hello.",
                },
            )
            long_ago = utcnow() - durable.RECONCILE_AFTER * 2
            await session.execute(
                update(OutboxMail)
                .where(OutboxMail.message_id == message_id)
                .values(status=left, attempts=1 if left == "sending" else 0, updated_at=long_ago)
            )

    on_server(server, crashed)
    assert DBOS.get_workflow_status(durable.workflow_id(message_id, 1)) is None
    on_server(server, lambda: kit_durable.reconcile_once(runtime.current().db))
    # Started by this pass (or by the service's own reconciler just before it: nothing else
    # starts it).
    assert DBOS.get_workflow_status(durable.workflow_id(message_id, 1)) is not None
    received = mailbox.wait_for(to=ADDRESS, subject_contains=f"Resumed {left}")
    assert received["Message-ID"] == header_id(settings, message_id)
    until(lambda: row(server, message_id).status == "sent", what="the row marked sent")


@pytest.mark.parametrize(
    "sender",
    [
        "nobody",
        "a@example.com, b@example.com",  # two senders
        "Support <help@example.com>\r\nBcc: everyone@example.com",  # a header of its own
        "Support <help@example.com>\nBcc: everyone@example.com",
        "<@example.com>",
        "help@",
        "Support <help desk@example.com>",
    ],
)
def test_the_sender_is_one_mailbox_on_one_line(sender: str) -> None:
    with pytest.raises(ValueError, match="CONTENTPLATFORM_MAIL_FROM"):
        Settings(_env_file=None, mail_from=sender)  # type: ignore[call-arg]


def test_a_sender_is_an_address_or_a_named_one() -> None:
    for sender in ("help@example.com", "Content Platform <noreply@example.com>"):
        assert Settings(_env_file=None, mail_from=sender).mail_from == sender  # type: ignore[call-arg]
