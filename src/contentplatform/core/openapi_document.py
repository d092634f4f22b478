"""What the API document says of a declared procedure: how callers prove who they are (the
security schemes, each operation's requirement), the endpoint FastAPI documents each route by
(its parameters and body), the event streams' answers and models, and the error responses."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any

from fastapi import Body, Header, Path, Query, Request, Response
from fastapi.security import APIKeyHeader, APIKeyQuery, HTTPBearer
from fastapi.security.base import SecurityBase
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic.json_schema import models_json_schema
from starlette.routing import BaseRoute

from contentplatform.auth import stream_tokens
from contentplatform.auth.context import Access
from contentplatform.core.procedures import ORG_HEADER, EventStream, Procedure
from contentplatform.kit.errors import ALL_ERRORS, PROBLEM_JSON, PlatformError

# How callers prove who they are, as the API document declares it (routing.py reads both headers
# itself, in this order: a missing token is 401 before a missing organization is 400).
bearer_scheme = HTTPBearer(
    auto_error=False,
    bearerFormat="JWT",
    scheme_name="bearerAuth",
    description=(
        "A session JWT issued by the identity provider (RS256, ES256 or EdDSA). "
        "On a local service, mint one with "
        "`.venv/bin/contentplatform dev-token --org org_a --user u1 --role admin` "
        "(or `python3 dev.py token --org org_a --user u1 --role admin`)."
    ),
)


organization_scheme = APIKeyHeader(
    name=ORG_HEADER,
    scheme_name="organization",
    auto_error=False,
    description=(
        "The identity provider's organization id (e.g. `org_a`): it selects the tenant a "
        "tenant-scoped operation acts in. Letters, digits, `_`, `.` and `-`, at most 255 "
        "characters, starting with a letter or digit."
    ),
)


api_key_scheme = HTTPBearer(
    auto_error=False,
    bearerFormat="cpk_...",
    scheme_name="apiKeyAuth",
    description=(
        "An API key (`Authorization: Bearer cpk_...`), made by an admin with "
        "settings.createApiKey: it fixes the organization (no x-idp-org-id needed) and acts as "
        "member or editor. Operations that do not list it refuse keys (403)."
    ),
)


stream_token_scheme = APIKeyQuery(
    name=stream_tokens.PARAMETER,
    scheme_name="streamToken",
    auto_error=False,
    description=(
        "A stream URL's token (`?streamToken=cpst_...`), for a browser's EventSource, which "
        "cannot send an Authorization header: made by chat.createStreamUrl or "
        "generation.createRunStreamUrl for one stream, valid for a few minutes (checked when "
        "the stream opens). It opens that stream alone: every other operation refuses it."
    ),
)


SECURITY_SCHEMES: tuple[SecurityBase, ...] = (
    bearer_scheme,
    organization_scheme,
    api_key_scheme,
    stream_token_scheme,
)


def security_schemes() -> dict[str, Any]:
    """The API document's `components.securitySchemes`."""
    return {
        scheme.scheme_name: scheme.model.model_dump(mode="json", by_alias=True, exclude_none=True)
        for scheme in SECURITY_SCHEMES
    }


def security_requirement(
    access: Access, api_keys: bool, stream_token: bool = False
) -> list[dict[str, list[str]]]:
    """An operation's security requirement: the bearer token and the organization together for
    tenant-scoped operations (one requirement object: both are needed), or an API key alone where
    keys are allowed, or a stream token alone where one opens the stream; the token alone for
    the others that need a caller, none for public ones."""
    if access is Access.public:
        return []
    if access.tenant_role is None:
        return [{bearer_scheme.scheme_name: []}]
    token: dict[str, list[str]] = {
        bearer_scheme.scheme_name: [],
        organization_scheme.scheme_name: [],
    }
    found = [token]
    if api_keys:
        found.append({api_key_scheme.scheme_name: []})
    if stream_token:
        found.append({stream_token_scheme.scheme_name: []})
    return found


EVENT_STREAM = "text/event-stream"
REF_TEMPLATE = "#/components/schemas/{model}"


def stream_components(routes: Sequence[BaseRoute]) -> dict[str, Any]:
    """The schemas the event streams of `routes` refer to (each event's data model and the
    models it holds), for the document's components."""
    models = {
        model
        for route in routes
        if (stream := getattr(getattr(route, "endpoint", None), "events", None)) is not None
        for model in stream.events.values()
    }
    ordered = sorted(models, key=lambda model: model.__name__)
    _, top = models_json_schema(
        [(model, "serialization") for model in ordered], ref_template=REF_TEMPLATE
    )
    found: dict[str, Any] = top.get("$defs", {})
    return found


def event_stream_answer(stream: EventStream) -> dict[str, Any]:
    """An event stream operation's 200 answer: the stream's frames, one schema per event (its
    `data` a JSON text of the event's model, `stream_components` puts the models in the
    document)."""
    ends = " or ".join(f"`{name}`" for name in stream.terminal)
    rows = "\n".join(
        f"| `{name}` | {', '.join(f'`{field}`' for field in model.model_fields) or '-'} |"
        for name, model in stream.events.items()
    )
    frames = [
        {
            "type": "object",
            "title": name,
            "required": ["event", "data"],
            "properties": {
                "id": {"type": "string"},
                "event": {"const": name},
                "retry": {"type": "integer"},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": REF_TEMPLATE.format(model=model.__name__)},
                },
            },
        }
        for name, model in stream.events.items()
    ]
    return {
        "description": (
            "A `text/event-stream`: each frame has an `id:` (to resume after it, send it "
            "back as the `Last-Event-ID` header, or as `lastEventId` in the query), an "
            f"`event:` and a JSON `data:` (which also holds the frame's `seq`). It ends "
            f"with exactly one {ends}; a `: ping` comment keeps the connection open every "
            "15 seconds.\n\n"
            f"| event | data |\n|---|---|\n{rows}"
        ),
        "content": {EVENT_STREAM: {"schema": {"oneOf": frames}}},
    }


def documented_endpoint(
    name: str,
    signature: inspect.Signature,
    serve: Callable[[Request], Awaitable[Response]],
    *,
    events: EventStream | None = None,
) -> Callable[..., Awaitable[Any]]:
    """The endpoint FastAPI documents a route by; the route serves requests with `serve`. An
    operation that streams keeps its EventStream here for `stream_components`."""

    async def endpoint(**_: Any) -> Any:
        raise RuntimeError(f"{name} is served by its procedure's route")

    endpoint.__signature__ = signature  # type: ignore[attr-defined]
    endpoint.__name__ = name
    endpoint.serve = serve  # type: ignore[attr-defined]
    endpoint.events = events  # type: ignore[attr-defined]
    return endpoint


def endpoint_signature(
    parameters: Mapping[str, tuple[str, FieldInfo]], body: type[BaseModel] | None
) -> inspect.Signature:
    """The declared endpoint's parameters, which the API document is made from: each parameter
    where a route reads it (`parameters`: field name -> (path|query|header, field)), the body
    model. (Its security is the route's `openapi_extra`: FastAPI
    would make each security dependency a requirement of its own, where a tenant-scoped
    operation needs the token and the organization together.)"""
    params = [
        _field_parameter(name, info, PARAMETER_SOURCES[place])
        for name, (place, info) in parameters.items()
    ]
    if body is not None:
        params.append(_body_parameter(body))
    return inspect.Signature(params)


def _field_parameter(name: str, info: FieldInfo, source: Callable[..., Any]) -> inspect.Parameter:
    """An input field as a path, query or header parameter, with its bounds and default."""
    marker = source(alias=info.alias or name, description=info.description)
    marker.metadata = list(info.metadata)
    default = (
        inspect.Parameter.empty
        if info.is_required()
        else info.get_default(call_default_factory=True)
    )
    return _parameter(name, Annotated[info.annotation, marker], default)


def _parameter(
    name: str, annotation: Any, default: Any = inspect.Parameter.empty
) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


# Where FastAPI reads an input field that is not in the JSON body.
PARAMETER_SOURCES: dict[str, Callable[..., Any]] = {"path": Path, "query": Query, "header": Header}


def _body_parameter(model: type[BaseModel]) -> inspect.Parameter:
    """The JSON body; optional when none of its fields is required."""
    required = any(info.is_required() for info in model.model_fields.values())
    return _parameter(
        "_cp_body",
        Annotated[model if required else model | None, Body()],
        inspect.Parameter.empty if required else None,
    )


def error_responses(procedure: Procedure[Any, Any]) -> dict[int | str, dict[str, Any]]:
    named: dict[int, list[type[PlatformError]]] = {}
    for error in procedure.errors:
        named.setdefault(error.status, []).append(error)
    statuses = {400, 429, 500, *named}
    if procedure.access is not Access.public:
        statuses |= {401, 403}
    if procedure.path_names:
        statuses.add(404)
    generic = {error.status: error for error in ALL_ERRORS}
    return {
        status: {
            "description": _describe(generic[status], named.get(status, [])),
            "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in sorted(statuses)
    }


def _describe(generic: type[PlatformError], named: list[type[PlatformError]]) -> str:
    """`Title (CODE)`, then each domain error of that status with its docstring."""
    lines = [f"- `{error.__name__}`: {_doc(error)}" for error in named if error is not generic]
    heading = f"{generic.title} ({generic.code})"
    return "\n\n".join([heading, "\n".join(lines)]) if lines else heading


def _doc(error: type[PlatformError]) -> str:
    return " ".join((error.__doc__ or "").split())
