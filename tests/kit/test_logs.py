"""Log lines never carry a credential that travels in a URL's query: a stream URL's token, a
signed upload or download URL's signature (kit/logs.py)."""

from __future__ import annotations

import io
import logging

from contentplatform.kit import logs


def test_a_line_quoting_a_stream_or_signed_url_shows_no_secret():
    sink = io.StringIO()
    handler = logging.StreamHandler(sink)
    handler.addFilter(logs._RedactingFilter())
    logger = logging.getLogger("tests.kit.redaction")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning(
            "%s %s %s",
            "GET",
            "/v1/chat/messages/m/events?streamToken=cpst_eyJhbGciOi.eyJzdWIi.c2ln&lastEventId=3",
            200,
        )
        logger.warning("fetching http://h/v1/downloads/a.png?expires=9&signature=0a1b2c")
        logger.warning("nothing secret: ?lastEventId=4")
    finally:
        logger.removeHandler(handler)
    lines = sink.getvalue().splitlines()
    assert lines == [
        "GET /v1/chat/messages/m/events?streamToken=[redacted]&lastEventId=3 200",
        "fetching http://h/v1/downloads/a.png?expires=9&signature=[redacted]",
        "nothing secret: ?lastEventId=4",
    ]
