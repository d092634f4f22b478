"""A real SMTP server on loopback (aiosmtpd) that keeps what it receives, for the mail tests.

`Mailbox()` picks a free port once and keeps it, so `stop()` and `start()` make an outage and
its end at the same address. `answer_with("550 5.1.1 no such user")` makes the server refuse
every message with that reply until `answer_with(None)`. `wait_for(to=..., subject_contains=...)`
returns the first message that matches, waiting (bounded) until one arrives.
"""

from __future__ import annotations

import socket
import threading
import time
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

HOST = "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


class _Handler:
    def __init__(self, box: Mailbox) -> None:
        self.box = box

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.box.answer is not None:
            return self.box.answer
        message = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(message, EmailMessage)
        with self.box.arrived:
            self.box.received.append(message)
            self.box.arrived.notify_all()
        return "250 OK"


class Mailbox:
    def __init__(self) -> None:
        self.port = _free_port()
        self.received: list[EmailMessage] = []
        self.arrived = threading.Condition()
        # A reply that refuses every message instead of taking it ("550 ..." or "451 ...").
        self.answer: str | None = None
        self.controller: Controller | None = None

    def settings(self) -> dict[str, Any]:
        """What a service's settings need to send here."""
        return {"smtp_host": HOST, "smtp_port": self.port, "smtp_tls": "none"}

    def start(self) -> Mailbox:
        if self.controller is None:
            self.controller = Controller(_Handler(self), hostname=HOST, port=self.port)
            self.controller.start()
        return self

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def __enter__(self) -> Mailbox:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def answer_with(self, reply: str | None) -> None:
        self.answer = reply

    def matching(
        self, *, to: str | None = None, subject_contains: str | None = None
    ) -> list[EmailMessage]:
        with self.arrived:
            return [
                message
                for message in self.received
                if (to is None or message["To"] == to)
                and (subject_contains is None or subject_contains in str(message["Subject"]))
            ]

    def wait_for(
        self, *, to: str | None = None, subject_contains: str | None = None, timeout: float = 15
    ) -> EmailMessage:
        """The first message to `to` whose subject holds `subject_contains`, once it is here."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                found = self.matching(to=to, subject_contains=subject_contains)
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                assert left > 0, f"no mail to {to} about {subject_contains!r} within {timeout} s"
                self.arrived.wait(left)

    def count(self, message_id_header: str) -> int:
        """How many copies of one message (by its Message-ID header) arrived."""
        with self.arrived:
            return sum(1 for message in self.received if message["Message-ID"] == message_id_header)
