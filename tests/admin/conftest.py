"""The Admin tests' fixtures (tests/admin/support.py)."""

from __future__ import annotations

from tests.admin.support import operator

__all__ = ["operator"]
