"""`serve`'s own SMTP server in `local`: each message it receives is an .eml file under
`<data_dir>/mail/`; it runs only in `local` without an SMTP host."""

from __future__ import annotations

import asyncio
import time
from email import message_from_bytes, policy

from contentplatform.config import Environment
from contentplatform.mail import local_server, smtp
from tests.support.mailbox import Mailbox


def test_serve_saves_each_message_as_an_eml_file(settings, tmp_path):
    port = Mailbox().port  # a free loopback port
    local = settings.model_copy(
        update={"smtp_host": None, "data_dir": tmp_path, "mail_local_port": port}
    )
    server = local_server.for_serve(local)
    assert server is not None and server.start()
    try:
        assert str(tmp_path / "mail") in server.describe()
        message = smtp.build(
            local, message_id="m1", to="a@example.com", subject="Saved", text="Hi", reply_to=None
        )
        found = smtp.target(local)
        assert found == smtp.Target("127.0.0.1", port, "none")
        outcome = asyncio.run(smtp.deliver(local, found, message))
        assert outcome.sent, outcome.error
    finally:
        server.stop()
    [saved] = (tmp_path / "mail").glob("*.eml")
    read = message_from_bytes(saved.read_bytes(), policy=policy.default)
    assert read["Subject"] == "Saved" and read["To"] == "a@example.com"
    assert not list((tmp_path / "mail").glob("*.part"))


def test_it_runs_only_in_local_without_a_host(settings):
    assert local_server.for_serve(settings) is None  # a host is set
    assert local_server.for_serve(settings.model_copy(update={"smtp_host": None})) is not None
    production = settings.model_copy(update={"smtp_host": None, "env": Environment.production})
    assert local_server.for_serve(production) is None


def test_a_taken_port_is_given_up_at_once_so_serve_starts_without_waiting(settings, tmp_path):
    """Another `serve` on the same machine holds the port: this one starts without its own
    server at once (aiosmtpd alone finds out only after its 5 s ready timeout)."""
    holder = Mailbox().start()
    try:
        local = settings.model_copy(
            update={"smtp_host": None, "data_dir": tmp_path, "mail_local_port": holder.port}
        )
        server = local_server.for_serve(local)
        assert server is not None
        started = time.monotonic()
        assert server.start() is False
        assert time.monotonic() - started < 3  # not the 5 s of a ready timeout
    finally:
        holder.stop()
