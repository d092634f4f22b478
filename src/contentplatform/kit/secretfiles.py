"""Secrets kept as files in the data directory (development signing key, upload signing key)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def read_or_create(path: Path, make: Callable[[], bytes]) -> bytes:
    """The file's content, creating it with `make()` first if it does not exist.

    Created exclusively and readable by us alone, so processes starting at once share one secret.
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as handle:
                handle.write(make())
    return path.read_bytes()
