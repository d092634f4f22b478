#!/usr/bin/env python3
"""Set-up and run in one step, on a machine with only Python 3.11+ and pip.

    python3 dev.py serve   # create .venv, install, run the service on http://127.0.0.1:8000
    python3 dev.py test    # create .venv, install, run the whole test suite (args go to pytest)
    python3 dev.py setup   # only create .venv and install

The virtual environment lives in .venv; it is reinstalled whenever pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".installed"


def setup() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - this script may be run by an older Python
        sys.exit(f"Python 3.11 or newer is needed; this is {sys.version.split()[0]}.")
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    if not (BIN / "python").exists():
        print("creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    python = str(BIN / "python")
    print("installing contentplatform and its dependencies into .venv ...", flush=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "-e", f"{ROOT}[dev]"], check=True)
    STAMP.write_text(wanted)


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
        setup()
        run("contentplatform", "serve", *rest)
    elif command == "test":
        setup()
        os.chdir(ROOT)
        run("pytest", *rest)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
