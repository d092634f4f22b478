"""Structured logs carrying the request id, tenant and operationId of the work in hand."""

from __future__ import annotations

import logging
import re
import sys
from contextvars import ContextVar

from pythonjsonlogger.json import JsonFormatter

_context: ContextVar[dict[str, str] | None] = ContextVar("log_context", default=None)

# Query parameters that are credentials (a stream URL's token, a signed upload or download URL's
# signature): a line that would show one shows `[redacted]` instead.
SECRET_PARAMETERS = ("streamToken", "signature")
_SECRET_VALUE = re.compile(rf"(\b(?:{'|'.join(SECRET_PARAMETERS)})=)[^&\s\"'<>]+")


def start(request_id: str) -> None:
    _context.set({"request_id": request_id})


def bind(**values: str) -> None:
    current = dict(_context.get() or {})
    current.update(values)
    _context.set(current)


def request_id() -> str:
    return (_context.get() or {}).get("request_id", "")


def context() -> dict[str, str]:
    """What the log lines of the work in hand carry (request_id, tenant, operation, ...)."""
    return dict(_context.get() or {})


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in (_context.get() or {}).items():
            setattr(record, key, value)
        return True


class _RedactingFilter(logging.Filter):
    """Takes the values of SECRET_PARAMETERS out of every line (the access log never has the
    query; a library's line may quote a URL)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if any(f"{name}=" in message for name in SECRET_PARAMETERS):
            record.msg, record.args = redact(message), None
        return True


def redact(text: str) -> str:
    return _SECRET_VALUE.sub(r"\1[redacted]", text)


class _PlainFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        context = " ".join(
            f"{key}={getattr(record, key)}"
            for key in ("request_id", "tenant", "operation")
            if getattr(record, key, None)
        )
        return f"{text} [{context}]" if context else text


def configure(level: str, as_json: bool) -> None:
    # No formatter here names the caller's file, line, thread or process: not gathering them
    # for every record (one access line per request) is the logging module's own advice.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_ContextFilter())
    handler.addFilter(_RedactingFilter())
    formatter: logging.Formatter
    if as_json:
        formatter = JsonFormatter(
            "%(asctime)s %(levelname)s %(name)s %(message)s",
            rename_fields={"levelname": "level", "asctime": "time"},
        )
    else:
        formatter = _PlainFormatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("uvicorn.access",):
        logging.getLogger(noisy).disabled = True
    for name in ("uvicorn", "uvicorn.error", "dbos"):
        adopt(name)


def adopt(name: str) -> None:
    """Send a library's logger through our handler (DBOS installs a console handler of its own)."""
    logger = logging.getLogger(name)
    logger.handlers[:] = []
    logger.propagate = True
