"""Stream URLs: an event stream's REST URL carrying a stream token (auth/stream_tokens.py), for a
browser's EventSource, which cannot send an Authorization header.

A domain's operation that makes one (chat.createStreamUrl, generation.createRunStreamUrl) checks
the caller may read the stream, then hands back `issue(ctx, path, stream)`: the stream's path
(that of the operation declared with `stream_token=`), the token for the caller, their
organization and that stream, and when it stops opening it.
"""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlencode

from pydantic import BaseModel, Field

from contentplatform.auth import stream_tokens
from contentplatform.core.procedures import Context


class StreamUrl(BaseModel):
    url: str = Field(
        description=(
            "Open it with `new EventSource(url)`: the stream's REST URL with its token as "
            "`streamToken`. EventSource reconnects to it by itself with `Last-Event-ID`; after "
            "`expires_at`, make a new one and open it with `&lastEventId=<last id seen>`."
        )
    )
    token: str = Field(description="The token alone (`cpst_...`), as the URL carries it.")
    expires_at: datetime = Field(
        description="Until when the URL opens the stream; a stream already open runs to its end."
    )
    expires_in: int = Field(description="How many seconds (at least) from now it opens the stream.")


def issue(ctx: Context, path: str, stream: str) -> StreamUrl:
    """A URL that opens `stream` (served at `path`) for the caller, for the configured time."""
    token, grant = ctx.runtime.stream_tokens.mint(
        subject=ctx.identity.subject,
        org_id=ctx.tenant.org_id,
        tenant_id=ctx.tenant.tenant_id,
        stream=stream,
        now=None,
    )
    query = urlencode({stream_tokens.PARAMETER: token})
    return StreamUrl(
        url=f"{ctx.base_url}{path}?{query}",
        token=token,
        expires_at=grant.expires_at,
        expires_in=ctx.runtime.stream_tokens.ttl_seconds,
    )
