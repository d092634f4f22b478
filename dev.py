#!/usr/bin/env python3
"""Set-up and run in one step, on a machine with only Python 3.11+ and pip.

    python3 dev.py serve   # create .venv, install, run the service on http://127.0.0.1:8000
    python3 dev.py test    # create .venv, install with the dev tools, run the whole test suite
                           # (args go to pytest)
    python3 dev.py token --org org_a --user u1 --role admin   # print a development token
    python3 dev.py setup   # only create .venv and install, with the dev tools

The virtual environment lives in .venv; it is reinstalled whenever pyproject.toml changes.
`serve` and `token` install the service alone; `test` and `setup` add the dev extras (test
runner, linters, fuzzer: about 70 packages more). pip's own output shows the progress. Any
number of these may run at once: one sets up, the others wait for it (a lock on .venv.lock).
`token` takes the arguments of `contentplatform dev-token` and works from any directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import time
import venv
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

if os.name == "nt":
    import msvcrt

    def _lock(handle: IO[bytes], wait: bool) -> bool:
        handle.seek(0)  # msvcrt locks bytes from the current position: always the first one
        while True:
            try:
                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
                return True
            except OSError:
                if not wait:
                    return False
                time.sleep(0.2)

    def _unlock(handle: IO[bytes]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(handle: IO[bytes], wait: bool) -> bool:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _unlock(handle: IO[bytes]) -> None:
        fcntl.flock(handle, fcntl.LOCK_UN)


ROOT = Path(__file__).resolve().parent
BIN = ROOT / ".venv" / ("Scripts" if os.name == "nt" else "bin")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file `path` (made when missing) for the block, waiting
    for whoever holds it."""
    with open(path, "a+b") as handle:
        if not _lock(handle, wait=False):
            print("waiting for another dev.py to finish setting up .venv ...", flush=True)
            _lock(handle, wait=True)
        try:
            yield
        finally:
            _unlock(handle)


DEV_EXTRAS = ("dev",)


def install(root: Path, extras: tuple[str, ...]) -> None:
    """Create `root`/.venv when missing and install the project (editable) with `extras`."""
    bin_dir = root / ".venv" / BIN.name
    if not (bin_dir / "python").exists():
        print("creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(root / ".venv")
    python = str(bin_dir / "python")
    what = " and the dev tools" if extras else ""
    print(
        f"installing contentplatform{what} into .venv (the first time takes a few minutes;"
        " pip says what it is doing) ...",
        flush=True,
    )
    subprocess.run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    target = f"{root}[{','.join(extras)}]" if extras else str(root)
    subprocess.run(
        [python, "-m", "pip", "install", "--progress-bar", "on", "-e", target], check=True
    )
    print("installed.", flush=True)


def _installed(stamp: Path, wanted: str, extras: tuple[str, ...]) -> bool:
    """Whether .venv holds this pyproject.toml's install with at least `extras`. The stamp is
    the file's hash and the extras installed with it."""
    if not stamp.exists():
        return False
    digest, _, had = stamp.read_text().partition(" ")
    return digest == wanted and set(extras) <= set(filter(None, had.split(",")))


def setup(
    root: Path = ROOT,
    installer: Callable[[Path, tuple[str, ...]], None] = install,
    extras: tuple[str, ...] = DEV_EXTRAS,
) -> None:
    """Install unless .venv is up to date with pyproject.toml and has `extras`. Under the lock:
    a second dev.py started meanwhile waits, then finds the work done."""
    if sys.version_info < (3, 11):  # noqa: UP036 - this script may be run by an older Python
        sys.exit(f"Python 3.11 or newer is needed; this is {sys.version.split()[0]}.")
    stamp = root / ".venv" / ".installed"
    wanted = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()
    if _installed(stamp, wanted, extras):
        return
    with locked(root / ".venv.lock"):
        if _installed(stamp, wanted, extras):
            return
        installer(root, extras)
        stamp.write_text(f"{wanted} {','.join(extras)}")


def run(program: str, *args: str) -> None:
    executable = str(BIN / program)
    if os.name == "nt":
        sys.exit(subprocess.call([executable, *args]))
    os.execv(executable, [executable, *args])


def main() -> None:
    command, *rest = sys.argv[1:] or ["help"]
    if command == "setup":
        setup()
    elif command == "serve":
        setup(extras=())
        run("contentplatform", "serve", *rest)
    elif command == "token":
        setup(extras=())
        run("contentplatform", "dev-token", *rest)
    elif command == "test":
        setup()
        os.chdir(ROOT)
        # The suite starts hundreds of Python processes (xdist workers, service processes):
        # without cached bytecode each compiles the package, and pytest rewrites every test
        # module's asserts, from source again (seconds of CPU a process).
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        run("pytest", *rest)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
