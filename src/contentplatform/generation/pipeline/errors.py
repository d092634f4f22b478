"""Why a run stops before its end, and the error a failed run shows for each."""

from __future__ import annotations

import logging
from typing import Any

from contentplatform.ai.base import ProviderError, ProviderUnavailable
from contentplatform.generation.answers import InvalidModelOutput

log = logging.getLogger(__name__)


class Superseded(Exception):
    """The draft was deleted or left `generating`, or the run was cancelled."""


class NoSources(Exception):
    """Nothing in the knowledge base grounds this topic."""


class HoldExpired(Exception):
    """The credits held for the run are no longer held (it outlived its reservation)."""


class GateRejected(Exception):
    """The draft was rejected at a review gate (or the gate's time ran out)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ClaimsUnsupported(Exception):
    """A fact check set to fail found claims their sources do not support."""


def error_of(error: Exception) -> dict[str, Any]:
    if isinstance(error, GateRejected):
        return {"code": error.code, "message": str(error), "retryable": False}
    if isinstance(error, ClaimsUnsupported):
        return {"code": "UNSUPPORTED_CLAIMS", "message": str(error), "retryable": True}
    if isinstance(error, NoSources):
        return {"code": "NO_SOURCES", "message": str(error), "retryable": False}
    if isinstance(error, ProviderUnavailable):
        message = f"The language model is unavailable: {error.message}"
        return {"code": "PROVIDER_UNAVAILABLE", "message": message, "retryable": True}
    if isinstance(error, ProviderError):
        message = f"The language model refused the request: {error.message}"
        return {"code": "PROVIDER_ERROR", "message": message, "retryable": False}
    if isinstance(error, InvalidModelOutput):
        return {"code": "MODEL_OUTPUT_INVALID", "message": str(error), "retryable": True}
    if isinstance(error, HoldExpired):
        return {"code": "CREDITS_EXPIRED", "message": str(error), "retryable": True}
    log.exception("generation failed", exc_info=error)
    message = (
        f"Generation failed unexpectedly ({type(error).__name__}); retry it or contact support."
    )
    return {"code": "INTERNAL_ERROR", "message": message, "retryable": True}
