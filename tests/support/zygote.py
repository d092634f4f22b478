"""Service processes for the tests, forked from a process that imported the service once.

A `contentplatform serve` spends about four seconds of CPU importing before it does anything,
and the crash and recovery tests start about a hundred of them per suite: a third of the suite's
CPU. The zygote is a plain Python process (no thread, no event loop, nothing launched) that
imports what `serve` imports and then, for each request, forks a child that becomes the service
exactly as `python -m contentplatform.cli serve ...` would: a session of its own, the request's
environment, working directory and argument list, its output in the request's log, `__main__`
being `contentplatform.cli` (so a worker pool it spawns starts as it would from the command).
It is still a real process: killed with SIGKILL, stopped with SIGTERM, crashing on its own.

`Zygote.spawn(argv, env, cwd, log)` answers a `Forked`, which offers what the tests use of a
`subprocess.Popen` (pid, poll, wait, send_signal, kill, returncode). The zygote reaps its
children through pidfds and reports each exit status, as a parent would see it.

Where `os.pidfd_open` is missing (not Linux), or with CONTENTPLATFORM_TEST_FORK_SERVICES=0,
`tests/support/processes.py` starts each service with `subprocess.Popen` instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

# CONTENTPLATFORM_TEST_FORK_SERVICES=0: every service a fresh interpreter, as before.
AVAILABLE = (
    hasattr(os, "pidfd_open")
    and sys.platform == "linux"
    and os.environ.get("CONTENTPLATFORM_TEST_FORK_SERVICES", "1") != "0"
)


class Forked:
    """A service process the zygote forked, as the tests use a `subprocess.Popen`."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote = zygote
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.exit_status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self.returncode = self.zygote.wait_for_exit(self.pid, timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    """The test process's end: starts the zygote, sends it requests, hears its replies."""

    def __init__(self) -> None:
        replies, self._write_end = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(self._write_end)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(self._write_end,),
        )
        os.close(self._write_end)
        self._replies = os.fdopen(replies, "r")
        self._changed = threading.Condition()
        self._started: dict[int, int] = {}
        self._exits: dict[int, int] = {}
        self._requests = 0
        self._send_lock = threading.Lock()
        threading.Thread(target=self._listen, name="zygote-replies", daemon=True).start()

    def _listen(self) -> None:
        for line in self._replies:
            kind, first, second = line.split()
            with self._changed:
                if kind == "started":
                    self._started[int(first)] = int(second)
                else:
                    self._exits[int(first)] = int(second)
                self._changed.notify_all()
        with self._changed:  # the zygote is gone: nothing more will come
            self._started.setdefault(-1, -1)
            self._changed.notify_all()

    def spawn(self, argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> Forked:
        """Fork a child running `contentplatform <argv>` (argv without the program)."""
        assert self.process.stdin is not None
        with self._send_lock:
            self._requests += 1
            number = self._requests
            request = {"id": number, "argv": argv, "env": env, "cwd": str(cwd), "log": str(log)}
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        with self._changed:
            if not self._changed.wait_for(
                lambda: number in self._started or -1 in self._started, timeout=60
            ):
                raise RuntimeError("the zygote did not fork in 60 s")
            if number not in self._started:
                raise RuntimeError(f"the zygote exited with {self.process.poll()}")
            return Forked(self, self._started[number])

    def exit_status(self, pid: int) -> int | None:
        with self._changed:
            return self._exits.get(pid)

    def wait_for_exit(self, pid: int, timeout: float | None) -> int:
        with self._changed:
            if not self._changed.wait_for(lambda: pid in self._exits, timeout=timeout):
                raise subprocess.TimeoutExpired(f"service process {pid}", timeout or 0)
            return self._exits[pid]

    def close(self) -> None:
        """End the zygote (its children are the tests' to kill; none outlives them)."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


_shared: Zygote | None = None
_shared_lock = threading.Lock()


def shared() -> Zygote:
    """This test process's zygote, started on first use."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.process.poll() is not None:
            _shared = Zygote()
        return _shared


def close_shared() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.close()
            _shared = None


# --- the zygote process -------------------------------------------------------------------------


def _become_service(request: dict[str, Any], reply_fd: int) -> None:
    """In the forked child: become `contentplatform <argv>`; never returns."""
    code = 1
    try:
        os.setsid()
        os.close(reply_fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own streams
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        import contentplatform.cli as cli

        sys.argv = ["contentplatform", *request["argv"]]
        sys.modules["__main__"] = cli
        cli.main(request["argv"])
        code = 0
    except SystemExit as exiting:
        if isinstance(exiting.code, int):
            code = exiting.code
        elif exiting.code is None:
            code = 0
        else:
            print(exiting.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _serve_requests(reply_fd: int) -> None:
    # What `serve` imports, once: every child shares it (copy-on-write).
    import gc

    import uvicorn  # noqa: F401

    import contentplatform.app
    import contentplatform.cli
    import contentplatform.domains  # noqa: F401
    from contentplatform.kit import logs, migrations  # noqa: F401

    gc.collect()
    gc.freeze()
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ, None)
    pending = b""
    while True:
        for key, _ in selector.select():
            if key.data is None:
                # Raw reads: a buffered reader could hold a second request the selector
                # would then never report.
                chunk = os.read(0, 65536)
                if not chunk:
                    return  # the test process is gone, or done with us
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    _fork(json.loads(line), selector, reply_fd)
            else:
                pid = key.data
                selector.unregister(key.fileobj)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                os.write(reply_fd, f"exited {pid} {os.waitstatus_to_exitcode(status)}\n".encode())


def _fork(request: dict[str, Any], selector: selectors.BaseSelector, reply_fd: int) -> None:
    pid = os.fork()
    if pid == 0:
        selector.close()
        _become_service(request, reply_fd)
    selector.register(os.pidfd_open(pid), selectors.EVENT_READ, pid)
    os.write(reply_fd, f"started {request['id']} {pid}\n".encode())


if __name__ == "__main__":
    _serve_requests(int(sys.argv[1]))
