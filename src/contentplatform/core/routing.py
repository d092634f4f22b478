"""A declared procedure served: its REST route and its RPC route (`POST /api/rpc/<operationId>`),
each reading the input where the declaration puts it, authorizing the caller and running the
handler in one unit of work (procedures.py has the declaration, openapi_document.py what the
API document says of it)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, Protocol, get_args, get_origin

from fastapi import FastAPI, Request, Response
from fastapi.routing import APIRoute
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import (
    AliasChoices,
    AliasPath,
    BaseModel,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    create_model,
)
from pydantic.fields import FieldInfo
from starlette.routing import BaseRoute

from contentplatform.auth import stream_tokens
from contentplatform.auth.context import Access, Principal
from contentplatform.core import actors
from contentplatform.core.openapi_document import (
    documented_endpoint,
    endpoint_signature,
    error_responses,
    event_stream_answer,
    security_requirement,
)
from contentplatform.core.procedures import (
    ORG_HEADER,
    ORGANIZATION_ID,
    UNIONS,
    Cached,
    Context,
    Procedure,
    ProcedureRouter,
)
from contentplatform.core.runtime import Runtime
from contentplatform.kit import logs, text
from contentplatform.kit.errors import (
    BadRequest,
    Forbidden,
    MethodNotAllowed,
    NotFound,
    PlatformError,
    validation_failed,
)
from contentplatform.kit.http import encoder
from contentplatform.kit.schemas import Input, is_header

RPC_PREFIX = "/api/rpc"


class Authorizer(Protocol):
    async def __call__(
        self,
        request: Request,
        access: Access,
        token: str | None,
        org_id: str | None,
        *,
        api_keys: bool = True,
        feature: str | None = None,
        stream_token: str | None = None,
    ) -> Principal: ...


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
        answer = answerer(procedure.output)
        common: dict[str, Any] = {
            "response_model": procedure.output,
            "responses": error_responses(procedure),
            "summary": procedure.summary,
            "description": procedure.description,
            "tags": [procedure.tag],
        }
        if procedure.events is not None:
            common["responses"][200] = event_stream_answer(procedure.events)
            if procedure.output is None:
                common["response_class"] = Response
        elif procedure.output is None:  # the operation answers 200 with an empty body
            common["response_class"] = Response
            common["responses"][200] = {"description": "Done; the body is empty."}
        rest, rpc = _Reading.rest(procedure), _Reading.rpc(procedure)
        app.router.add_api_route(
            procedure.path,
            documented_endpoint(
                procedure.operation_id.replace(".", "_"),
                endpoint_signature(rest.parameters, rest.body),
                _server(procedure, rest, authorize, answer, rest_route=True),
                events=procedure.events,
            ),
            methods=[procedure.method],
            operation_id=procedure.operation_id,
            openapi_extra={
                "security": security_requirement(
                    procedure.access, procedure.api_keys, procedure.stream_token is not None
                )
            },
            route_class_override=_ProcedureRoute,
            **common,
        )
        declared.append(app.router.routes[-1])
        app.router.add_api_route(
            f"{RPC_PREFIX}/{procedure.operation_id}",
            documented_endpoint(
                "rpc_" + procedure.operation_id.replace(".", "_"),
                endpoint_signature(rpc.parameters, rpc.body),
                _server(procedure, rpc, authorize, answer),
            ),
            methods=["POST"],
            include_in_schema=False,
            route_class_override=_ProcedureRoute,
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
    procedure: Procedure[Any, Any], request: Request, principal: Principal, data: BaseModel
) -> Any:
    """Run the handler on its validated input, in one unit of work."""
    runtime: Runtime = request.app.state.runtime
    request_id = logs.request_id()
    with actors.acting(_actor_of(principal, request, request_id)):
        async with runtime.db.unit_of_work() as session:
            ctx = Context(
                session=session,
                principal=principal,
                request_id=request_id,
                runtime=runtime,
                request=request,
            )
            return await procedure.handler(ctx, data)


def _actor_of(principal: Principal, request: Request, request_id: str) -> actors.Actor:
    """The caller as the events of this request name them."""
    identity = principal.identity
    if identity is None:
        return actors.Actor(
            type="system",
            id=None,
            display_name="System",
            ip=principal.client_address,
            request_id=request_id,
        )
    return actors.of_identity(
        identity,
        ip=principal.client_address,
        user_agent=text.cleaned(request.headers.get("user-agent") or "", 500) or None,
        request_id=request_id,
    )


@dataclass(frozen=True)
class _Reading:
    """Where one transport of an operation reads its input: the fields in the path, the query
    string and the headers, and the model of the JSON body that holds the others (none when no
    field is in it)."""

    procedure: Procedure[Any, Any]
    parameters: dict[str, tuple[str, FieldInfo]]  # field name -> (path|query|header, field)
    body: type[BaseModel] | None

    @classmethod
    def rest(cls, procedure: Procedure[Any, Any]) -> _Reading:
        return cls._of(procedure, lambda name, info: procedure.location(name, info))

    @classmethod
    def rpc(cls, procedure: Procedure[Any, Any]) -> _Reading:
        # Everything but the headers is the one JSON object, which is always there to check
        # (an operation without input refuses fields).
        return cls._of(
            procedure, lambda _, info: "header" if is_header(info) else "body", always_body=True
        )

    @classmethod
    def _of(
        cls,
        procedure: Procedure[Any, Any],
        where: Callable[[str, FieldInfo], str],
        *,
        always_body: bool = False,
    ) -> _Reading:
        parameters: dict[str, tuple[str, FieldInfo]] = {}
        body_fields: dict[str, Any] = {}
        for name, info in procedure.input.model_fields.items():
            place = where(name, info)
            if place == "body":
                body_fields[name] = (info.annotation, info)
            else:
                parameters[name] = (place, info)
        body = _body_model(procedure, body_fields) if body_fields or always_body else None
        return cls(procedure, parameters, body)

    @cached_property
    def body_keys(self) -> frozenset[str]:
        """The names a body may use: each body field's name, wire name and other accepted
        names (`seoMeta` beside `seo_meta`)."""
        fields = self.body.model_fields if self.body is not None else {}
        return frozenset(key for name, info in fields.items() for key in _names_of(name, info))

    @cached_property
    def wire_names(self) -> frozenset[tuple[str]]:
        """The error locations of the parameters (path, query, header), as pydantic names them."""
        return frozenset((info.alias or name,) for name, (_, info) in self.parameters.items())

    @cached_property
    def body_required(self) -> bool:
        fields = self.body.model_fields if self.body is not None else {}
        return any(info.is_required() for info in fields.values())

    @cached_property
    def sources(self) -> list[tuple[str, str, bool]]:
        """(where, wire name, is a list) of each parameter."""
        return [
            (place, info.alias or name, _is_sequence(info.annotation))
            for name, (place, info) in self.parameters.items()
        ]

    def read(self, request: Request, body: Any, *, also: Sequence[Any] = ()) -> BaseModel:
        """The operation's input, validated once, from the parameters and the body read as
        FastAPI reads them; 400 naming each field that fails (and the problems `also` lists)."""
        raw: dict[str, Any] = {}
        for place, key, many in self.sources:
            if place == "query":
                found = request.query_params.getlist(key) if many else request.query_params.get(key)
                if found is not None and found != []:
                    raw[key] = found
            elif place == "path":
                raw[key] = request.path_params[key]
            elif (value := request.headers.get(key)) is not None:
                raw[key] = value
        errors = list(also)
        refused: list[Any] = []
        if self.body is not None:
            if isinstance(body, dict) and body.keys() <= self.body_keys:
                raw.update(body)
            else:
                checked, refused = self._checked_body(body)
                raw.update(checked)
        try:
            data: BaseModel = self.procedure.input.model_validate(raw)
        except ValidationError as error:
            problems = error.errors(include_url=False)
            if refused:  # with a refused body, only the parameters' own problems are news
                problems = [e for e in problems if tuple(e["loc"][:1]) in self.wire_names]
            errors += problems
        else:
            if not errors and not refused:
                return data
        raise validation_failed([*errors, *refused])

    def _checked_body(self, body: Any) -> tuple[dict[str, Any], list[Any]]:
        """A body that is not plainly an object of body fields (none, an array, not JSON, a
        field named otherwise or not at all), read by the body model: its fields, or what is
        wrong with it."""
        assert self.body is not None
        if body is None:
            required = {"type": "missing", "loc": ("body",), "msg": "Field required"}
            return {}, [required] if self.body_required else []
        try:
            return self.body.model_validate(body).model_dump(exclude_unset=True), []
        except ValidationError as error:
            errors = error.errors(include_url=False)
            return {}, [{**e, "loc": ("body", *e["loc"])} for e in errors]


def _names_of(name: str, info: FieldInfo) -> set[str]:
    """Every key a JSON object may give a field under: its name, alias and validation aliases."""
    names = {name, info.alias or name}
    choices = info.validation_alias
    for choice in choices.choices if isinstance(choices, AliasChoices) else [choices]:
        if isinstance(choice, str):
            names.add(choice)
        elif isinstance(choice, AliasPath) and isinstance(choice.path[0], str):
            names.add(choice.path[0])
    return names


def _is_sequence(annotation: Any) -> bool:
    """Whether a query parameter takes several values (`?id=a&id=b`)."""
    kinds = (
        [annotation, *get_args(annotation)] if get_origin(annotation) in UNIONS else [annotation]
    )
    return any(get_origin(kind) in (list, set, tuple, frozenset) for kind in kinds)


async def _json_body(request: Request) -> Any:
    """The request body as FastAPI reads it: JSON when its content type says so (400 if it is
    not), the bytes as they are otherwise (refused by the body model), None when empty."""
    try:
        content = await request.body()
    except PlatformError:
        raise  # past the route's limit (kit.http.BodyLimitMiddleware): 413
    except Exception:
        raise BadRequest("There was an error parsing the body") from None
    if not content:
        return None
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    main, _, sub = kind.partition("/")
    if main != "application" or not (sub == "json" or sub.endswith("+json")):
        return content
    try:
        return json.loads(content)
    except json.JSONDecodeError as error:
        invalid = {"type": "json_invalid", "loc": ("body", error.pos), "msg": "JSON decode error"}
        raise validation_failed([invalid]) from None
    except (ValueError, RecursionError):
        # Bytes that are not UTF-8 (UnicodeDecodeError), or nesting deeper than the parser goes.
        invalid = {"type": "json_invalid", "loc": ("body",), "msg": "JSON decode error"}
        raise validation_failed([invalid]) from None


def _bearer(request: Request) -> str | None:
    """The bearer token, read as FastAPI's HTTPBearer reads it (any other scheme: none)."""
    scheme, credentials = get_authorization_scheme_param(request.headers.get("authorization"))
    return credentials if credentials and scheme.lower() == "bearer" else None


_ORGANIZATION: TypeAdapter[str | None] = TypeAdapter(
    Annotated[str | None, StringConstraints(max_length=255, pattern=ORGANIZATION_ID)]
)


def _server(
    procedure: Procedure[Any, Any],
    reading: _Reading,
    authorize: Authorizer,
    answer: Callable[[Any], Response],
    *,
    rest_route: bool = False,
) -> Callable[[Request], Awaitable[Response]]:
    """How a route of `procedure` serves a request: the caller authorized (401, 403, 429)
    before its body is read, so nobody without a token has a body read at all; then the body
    (not JSON: 400) and the input validated (400), the handler run and its result answered. An
    organization header that is no organization id is a 400 listed with whatever else is wrong
    with the input, the caller unchecked. On the REST route (`rest_route`) of an operation
    declared to take one, a stream token in the query stands for the bearer token and the
    organization, for the stream it names alone (else 403)."""
    access = procedure.access
    stream_of = procedure.stream_token if rest_route else None

    async def body_of(request: Request) -> Any:
        return await _json_body(request) if reading.body is not None else None

    async def serve(request: Request) -> Response:
        # Named from the start: the log lines of a refusal (401, 403, 400) name it too, and so
        # does the failure RequestContextMiddleware reports (kit/http.py `Failure`).
        logs.bind(operation=procedure.operation_id)
        streamed = (
            request.query_params.get(stream_tokens.PARAMETER)
            if stream_of is not None and _bearer(request) is None
            else None
        )
        if streamed is not None:
            principal = await authorize(
                request, access, None, None, feature=procedure.feature, stream_token=streamed
            )
        elif access is Access.public:
            principal = await authorize(request, access, None, None)
        elif access.tenant_role is None:
            principal = await authorize(request, access, _bearer(request), None)
        else:
            try:
                org = _ORGANIZATION.validate_python(request.headers.get(ORG_HEADER))
            except ValidationError as error:
                header = [{**e, "loc": ("header", ORG_HEADER)} for e in error.errors()]
                reading.read(request, await body_of(request), also=header)
            principal = await authorize(
                request,
                access,
                _bearer(request),
                org,
                api_keys=procedure.api_keys,
                feature=procedure.feature,
            )
        data = reading.read(request, await body_of(request))
        if streamed is not None and stream_of is not None and principal.stream != stream_of(data):
            raise Forbidden("This stream token opens another stream; ask for this one's URL.")
        if procedure.cached is None:
            return answer(await invoke(procedure, request, principal, data))
        return await _cached_answer(procedure, procedure.cached, request, principal, data, answer)

    return serve


async def _cached_answer(
    procedure: Procedure[Any, Any],
    cached: Cached,
    request: Request,
    principal: Principal,
    data: BaseModel,
    answer: Callable[[Any], Response],
) -> Response:
    """The answer kept for this input in its scope, or the handler's, kept for next time."""
    runtime: Runtime = request.app.state.runtime
    assert principal.tenant is not None, "cached operations are tenant-scoped"

    async def produce() -> str:
        fresh = answer(await invoke(procedure, request, principal, data))
        return bytes(fresh.body).decode()

    body = await runtime.cache.get_or_set(
        cached.scope(principal.tenant),
        f"{procedure.operation_id}:{data.model_dump_json()}",
        cached.seconds(runtime.settings),
        produce,
    )
    return Response(body.encode(), media_type="application/json")


class _ProcedureRoute(APIRoute):
    """A procedure's route. FastAPI documents it from its declared endpoint (parameters, body,
    security), but it is served by the procedure's own handler (`_server`): FastAPI's solving of
    dependencies and validating each parameter per request would only repeat what the input
    model validates, and cost a sixth of a small request."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        serve: Callable[[Request], Coroutine[Any, Any, Response]] = self.endpoint.serve  # type: ignore[attr-defined]
        return serve


def _body_model(procedure: Procedure[Any, Any], fields: dict[str, Any]) -> type[BaseModel]:
    """The input itself when every field is in the body, else a model of just those fields."""
    if len(fields) == len(procedure.input.model_fields):
        return procedure.input
    return create_model(f"{procedure.input.__name__}Body", __base__=Input, **fields)


def answerer(output: Any) -> Callable[[Any], Response]:
    """How an operation's result becomes its response: serialized once, straight into the body
    (kit.http.encoder). The route sends that Response as it is, so nothing validates the output
    again; `response_model` stays declared for the API document."""
    if output is None:
        return lambda result: result if isinstance(result, Response) else Response(status_code=200)
    encode = encoder(output)

    def answer(result: Any) -> Response:
        if isinstance(result, Response):  # an event stream (EventStream)
            return result
        return Response(encode(result), media_type="application/json")

    return answer
