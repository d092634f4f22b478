"""Headless Chromium for the browser tests: Debian's `chromium`, found on PATH (the `chromium`
fixture skips a test without one, or fails it when CONTENTPLATFORM_TEST_REQUIRE_BROWSER=1, as
CI sets), and, for a test that must run a page's script step by step, a small client of the
DevTools protocol over its WebSocket (`Browser`, `Page`).

Why the DevTools protocol itself rather than Playwright or Selenium: the steps needed are a
handful (open a page, evaluate a script, await its promise, read console lines), `websockets`
is already installed (uvicorn's), and nothing is downloaded or pinned to a browser build: the
protocol's Target and Runtime domains used here have been stable for years, so Debian's
Chromium, whatever its version, is the browser under test.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Self

import pytest
from websockets.sync.client import ClientConnection, connect

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # Every host name but loopback's fails to resolve: a page reaches nothing but this machine.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
TIMEOUT = 60.0


@pytest.fixture(scope="session")
def chromium() -> str:
    """The browser's path; session-scoped so that a skip comes before any service starts."""
    found = next(filter(None, map(shutil.which, BROWSERS)), None)
    if found is None:
        reason = f"no Chromium on PATH (looked for {', '.join(BROWSERS)})"
        if os.environ.get("CONTENTPLATFORM_TEST_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{reason}, and CONTENTPLATFORM_TEST_REQUIRE_BROWSER=1")
        pytest.skip(reason)
    return found


class PageError(AssertionError):
    """A page's script threw, or a DevTools command failed."""


class Browser:
    """One headless Chromium with a fresh profile in `profile`, driven over DevTools."""

    def __init__(self, chromium: str, profile: Path) -> None:
        self.profile = profile
        self.log = profile / "chromium.log"
        profile.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                [
                    chromium,
                    *FLAGS,
                    f"--user-data-dir={profile}",
                    "--remote-debugging-port=0",
                    "about:blank",
                ],
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.socket: ClientConnection | None = None
        self.next_id = 0
        # Events the browser sent while a command waited for its answer (console lines).
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> Self:
        try:
            self.socket = connect(self._endpoint(), max_size=None, proxy=None, open_timeout=TIMEOUT)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.socket is not None:
            with contextlib.suppress(Exception):
                self.socket.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, 9)
        self.process.wait(TIMEOUT)

    def _endpoint(self) -> str:
        """The browser's DevTools WebSocket, from the file Chromium writes once it listens
        (`--remote-debugging-port=0`: a free port of its choosing)."""
        written = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + TIMEOUT
        while True:
            if self.process.poll() is not None:
                raise PageError(f"Chromium exited early:\n{self.tail()}")
            lines = written.read_text().split() if written.exists() else []
            if len(lines) >= 2:
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            if time.monotonic() > deadline:
                raise PageError(f"Chromium did not open DevTools:\n{self.tail()}")
            time.sleep(0.05)

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def command(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = None,
        timeout: float = TIMEOUT,
    ) -> dict[str, Any]:
        """Send one DevTools command and wait for its answer (bounded)."""
        assert self.socket is not None, "use the browser in a `with`"
        self.next_id += 1
        asked = self.next_id
        message: dict[str, Any] = {"id": asked, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self.socket.send(json.dumps(message))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise PageError(f"{method}: no answer within {timeout:.0f}s")
            reply = json.loads(self.socket.recv(timeout=left))
            if reply.get("id") != asked:
                self.events.append(reply)
                continue
            if "error" in reply:
                raise PageError(f"{method}: {reply['error']}")
            result: dict[str, Any] = reply["result"]
            return result

    def open(self, url: str) -> Page:
        """A new tab showing `url`, once its document has loaded."""
        target = self.command("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.command("Target.attachToTarget", {"targetId": target, "flatten": True})
        page = Page(self, session["sessionId"])
        page.command("Runtime.enable")
        page.command("Page.navigate", {"url": url})
        page.wait(f"document.readyState === 'complete' && location.href === {json.dumps(url)}")
        return page


class Page:
    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def command(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.command(method, params, session=self.session)

    def evaluate(self, expression: str, timeout: float = TIMEOUT) -> Any:
        """The value of `expression` (a promise is awaited), as JSON; PageError if it threw."""
        found = self.browser.command(
            "Runtime.evaluate",
            {
                "expression": expression,
                "awaitPromise": True,
                "returnByValue": True,
                "timeout": int(timeout * 1000),
            },
            session=self.session,
            timeout=timeout + 5,
        )
        if "exceptionDetails" in found:
            details = found["exceptionDetails"]
            thrown = details.get("exception", {}).get("description") or details.get("text")
            raise PageError(f"{expression}: {thrown}\nconsole:\n{self.console()}")
        return found["result"].get("value")

    def wait(self, expression: str, what: str | None = None, timeout: float = TIMEOUT) -> Any:
        """Evaluate `expression` until it is truthy (bounded); its value. A page still loading
        (its context not there yet) is waited for too."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(PageError):
                found = self.evaluate(expression, timeout=max(1.0, deadline - time.monotonic()))
                if found:
                    return found
            if time.monotonic() > deadline:
                raise PageError(
                    f"timed out after {timeout:.0f}s waiting for {what or expression}\n"
                    f"console:\n{self.console()}"
                )
            time.sleep(0.05)

    def console(self) -> str:
        """What the page logged and threw so far, one line each."""
        lines = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            params = event.get("params", {})
            if event.get("method") == "Runtime.consoleAPICalled":
                args = " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
                lines.append(f"{params['type']}: {args}")
            elif event.get("method") == "Runtime.exceptionThrown":
                lines.append(f"uncaught: {params['exceptionDetails'].get('text')}")
        return "\n".join(lines)
