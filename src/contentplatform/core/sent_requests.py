"""Sent requests: the requests this service sends to URLs its users give (an outbound webhook
endpoint's events, a webhook target's articles), declared once beside the code that sends them
and listed in the API document's `webhooks` section (OpenAPI 3.1's name for them): each with
its name, its JSON body's model (the model the sender builds the body with, so the document
cannot drift from what is sent), its headers and what the receiver may answer.

A domain lists its sent requests in its manifest (`Domain.sent_requests`); `router()` makes the
routes FastAPI documents them from. They are never served: the service sends these requests, it
does not receive them.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header
from pydantic import BaseModel


@dataclass(frozen=True)
class SentRequest:
    name: str  # the event type, e.g. "article.published"
    summary: str
    description: str
    tag: str
    payload: type[BaseModel]
    # Header name -> what it carries (and how the receiver checks it).
    headers: Mapping[str, str] = field(default_factory=dict)
    # Status ("200", "4XX") -> (what the service makes of it, the model of the answer or None).
    responses: Mapping[str, tuple[str, type[BaseModel] | None]] = field(default_factory=dict)


def router(sent_requests: tuple[SentRequest, ...]) -> APIRouter:
    """The routes FastAPI documents the `webhooks` section from (`get_openapi(webhooks=...)`)."""
    documented = APIRouter()
    for sent in sent_requests:
        documented.add_api_route(
            sent.name,
            _endpoint(sent),
            methods=["POST"],
            # OpenAPI files them under `webhooks`, and so does their operationId: the contract.
            operation_id=f"webhooks.{sent.name}",
            summary=sent.summary,
            description=sent.description,
            tags=[sent.tag],
            response_model=None,
            # The receiver checks the signature headers; none of the API's schemes applies.
            openapi_extra={"security": []},
            responses={
                status: _response(description, answer)
                for status, (description, answer) in sent.responses.items()
            },
        )
    return documented


def _response(description: str, answer: type[BaseModel] | None) -> dict[str, Any]:
    if answer is None:
        return {"description": description}
    return {"description": description, "model": answer}


def _endpoint(sent: SentRequest) -> Any:
    async def endpoint(**_: Any) -> None:
        raise RuntimeError(f"the {sent.name} request is sent by this service, never served")

    parameters = [
        inspect.Parameter(
            f"header_{index}",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[str, Header(alias=name, description=description)],
        )
        for index, (name, description) in enumerate(sent.headers.items())
    ]
    parameters.append(
        inspect.Parameter(
            "payload", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[sent.payload, Body()]
        )
    )
    endpoint.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    endpoint.__name__ = "sent_" + sent.name.replace(".", "_")
    return endpoint
