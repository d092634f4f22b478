"""What the public feed answers when there is nothing to show."""

from __future__ import annotations

from contentplatform.kit.errors import NotFound, RecordNotFound


class BlogNotFound(NotFound):
    """No active tenant has this id (unknown and suspended tenants answer alike)."""


class PostNotFound(RecordNotFound):
    """The slug is not a published post of the tenant."""

    record = "published post"
