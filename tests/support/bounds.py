"""Inputs every operation of a kind refuses with a 400: the bounds of a paged list with a search
(page from 1, limit 1 to 100, a search of at most 255 characters), as (query, the field its 400
names) cases, and ids that are not UUIDs."""

from __future__ import annotations

from typing import Any

PAGE_BOUNDS: list[tuple[dict[str, Any], str]] = [
    ({"page": 0}, "page"),
    ({"page": -1}, "page"),
    ({"limit": 0}, "limit"),
    ({"limit": 101}, "limit"),
    ({"search": "x" * 256}, "search"),
]

# Not a UUID at all, digits, a UUID one character short.
MALFORMED_IDS = ["not-a-uuid", "12345", "0f8fad5b-d9cb-469f-a165-70867728950"]
