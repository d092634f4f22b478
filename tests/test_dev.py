"""dev.py, the set-up script of the README: two at once set up once, `token` runs `dev-token`.

Set-up is run against a scratch project with a stand-in installer (a real one would install
everything again), in processes of their own, as two `python3 dev.py ...` would run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

DEV = Path(__file__).resolve().parents[1] / "dev.py"

# One dev.py set-up in a process of its own, with an installer that logs its start and end and
# waits, between the two, for the test to create the file `go`.
SETUP = f"""
import importlib.util, os, sys, time
from pathlib import Path

spec = importlib.util.spec_from_file_location("dev", {str(DEV)!r})
dev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dev)
root = Path(sys.argv[1])

def install(root, extras):
    with (root / "installs.log").open("a") as log:
        log.write(f"start {{os.getpid()}}\\n")
    (root / ".venv").mkdir(exist_ok=True)
    deadline = time.monotonic() + 60
    while not (root / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    with (root / "installs.log").open("a") as log:
        log.write(f"end {{os.getpid()}}\\n")

dev.setup(root, install)
"""


def load_dev() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev", DEV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wait_until(check, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_two_setups_at_once_install_once_and_the_second_waits(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "scratch"\n')
    outputs = [tmp_path / "first.out", tmp_path / "second.out"]
    processes = []
    for output in outputs:
        with output.open("w") as sink:
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-c", SETUP, str(tmp_path)],
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                )
            )
    log = tmp_path / "installs.log"
    try:
        wait_until(lambda: log.exists() and "start" in log.read_text(), "an install to start")
        # The other one waits for the lock, and says so, while the first is installing.
        wait_until(
            lambda: any("waiting for another dev.py" in o.read_text() for o in outputs),
            "the second set-up to wait",
        )
        (tmp_path / "go").touch()
        codes = [process.wait(60) for process in processes]
    finally:
        for process in processes:
            process.kill()
    assert codes == [0, 0], [o.read_text() for o in outputs]
    [start, end] = log.read_text().splitlines()
    assert start.split()[0] == "start" and end == start.replace("start", "end")
    wanted = hashlib.sha256((tmp_path / "pyproject.toml").read_bytes()).hexdigest()
    assert (tmp_path / ".venv" / ".installed").read_text() == f"{wanted} dev"


def test_setup_installs_again_only_when_pyproject_changes(tmp_path: Path) -> None:
    dev = load_dev()
    installs: list[Path] = []

    def install(root: Path, extras: tuple[str, ...]) -> None:
        installs.append(root)
        (root / ".venv").mkdir(exist_ok=True)

    project = tmp_path / "pyproject.toml"
    project.write_text('[project]\nname = "scratch"\n')
    dev.setup(tmp_path, install)
    dev.setup(tmp_path, install)
    assert installs == [tmp_path]
    project.write_text('[project]\nname = "scratch"\nversion = "2"\n')
    dev.setup(tmp_path, install)
    assert installs == [tmp_path, tmp_path]


def test_serve_installs_without_the_dev_extras_and_test_adds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dev = load_dev()
    installs: list[tuple[str, ...]] = []

    def install(root: Path, extras: tuple[str, ...]) -> None:
        installs.append(extras)
        (root / ".venv").mkdir(exist_ok=True)

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "scratch"\n')
    monkeypatch.setattr(dev, "ROOT", tmp_path)
    monkeypatch.setattr(dev, "install", install)
    monkeypatch.setattr(dev.setup, "__defaults__", (tmp_path, install, dev.DEV_EXTRAS))
    monkeypatch.setattr(dev, "run", lambda *args: None)
    monkeypatch.setattr(dev.os, "chdir", lambda path: None)

    for command in ("serve", "token", "test", "serve", "test", "setup"):
        monkeypatch.setattr(sys, "argv", ["dev.py", command])
        dev.main()
    # serve: the service alone; test: the dev extras added once; then nothing is missing.
    assert installs == [(), ("dev",)]


def test_token_sets_up_then_runs_dev_token(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = load_dev()
    done: list[object] = []
    monkeypatch.setattr(dev, "setup", lambda **extras: done.append(("setup", extras)))
    monkeypatch.setattr(dev, "run", lambda *args: done.append(args))
    monkeypatch.setattr(sys, "argv", ["dev.py", "token", "--org", "org_a", "--user", "u1"])
    dev.main()
    assert done == [
        ("setup", {"extras": ()}),
        ("contentplatform", "dev-token", "--org", "org_a", "--user", "u1"),
    ]
