"""One declaration per operation -> its REST route, its RPC route and its OpenAPI operation.

A procedure is declared once on a ProcedureRouter, over its handler:

    @router.get("getById", "/v1/drafts/{id}", access=Access.member, errors=[DraftNotFound])
    async def get_by_id(ctx: Context, data: schemas.DraftIdInput) -> schemas.Draft:
        '''One draft.'''

Its operationId is `<router>.<name>`; its input and output models are the handler's annotations;
its summary and description the handler's docstring (first line, then the rest); `errors` names
the domain errors it may raise. `mount()` turns each into two real FastAPI routes sharing that
handler, so validation, dependencies and docs behave the same in both:

- REST: input fields named in the path are path parameters; on GET and DELETE the rest are query
  parameters; on other methods they form the JSON body.
- RPC: `POST /api/rpc/<operationId>` with the whole input as one JSON object.

Fields declared with `header(...)` are request headers in both forms (a public feed's
`x-tenant-id`), never part of the query or a body.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import (
    Annotated,
    Any,
    Generic,
    Protocol,
    Required,
    TypedDict,
    TypeVar,
    Unpack,
    get_type_hints,
)

from fastapi import Body, Depends, FastAPI, Header, Path, Query, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ValidationError, create_model
from pydantic.fields import FieldInfo
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.routing import BaseRoute

from contentplatform.auth.context import Access, Identity, Principal, TenantAccess
from contentplatform.config import Settings
from contentplatform.core.runtime import Runtime
from contentplatform.kit import logs
from contentplatform.kit.errors import (
    ALL_ERRORS,
    PROBLEM_JSON,
    MethodNotAllowed,
    NotFound,
    PlatformError,
    validation_failed,
)
from contentplatform.kit.schemas import Input, is_header

ORG_HEADER = "x-idp-org-id"
RPC_PREFIX = "/api/rpc"

bearer_scheme = HTTPBearer(
    auto_error=False,
    bearerFormat="JWT",
    scheme_name="bearerAuth",
    description="A session JWT issued by the identity provider (RS256, ES256 or EdDSA).",
)


@dataclass
class Context:
    """What a handler gets besides its input: the caller, the transaction, settings."""

    session: AsyncSession
    principal: Principal
    request_id: str
    runtime: Runtime
    # Where this service is reached, as the client called it (for links it hands out).
    base_url: str

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def tenant(self) -> TenantAccess:
        if self.principal.tenant is None:
            raise RuntimeError("tenant context used by an operation that is not tenant-scoped")
        return self.principal.tenant

    @property
    def identity(self) -> Identity:
        if self.principal.identity is None:
            raise RuntimeError("identity used by a public operation")
        return self.principal.identity


InT = TypeVar("InT", bound=BaseModel)
OutT = TypeVar("OutT")
Handler = Callable[[Context, InT], Awaitable[OutT]]


class Authorizer(Protocol):
    async def __call__(
        self, request: Request, access: Access, token: str | None, org_id: str | None
    ) -> Principal: ...


@dataclass(frozen=True)
class Procedure(Generic[InT, OutT]):
    operation_id: str
    method: str
    path: str
    access: Access
    input: type[InT]
    output: Any
    handler: Handler[InT, OutT]
    summary: str
    description: str | None
    tag: str
    errors: tuple[type[PlatformError], ...] = ()  # see Declared

    @property
    def path_names(self) -> set[str]:
        return set(re.findall(r"{(\w+)}", self.path))

    def location(self, name: str, info: FieldInfo) -> str:
        if is_header(info):
            return "header"
        if (info.alias or name) in self.path_names:
            return "path"
        return "query" if self.method in {"GET", "DELETE"} else "body"


class Declared(TypedDict, total=False):
    """What a declaration says besides its name, method and path. Summary and description
    default to the handler's docstring: its first line, then the rest (whitespace folded,
    paragraphs kept)."""

    access: Required[Access]
    summary: str
    description: str
    # The errors it raises beyond the ones every operation may (400, 401, 403, 429, 500, and
    # 404 when its path names a record): domain error classes, listed in its OpenAPI responses.
    errors: Sequence[type[PlatformError]]


@dataclass
class ProcedureRouter:
    """The procedures of one router (`documents`, `jobs`, ...)."""

    name: str
    tag: str
    procedures: list[Procedure[Any, Any]] = field(default_factory=list)

    def procedure(
        self, name: str, method: str, path: str, **declared: Unpack[Declared]
    ) -> Callable[[Handler[InT, OutT]], Handler[InT, OutT]]:
        """Declare `handler(ctx, data: Input) -> Output` as operation `<router>.<name>`. Its
        input and output models are the ones its signature names (`-> None`: an empty body)."""

        def register(handler: Handler[InT, OutT]) -> Handler[InT, OutT]:
            input, output = _models_of(handler)
            summary, description = declared.get("summary"), declared.get("description")
            if summary is None:
                summary, described = _documentation(handler)
                description = description or described
            self.procedures.append(
                Procedure(
                    operation_id=f"{self.name}.{name}",
                    method=method.upper(),
                    path=path,
                    access=declared["access"],
                    input=input,
                    output=output,
                    handler=handler,
                    summary=summary,
                    description=description,
                    tag=self.tag,
                    errors=tuple(declared.get("errors", ())),
                )
            )
            return handler

        return register

    def get(
        self, name: str, path: str, **declared: Unpack[Declared]
    ) -> Callable[[Handler[InT, OutT]], Handler[InT, OutT]]:
        return self.procedure(name, "GET", path, **declared)

    def post(
        self, name: str, path: str, **declared: Unpack[Declared]
    ) -> Callable[[Handler[InT, OutT]], Handler[InT, OutT]]:
        return self.procedure(name, "POST", path, **declared)

    def patch(
        self, name: str, path: str, **declared: Unpack[Declared]
    ) -> Callable[[Handler[InT, OutT]], Handler[InT, OutT]]:
        return self.procedure(name, "PATCH", path, **declared)

    def delete(
        self, name: str, path: str, **declared: Unpack[Declared]
    ) -> Callable[[Handler[InT, OutT]], Handler[InT, OutT]]:
        return self.procedure(name, "DELETE", path, **declared)


def _documentation(handler: Callable[..., Any]) -> tuple[str, str | None]:
    """The summary (first line) and description (the rest) of the handler's docstring."""
    first, _, rest = inspect.cleandoc(handler.__doc__ or "").partition("\n")
    if not first.strip():
        raise TypeError(f"{handler.__qualname__} needs a docstring (its summary) or a summary=")
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", rest) if p.strip()]
    return first.strip(), "\n\n".join(paragraphs) or None


def _models_of(handler: Callable[..., Any]) -> tuple[type[BaseModel], Any]:
    """The input model of `handler(ctx, data)` and what it returns, from its annotations."""
    hints = get_type_hints(handler)
    data = list(inspect.signature(handler).parameters)[1]
    output = hints["return"]
    return hints[data], None if output is type(None) else output


def mount(
    app: FastAPI, routers: Sequence[ProcedureRouter], authorize: Authorizer
) -> list[BaseRoute]:
    """Add every procedure's REST and RPC routes; returns the REST routes in declaration order
    (the order of the API document)."""
    procedures = {p.operation_id: p for r in routers for p in r.procedures}
    if len(procedures) != sum(len(r.procedures) for r in routers):
        raise RuntimeError("two procedures share an operationId")
    declared: list[BaseRoute] = []
    for procedure in procedures.values():
        guard = _guard(procedure.access, authorize)
        common: dict[str, Any] = {
            "response_model": procedure.output,
            "responses": _error_responses(procedure),
            "summary": procedure.summary,
            "description": procedure.description,
            "tags": [procedure.tag],
        }
        if procedure.output is None:  # the operation answers 200 with an empty body
            common["response_class"] = Response
            common["responses"][200] = {"description": "Done; the body is empty."}
        app.add_api_route(
            procedure.path,
            _rest_endpoint(procedure, guard),
            methods=[procedure.method],
            operation_id=procedure.operation_id,
            **common,
        )
        declared.append(app.router.routes[-1])
        app.add_api_route(
            f"{RPC_PREFIX}/{procedure.operation_id}",
            _rpc_endpoint(procedure, guard),
            methods=["POST"],
            include_in_schema=False,
            **common,
        )

    async def unknown_procedure(request: Request, operation_id: str) -> None:
        if operation_id in procedures:
            raise MethodNotAllowed(f"{operation_id} is called with POST.", allow=["POST"])
        raise NotFound(f"There is no procedure {operation_id!r}.")

    app.add_api_route(
        f"{RPC_PREFIX}/{{operation_id:path}}",
        unknown_procedure,
        methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"],
        include_in_schema=False,
    )
    _match_literals_first(app, declared)
    return declared


def _match_literals_first(app: FastAPI, routes: list[BaseRoute]) -> None:
    """Starlette takes the first route that matches, so a literal segment must come before a
    parameter in the same place (`/v1/jobs/bulk/pause` is not the pause of job "bulk"),
    whichever router declared its route first. Other routes keep their order."""

    def literals_first(route: BaseRoute) -> tuple[int, ...]:
        path = getattr(route, "path", "")
        return tuple(int(part.startswith("{")) for part in path.strip("/").split("/"))

    ours = {id(route) for route in routes}
    places = [i for i, route in enumerate(app.router.routes) if id(route) in ours]
    for place, route in zip(places, sorted(routes, key=literals_first), strict=True):
        app.router.routes[place] = route


async def invoke(
    procedure: Procedure[Any, Any], request: Request, principal: Principal, raw: dict[str, Any]
) -> Any:
    try:
        data = procedure.input.model_validate(raw)
    except ValidationError as error:
        raise validation_failed(error.errors(include_url=False)) from None
    logs.bind(operation=procedure.operation_id)
    runtime: Runtime = request.app.state.runtime
    async with runtime.db.unit_of_work() as session:
        ctx = Context(
            session=session,
            principal=principal,
            request_id=logs.request_id(),
            runtime=runtime,
            base_url=str(request.base_url).rstrip("/"),
        )
        return await procedure.handler(ctx, data)


def _guard(access: Access, authorize: Authorizer) -> Callable[..., Awaitable[Principal]]:
    """A FastAPI dependency resolving the caller; its parameters also document auth in OpenAPI."""
    if access is Access.public:

        async def public(request: Request) -> Principal:
            return await authorize(request, access, None, None)

        return public

    if access.tenant_role is None:

        async def signed_in(
            request: Request,
            credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
        ) -> Principal:
            return await authorize(request, access, _token(credentials), None)

        return signed_in

    async def tenant_scoped(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
        org_id: Annotated[
            str | None,
            Header(
                alias=ORG_HEADER,
                description=(
                    "Required. The identity provider's organization id; it selects the tenant. "
                    "(Declared optional so that a missing token answers 401 before this 400.)"
                ),
                max_length=255,
                # Organization ids become storage prefixes, so they stay plain.
                pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
            ),
        ] = None,
    ) -> Principal:
        return await authorize(request, access, _token(credentials), org_id)

    return tenant_scoped


def _token(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return credentials.credentials if credentials else None


def _parameter(
    name: str, annotation: Any, default: Any = inspect.Parameter.empty
) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


# Where FastAPI reads an input field that is not in the JSON body.
PARAMETER_SOURCES: dict[str, Callable[..., Any]] = {"path": Path, "query": Query, "header": Header}


def _rest_endpoint(
    procedure: Procedure[Any, Any], guard: Callable[..., Awaitable[Principal]]
) -> Callable[..., Awaitable[Any]]:
    params = [
        _parameter("_cp_request", Request),
        _parameter("_cp_principal", Annotated[Principal, Depends(guard)]),
    ]
    body_fields: dict[str, Any] = {}
    for name, info in procedure.input.model_fields.items():
        where = procedure.location(name, info)
        if where == "body":
            body_fields[name] = (info.annotation, info)
            continue
        params.append(_field_parameter(name, info, PARAMETER_SOURCES[where]))

    if body_fields:
        params.append(_body_parameter(_body_model(procedure, body_fields)))

    async def endpoint(**kwargs: Any) -> Any:
        request: Request = kwargs.pop("_cp_request")
        principal: Principal = kwargs.pop("_cp_principal")
        body: BaseModel | None = kwargs.pop("_cp_body", None)
        if body is not None:
            kwargs.update(body.model_dump(exclude_unset=True))
        return _answer(procedure, await invoke(procedure, request, principal, kwargs))

    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__name__ = procedure.operation_id.replace(".", "_")
    return endpoint


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


def _header_parameters(procedure: Procedure[Any, Any]) -> list[inspect.Parameter]:
    return [
        _field_parameter(name, info, Header)
        for name, info in procedure.input.model_fields.items()
        if is_header(info)
    ]


def _body_model(procedure: Procedure[Any, Any], fields: dict[str, Any]) -> type[BaseModel]:
    """The input itself when every field is in the body, else a model of just those fields."""
    if len(fields) == len(procedure.input.model_fields):
        return procedure.input
    return create_model(f"{procedure.input.__name__}Body", __base__=Input, **fields)


def _body_parameter(model: type[BaseModel]) -> inspect.Parameter:
    """The JSON body; optional when none of its fields is required."""
    required = any(info.is_required() for info in model.model_fields.values())
    return _parameter(
        "_cp_body",
        Annotated[model if required else model | None, Body()],
        inspect.Parameter.empty if required else None,
    )


def _answer(procedure: Procedure[Any, Any], result: Any) -> Any:
    return Response(status_code=200) if procedure.output is None else result


def _rpc_endpoint(
    procedure: Procedure[Any, Any], guard: Callable[..., Awaitable[Principal]]
) -> Callable[..., Awaitable[Any]]:
    # Everything but the headers is the one JSON object.
    body_fields = {
        name: (info.annotation, info)
        for name, info in procedure.input.model_fields.items()
        if not is_header(info)
    }
    params = [
        _parameter("_cp_request", Request),
        _parameter("_cp_principal", Annotated[Principal, Depends(guard)]),
        *_header_parameters(procedure),
        _body_parameter(_body_model(procedure, body_fields)),
    ]

    async def endpoint(**kwargs: Any) -> Any:
        request: Request = kwargs.pop("_cp_request")
        principal: Principal = kwargs.pop("_cp_principal")
        body: BaseModel | None = kwargs.pop("_cp_body")
        raw = {**kwargs, **(body.model_dump(exclude_unset=True) if body is not None else {})}
        return _answer(procedure, await invoke(procedure, request, principal, raw))

    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__name__ = "rpc_" + procedure.operation_id.replace(".", "_")
    return endpoint


def _error_responses(procedure: Procedure[Any, Any]) -> dict[int | str, dict[str, Any]]:
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
