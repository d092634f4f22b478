"""Requests this service sends to URLs its users give (a webhook connection's events), declared
once beside the code that sends them and listed in the API document's `webhooks` section
(OpenAPI 3.1): each with its name, its JSON body's model (the model the sender builds the body
with, so the document cannot drift from what is sent), its headers and what the receiver may
answer.

A domain lists its webhooks in its manifest (`Domain.webhooks`); `router()` makes the routes
FastAPI documents them from. They are never served: the service sends these requests, it does
not receive them.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header
from pydantic import BaseModel


@dataclass(frozen=True)
class Webhook:
    name: str  # the event type, e.g. "article.published"
    summary: str
    description: str
    tag: str
    payload: type[BaseModel]
    # Header name -> what it carries (and how the receiver checks it).
    headers: Mapping[str, str] = field(default_factory=dict)
    # Status ("200", "4XX") -> (what the service makes of it, the model of the answer or None).
    responses: Mapping[str, tuple[str, type[BaseModel] | None]] = field(default_factory=dict)


def router(webhooks: tuple[Webhook, ...]) -> APIRouter:
    """The routes FastAPI documents `webhooks` from (`get_openapi(webhooks=...)`)."""
    documented = APIRouter()
    for hook in webhooks:
        documented.add_api_route(
            hook.name,
            _endpoint(hook),
            methods=["POST"],
            operation_id=f"webhooks.{hook.name}",
            summary=hook.summary,
            description=hook.description,
            tags=[hook.tag],
            response_model=None,
            # The receiver checks the signature headers; none of the API's schemes applies.
            openapi_extra={"security": []},
            responses={
                status: _response(description, answer)
                for status, (description, answer) in hook.responses.items()
            },
        )
    return documented


def _response(description: str, answer: type[BaseModel] | None) -> dict[str, Any]:
    if answer is None:
        return {"description": description}
    return {"description": description, "model": answer}


def _endpoint(hook: Webhook) -> Any:
    async def endpoint(**_: Any) -> None:
        raise RuntimeError(f"the {hook.name} webhook is sent by this service, never served")

    parameters = [
        inspect.Parameter(
            f"header_{index}",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[str, Header(alias=name, description=description)],
        )
        for index, (name, description) in enumerate(hook.headers.items())
    ]
    parameters.append(
        inspect.Parameter(
            "payload", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[hook.payload, Body()]
        )
    )
    endpoint.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    endpoint.__name__ = "webhook_" + hook.name.replace(".", "_")
    return endpoint
