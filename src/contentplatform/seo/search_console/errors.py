"""The errors of Search Console's reads."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, FieldError


class InvalidPattern(BadRequest):
    """A `regex`/`not_regex` filter is not a regular expression RE2 accepts (RE2 syntax, as
    Search Console's own filters: no backreferences, no lookaround)."""

    def __init__(self, field: str, reason: str) -> None:
        message = f"Not a regular expression RE2 accepts: {reason}"
        super().__init__(f"{field}: {message}", errors=[FieldError(path=field, message=message)])
