"""One request to a target through the guarded client, its failures as typed publish errors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

from contentplatform.kit import outbound
from contentplatform.publishers.strategies.base import (
    Ambiguous,
    AuthFailed,
    Invalid,
    PublishError,
    RateLimited,
    Refused,
    RemoteConflict,
    RemoteNotFound,
    Transient,
)

MAX_MESSAGE = 300


class Request(TypedDict, total=False):
    """What a request carries besides its method and URL (GuardedClient.request's keywords),
    passed through `call`, `send` and the APIs unchanged."""

    headers: Mapping[str, str] | None
    params: Mapping[str, str | int] | None
    json: Any
    content: bytes | None


async def call(
    client: outbound.GuardedClient,
    method: str,
    url: str,
    *,
    target: str,
    creates: bool = False,
    **request: Unpack[Request],
) -> outbound.Response:
    """The response when its status is 2xx; else the matching PublishError, its message naming
    `target` ("WordPress") and what the target said. With `creates`, a failure after the request
    may have reached the target (a timeout, a 5xx) is Ambiguous rather than Transient."""
    response = await send(client, method, url, target=target, creates=creates, **request)
    if 200 <= response.status < 300:
        return response
    raise error_for(response, target=target, creates=creates)


async def send(
    client: outbound.GuardedClient,
    method: str,
    url: str,
    *,
    target: str,
    creates: bool = False,
    **request: Unpack[Request],
) -> outbound.Response:
    """The response, whatever its status; a request that got none is the matching PublishError
    (as for `call`). A certificate that fails the check is Refused: retrying cannot help."""
    try:
        return await client.request(method, url, **request)
    except outbound.Refused as error:
        raise Refused(str(error)) from None
    except outbound.CertificateRejected as error:
        raise Refused(f"{target}: {error}") from None
    except (outbound.Unreachable, outbound.TooLarge) as error:
        raise (Ambiguous if creates else Transient)(f"{target}: {error}") from None


@dataclass(frozen=True)
class Api:
    """A target's HTTP API: `call` sends to `base_url` + a path with `headers()` (a function,
    so a short-lived token can be minted per request) and names `target` in its errors."""

    client: outbound.GuardedClient
    target: str
    base_url: str
    headers: Callable[[], Mapping[str, str]]

    async def call(
        self, method: str, path: str = "", *, creates: bool = False, **request: Unpack[Request]
    ) -> outbound.Response:
        """`headers` are sent besides the API's own (a file's content type, say)."""
        request["headers"] = {**self.headers(), **(request.get("headers") or {})}
        url = self.base_url + path
        return await call(self.client, method, url, target=self.target, creates=creates, **request)


def json_of(response: outbound.Response, *, unexpected: str) -> Any:
    """The JSON body, or Invalid(unexpected) when the target answered something else (a URL
    that is not the API answers 200 with an HTML page)."""
    try:
        return response.json()
    except ValueError:
        raise Invalid(unexpected) from None


def json_object(response: outbound.Response, *, unexpected: str) -> dict[str, Any]:
    body = json_of(response, unexpected=unexpected)
    if not isinstance(body, dict):
        raise Invalid(unexpected)
    return body


def error_for(response: outbound.Response, *, target: str, creates: bool = False) -> PublishError:
    status = response.status
    message = f"{target} answered {status}: {said(response)}"
    if status in (401, 403):
        return AuthFailed(message)
    if status in (404, 410):
        return RemoteNotFound(message)
    if status in (409, 412):
        return RemoteConflict(message)
    if status == 429:
        return RateLimited(message, retry_after=retry_after(response))
    if status >= 500 or status == 408:
        kind = Ambiguous if creates and status != 503 else Transient
        return kind(message, retry_after=retry_after(response))
    return Invalid(message)


def said(response: outbound.Response) -> str:
    """The target's own words: the message field of a JSON error body, else the start of it."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:MAX_MESSAGE].strip() or "(no message)"
    return _message_in(body)[:MAX_MESSAGE] or "(no message)"


def _message_in(body: Any) -> str:
    if isinstance(body, dict):
        for key in ("message", "msg", "error_description", "detail"):
            if isinstance(body.get(key), str):
                message = str(body[key])
                context = body.get("context")
                return (
                    message
                    + _context(None if context == message else context)
                    + _details(body.get("details"))
                )
        for key in ("errors", "error"):
            if key in body:
                return _message_in(body[key])
    if isinstance(body, list) and body:
        return _message_in(body[0])
    if isinstance(body, str):
        return body
    return ""


def _context(context: Any) -> str:
    """Ghost says what was wrong in `context` ("Value in [posts.title] exceeds ..."); its 409
    repeats the message there, which is said once."""
    return f" ({context})" if isinstance(context, str) and context.strip() else ""


def _details(details: Any) -> str:
    """Field-level details some targets add (Webflow: [{param, description}])."""
    if not isinstance(details, list):
        return ""
    parts = [
        f"{item.get('param')}: {item.get('description')}"
        for item in details
        if isinstance(item, dict) and item.get("param")
    ]
    return f" ({'; '.join(parts)})" if parts else ""


def retry_after(response: outbound.Response) -> float | None:
    """Seconds from a Retry-After header, if any."""
    return outbound.retry_after_seconds(response.headers.get("retry-after"))
