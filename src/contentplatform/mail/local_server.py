"""`serve`'s own SMTP server in `local` when no SMTP host is set: aiosmtpd on loopback, which
keeps each message it receives as an .eml file under `<data_dir>/mail/` (open one with any mail
program). Only ever started by `serve` in `local`; it never relays anything anywhere."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from contentplatform.config import Settings
from contentplatform.mail import smtp

log = logging.getLogger(__name__)


class _SaveToFiles:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = self.directory / f"{stamp}-{uuid.uuid4().hex[:8]}.eml"
        partial = path.with_suffix(".part")
        partial.write_bytes(envelope.content)
        os.replace(partial, path)  # a reader never sees half a message
        log.info("mail for %s saved in %s", ", ".join(envelope.rcpt_tos), path)
        return "250 OK"


class LocalMailServer:
    def __init__(self, settings: Settings) -> None:
        self.directory = settings.data_dir.resolve() / "mail"
        self.port = settings.mail_local_port
        self.controller: Controller | None = None

    def start(self) -> bool:
        """Listen on loopback; False (logged) when the port is taken: mail then waits and is
        retried until a server listens there."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if not _port_free(self.port):
            # aiosmtpd would find out too, but only after its ready timeout (5 s of start-up).
            log.warning("the local mail server could not listen on port %s: in use", self.port)
            return False
        controller = Controller(
            _SaveToFiles(self.directory), hostname=smtp.LOOPBACK, port=self.port
        )
        try:
            controller.start()
        except (OSError, RuntimeError) as error:
            log.warning("the local mail server could not listen on port %s: %s", self.port, error)
            return False
        self.controller = controller
        return True

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def describe(self) -> str:
        return f"Mail: SMTP on {smtp.LOOPBACK}:{self.port}, each message saved in {self.directory}"


def _port_free(port: int) -> bool:
    """Whether a listener could bind the port now (as asyncio's would, reusing the address)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((smtp.LOOPBACK, port))
        except OSError:
            return False
        return True


def for_serve(settings: Settings) -> LocalMailServer | None:
    """The server `serve` runs: in `local` without an SMTP host only."""
    if settings.is_local and not settings.smtp_host:
        return LocalMailServer(settings)
    return None
