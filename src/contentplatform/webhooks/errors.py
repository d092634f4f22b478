"""What the webhooks domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, FieldError, RecordNotFound


class EndpointNotFound(RecordNotFound):
    """There is no such webhook endpoint in this organization."""

    record = "webhook endpoint"


class DeliveryNotFound(RecordNotFound):
    """There is no such delivery in this organization (deliveries are kept 30 days, and go
    with their endpoint when it is deleted)."""

    record = "webhook delivery"


class EndpointUrlRefused(BadRequest):
    """The URL is not one the service may send to: https only, no credentials in it, and a
    host that resolves to public addresses only (the detail says why; `errors` names `url`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"The endpoint's URL is not allowed: {reason}",
            errors=[FieldError("url", reason)],
        )


class EndpointDisabled(Conflict):
    """The endpoint is disabled (`disabled_reason` says why): nothing is delivered to it until
    an admin enables it again (webhooks.updateEndpoint with `enabled` true)."""

    def __init__(self, reason: str | None) -> None:
        super().__init__(
            f"The webhook endpoint is disabled ({reason or 'manual'}); enable it first.",
            extensions={"disabled_reason": reason or "manual"},
        )


class DeliveryNotRedeliverable(Conflict):
    """Only a delivery that ended without a success (failed, exhausted or cancelled) can be
    sent again: one still pending is under way, one that succeeded arrived, and a test is
    sent anew with webhooks.testEndpoint."""

    def __init__(self, status: str, *, test: bool = False) -> None:
        detail = (
            "A test delivery is not sent again; send a new test with webhooks.testEndpoint."
            if test
            else f"The delivery is {status}; only a failed, exhausted or cancelled delivery "
            "can be sent again."
        )
        super().__init__(detail, extensions={"delivery_status": status})
