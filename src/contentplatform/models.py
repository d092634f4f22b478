"""Imports every domain's tables so Alembic and tests see the whole schema."""

from __future__ import annotations


def load_all() -> None:
    from contentplatform.tenants import models as tenants  # noqa: F401
