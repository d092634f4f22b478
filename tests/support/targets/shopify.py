"""A stand-in for a Shopify shop's Admin GraphQL API, in memory, on loopback.

It answers `POST /admin/api/{api_version}/graphql.json` only (another version is a 404, like an
unknown path), checks the `X-Shopify-Access-Token` header (401 with Shopify's REST-style
`{"errors": ...}` body otherwise), and reads the GraphQL document by plain string matching:

- `articleCreate` / `articleUpdate` mutations: the variables must be declared with their real
  input types (`ArticleCreateInput!`, `ArticleUpdateInput!`), every input field must exist on
  that type (a top-level "Field is not defined" error otherwise, as GraphQL validation gives),
  a create needs `author { name }`; a blank title, a taken handle or an unknown blog are
  `userErrors`, an unknown article id a NOT_FOUND user error. Without a write scope a mutation is
  ACCESS_DENIED.
- queries: `shop`, `blog(id:)`, `articles(query:)` (the `blog_id:` and `handle:` filters),
  `currentAppInstallation` and an article's `metafield(namespace:, key:)` are answered; the
  other fields of a selection are answered whether asked for or not. `blogs(first:, after:)`
  pages through `blogs` as a connection (`nodes`, `pageInfo {hasNextPage endCursor}`; `first`
  1-250, opaque cursors) and needs a content scope (ACCESS_DENIED otherwise).
- `fileCreate(files:)` makes a file per `originalSource` URL (`files`; a write scope needed), at
  `fileStatus` UPLOADED; `node(id:)` answers it READY with its CDN `image { url }`.

Failures are scripted as for any `ScriptedServer` (`fail(...)`, every request here being a
POST to one path), or per GraphQL operation with `fail_operation` (handled in `handle`, so
`delay` and `drop` do not apply there):

    with ShopifyShop(token="shpat_test") as shop:
        shop.fail_operation("articleCreate", Failure(502, after=True))   # created, answer lost
        shop.fail(throttled(requested=1000, available=200, restore_rate=100))
        config = ShopifyConfig(store_url=shop.url, blog_id=shop.blog_id)
        ...
        assert [a["title"] for a in shop.articles.values()] == ["Pricing"]
        assert shop.operations() == ["PublishContext", "CreateArticle"]
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support.targets.scripted import Answer, Failure, ScriptedServer, Seen

CREATE_FIELDS = {
    "author",
    "blogId",
    "body",
    "handle",
    "image",
    "isPublished",
    "metafields",
    "publishDate",
    "summary",
    "tags",
    "templateSuffix",
    "title",
}
UPDATE_FIELDS = CREATE_FIELDS | {"redirectNewHandle"}
METAFIELD_FIELDS = {"namespace", "key", "type", "value", "id", "description"}
WRITE_SCOPES = {"write_content", "write_online_store_pages"}
# What lets an app read blogs: a write scope includes its read scope.
READ_SCOPES = WRITE_SCOPES | {"read_content", "read_online_store_pages"}
MAX_FIRST = 250
START = datetime(2026, 1, 1, tzinfo=UTC)


def throttled(*, requested: float, available: float, restore_rate: float = 100.0) -> Failure:
    """Shopify's answer to a query costing more points than the bucket holds: 200, THROTTLED."""
    body = {
        "errors": [
            {
                "message": "Throttled",
                "extensions": {
                    "code": "THROTTLED",
                    "documentation": "https://shopify.dev/api/usage/limits#rate-limits",
                },
            }
        ],
        "extensions": {
            "cost": {
                "requestedQueryCost": requested,
                "actualQueryCost": None,
                "throttleStatus": {
                    "maximumAvailable": 2000.0,
                    "currentlyAvailable": available,
                    "restoreRate": restore_rate,
                },
            }
        },
    }
    return Failure(200, body=body)


@dataclass
class _OperationFailure:
    operation: str
    failure: Failure
    times: int


class ShopifyShop(ScriptedServer):
    def __init__(
        self,
        *,
        token: str = "shpat_test_token_0123456789",
        api_version: str = "2026-01",
        name: str = "Acme Store",
        scopes: tuple[str, ...] = ("read_content", "write_content"),
    ) -> None:
        super().__init__()
        self.token = token
        self.api_version = api_version
        self.path = f"/admin/api/{api_version}/graphql.json"
        self.name = name
        self.myshopify_domain = "acme-store.myshopify.com"
        self.primary_domain = "https://shop.acme.example"
        self.scopes = list(scopes)
        self.blogs: dict[str, dict[str, Any]] = {
            "gid://shopify/Blog/41": {
                "id": "gid://shopify/Blog/41",
                "title": "News",
                "handle": "news",
            }
        }
        self.blog_id = "gid://shopify/Blog/41"
        self.articles: dict[str, dict[str, Any]] = {}
        # Files made by `fileCreate`: {id, originalSource, alt, contentType, fileStatus, url}.
        # A file is UPLOADED when made and READY (with its CDN URL) once read back by `node`,
        # as Shopify processes it in the background.
        self.files: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(9001)
        self._ticks = itertools.count(1)
        self._operation_failures: list[_OperationFailure] = []

    def fail_operation(self, operation: str, failure: Failure, *, times: int = 1) -> None:
        """Answer the next `times` requests using the root field `operation` (`articleCreate`,
        `articleUpdate`, `articles`, `shop`) with `failure`; `after` does the write first."""
        with self.lock:
            self._operation_failures.append(_OperationFailure(operation, failure, times))

    def operations(self) -> list[str]:
        """The names of the GraphQL operations received, in order."""
        names = []
        for request in self.seen("POST", self.path):
            match = re.search(r"(?:query|mutation)\s+(\w+)", request.json().get("query", ""))
            names.append(match.group(1) if match else "(anonymous)")
        return names

    def add_blog(self, title: str, handle: str) -> str:
        """Another blog of the shop; its id."""
        with self.lock:
            blog_id = f"gid://shopify/Blog/{next(self._ids)}"
            self.blogs[blog_id] = {"id": blog_id, "title": title, "handle": handle}
            return blog_id

    def add_article(self, handle: str, title: str, *, mark: str | None = None) -> str:
        """An article made in the shop's admin (with our `content_platform.draft_id` mark when
        `mark` is given)."""
        with self.lock:
            article = self._new_article(
                {"title": title, "handle": handle, "blogId": self.blog_id, "isPublished": True}
            )
            if mark is not None:
                article["metafields"][("content_platform", "draft_id")] = mark
            return str(article["id"])

    # The protocol.

    def error_body(self, status: int, message: str, code: str | None) -> Any:
        return {"errors": message}

    def handle(self, request: Seen) -> Answer:
        if request.method != "POST" or request.path != self.path:
            return 404, {}, {"errors": "Not Found"}
        if request.headers.get("x-shopify-access-token") != self.token:
            return (
                401,
                {},
                {
                    "errors": "[API] Invalid API key or access token "
                    "(unrecognized login or wrong password)"
                },
            )
        try:
            payload = json.loads(request.body)
            document = str(payload["query"])
            variables = payload.get("variables") or {}
        except (ValueError, KeyError, TypeError):
            return 400, {}, {"errors": {"query": "Required parameter missing or invalid"}}
        operation = self._root_operation(document)
        failure = self._next_operation_failure(operation)
        if failure is not None and not failure.after:
            return self.failure_answer(failure)
        answer = self._execute(operation, document, variables)
        return self.failure_answer(failure) if failure is not None else answer

    # Execution.

    def _root_operation(self, document: str) -> str:
        for name in ("articleCreate", "articleUpdate", "articles", "fileCreate", "node"):
            if re.search(rf"\b{name}\s*\(", document):
                return name
        return "shop"

    def _next_operation_failure(self, operation: str) -> Failure | None:
        for scripted in self._operation_failures:
            if scripted.operation == operation:
                scripted.times -= 1
                if scripted.times <= 0:
                    self._operation_failures.remove(scripted)
                return scripted.failure
        return None

    def _execute(self, operation: str, document: str, variables: dict[str, Any]) -> Answer:
        if operation == "fileCreate":
            return self._file_create(document, variables)
        if operation == "node":
            found = self.files.get(str(variables.get("id")))
            if found is not None:
                found["fileStatus"] = "READY"
            return 200, {}, {"data": {"node": self._file(found) if found else None}}
        if operation in ("articleCreate", "articleUpdate"):
            if not set(self.scopes) & WRITE_SCOPES:
                return (
                    200,
                    {},
                    _top_error(
                        f"Access denied for {operation} field. Required access: `write_content` "
                        "access scope. Also: `write_online_store_pages` access scope.",
                        "ACCESS_DENIED",
                    ),
                )
            if operation == "articleCreate":
                return self._create(document, variables)
            return self._update(document, variables)
        blogs_call = re.search(r"\bblogs\s*\(([^)]*)\)", document)
        if blogs_call:
            if not set(self.scopes) & READ_SCOPES:
                return (
                    200,
                    {},
                    _top_error(
                        "Access denied for blogs field. Required access: `read_content` access "
                        "scope. Also: `read_online_store_pages` access scope.",
                        "ACCESS_DENIED",
                    ),
                )
            try:
                blogs = self._blogs(blogs_call.group(1), variables)
            except ValueError as problem:
                return 200, {}, _top_error(str(problem))
            return 200, {}, {"data": {**self._query(document, variables), "blogs": blogs}}
        return 200, {}, {"data": self._query(document, variables)}

    def _file_create(self, document: str, variables: dict[str, Any]) -> Answer:
        if "$files: [FileCreateInput!]!" not in document:
            return 200, {}, _top_error("Variable $files of type [FileCreateInput!]! is required")
        if not set(self.scopes) & WRITE_SCOPES:
            return 200, {}, _top_error("Access denied for fileCreate field.", "ACCESS_DENIED")
        made = []
        for given in variables.get("files") or []:
            source = str(given.get("originalSource") or "")
            if not source.startswith(("http://", "https://")):
                error = _user_error(["files", "0", "originalSource"], "Invalid URL", "INVALID")
                return 200, {}, {"data": {"fileCreate": {"files": [], "userErrors": [error]}}}
            file_id = f"gid://shopify/MediaImage/{next(self._ids)}"
            name = source.split("?")[0].rsplit("/", 1)[-1] or "image"
            self.files[file_id] = {
                "id": file_id,
                "originalSource": source,
                "alt": given.get("alt"),
                "contentType": given.get("contentType"),
                "fileStatus": "UPLOADED",
                "url": f"https://cdn.shopify.test/s/files/1/{file_id.rsplit('/', 1)[-1]}/{name}",
            }
            made.append(self._file(self.files[file_id]))
        return 200, {}, {"data": {"fileCreate": {"files": made, "userErrors": []}}}

    def _file(self, found: dict[str, Any]) -> dict[str, Any]:
        ready = found["fileStatus"] == "READY"
        return {
            "id": found["id"],
            "fileStatus": found["fileStatus"],
            "image": {"url": found["url"]} if ready else None,
        }

    def _blogs(self, arguments: str, variables: dict[str, Any]) -> dict[str, Any]:
        """One page of the `blogs` connection, for `first:` and `after:` (values or variables)."""

        def argument(name: str) -> Any:
            found = re.search(rf"\b{name}:\s*(\$?\w+|\"[^\"]*\")", arguments)
            if found is None:
                return None
            value = found.group(1)
            if value.startswith("$"):
                return variables.get(value[1:])
            return json.loads(value)

        first = argument("first")
        if not isinstance(first, int) or not 1 <= first <= MAX_FIRST:
            raise ValueError(f"The first argument must be between 1 and {MAX_FIRST}.")
        after = argument("after")
        start = 0
        if after is not None:
            try:
                start = int(base64.b64decode(str(after)).decode().removeprefix("blog:")) + 1
            except ValueError:
                raise ValueError(f"Invalid cursor for current pagination sort: {after}") from None
        ordered = list(self.blogs.values())
        page = ordered[start : start + first]

        def cursor(index: int) -> str:
            return base64.b64encode(f"blog:{index}".encode()).decode()

        return {
            "nodes": [dict(blog) for blog in page],
            "pageInfo": {
                "hasNextPage": start + first < len(ordered),
                "hasPreviousPage": start > 0,
                "startCursor": cursor(start) if page else None,
                "endCursor": cursor(start + len(page) - 1) if page else None,
            },
        }

    def _create(self, document: str, variables: dict[str, Any]) -> Answer:
        if "$article: ArticleCreateInput!" not in document:
            return 200, {}, _top_error("articleCreate takes $article: ArticleCreateInput!")
        fields = variables.get("article") or {}
        problem = _input_problem(fields, CREATE_FIELDS, "ArticleCreateInput")
        if problem is None and not (fields.get("author") or {}).get("name"):
            problem = "Variable $article of type ArticleCreateInput! was provided invalid value "
            problem += "for author (Expected value to not be null)"
        if problem:
            return 200, {}, _top_error(problem)
        errors = []
        if not str(fields.get("title") or "").strip():
            errors.append(_user_error(["article", "title"], "Title can't be blank", "BLANK"))
        if fields.get("blogId") not in self.blogs:
            errors.append(_user_error(["article", "blogId"], "Blog must exist", "NOT_FOUND"))
        if self._holder_of(fields.get("handle"), fields.get("blogId")) is not None:
            errors.append(
                _user_error(["article", "handle"], "Handle has already been taken", "TAKEN")
            )
        if errors:
            return 200, {}, _payload("articleCreate", None, errors)
        article = self._new_article(fields)
        return 200, {}, _payload("articleCreate", self._public(article), [])

    def _update(self, document: str, variables: dict[str, Any]) -> Answer:
        if "$article: ArticleUpdateInput!" not in document or "$id: ID!" not in document:
            return (
                200,
                {},
                _top_error("articleUpdate takes $id: ID! and $article: ArticleUpdateInput!"),
            )
        fields = variables.get("article") or {}
        problem = _input_problem(fields, UPDATE_FIELDS, "ArticleUpdateInput")
        if problem:
            return 200, {}, _top_error(problem)
        article = self.articles.get(str(variables.get("id")))
        if article is None:
            error = _user_error(["id"], "Article does not exist", "NOT_FOUND")
            return 200, {}, _payload("articleUpdate", None, [error])
        if "title" in fields and not str(fields["title"] or "").strip():
            error = _user_error(["article", "title"], "Title can't be blank", "BLANK")
            return 200, {}, _payload("articleUpdate", None, [error])
        holder = self._holder_of(fields.get("handle"), article["blogId"])
        if holder is not None and holder is not article:
            error = _user_error(["article", "handle"], "Handle has already been taken", "TAKEN")
            return 200, {}, _payload("articleUpdate", None, [error])
        self._apply(article, fields)
        return 200, {}, _payload("articleUpdate", self._public(article), [])

    def _query(self, document: str, variables: dict[str, Any]) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if re.search(r"\bshop\s*\{", document):
            data["shop"] = {
                "name": self.name,
                "myshopifyDomain": self.myshopify_domain,
                "primaryDomain": {"url": self.primary_domain},
            }
        blog_call = re.search(r"\bblog\s*\(\s*id:\s*\$(\w+)", document)
        if blog_call:
            data["blog"] = self.blogs.get(str(variables.get(blog_call.group(1))))
        articles_call = re.search(r"\barticles\s*\([^)]*query:\s*\$(\w+)", document)
        if articles_call:
            search = str(variables.get(articles_call.group(1)) or "")
            mark = re.search(r'metafield\(namespace:\s*"([^"]+)",\s*key:\s*"([^"]+)"\)', document)
            data["articles"] = {
                "nodes": [
                    {**self._public(article), **self._metafield(article, mark)}
                    for article in self._search(search)
                ][:1]
            }
        if "currentAppInstallation" in document:
            data["currentAppInstallation"] = {
                "accessScopes": [{"handle": scope} for scope in self.scopes]
            }
        return data

    def _search(self, search: str) -> list[dict[str, Any]]:
        blog = re.search(r"blog_id:(\d+)", search)
        handle = re.search(r'handle:"((?:[^"\\]|\\.)*)"|handle:(\S+)', search)
        found = list(self.articles.values())
        if blog:
            found = [a for a in found if a["blogId"] == f"gid://shopify/Blog/{blog.group(1)}"]
        if handle:
            wanted = handle.group(1) if handle.group(1) is not None else handle.group(2)
            wanted = re.sub(r"\\(.)", r"\1", wanted)
            found = [a for a in found if a["handle"] == wanted]
        return found

    # The store.

    def _new_article(self, fields: dict[str, Any]) -> dict[str, Any]:
        article_id = f"gid://shopify/Article/{next(self._ids)}"
        article: dict[str, Any] = {
            "id": article_id,
            "blogId": fields["blogId"],
            "handle": "",
            "title": "",
            "body": "",
            "summary": None,
            "tags": [],
            "author": {"name": (fields.get("author") or {}).get("name")},
            "isPublished": False,
            "publishedAt": None,
            "updatedAt": None,
            "metafields": {},
        }
        self.articles[article_id] = article
        self._apply(article, fields)
        return article

    def _apply(self, article: dict[str, Any], fields: dict[str, Any]) -> None:
        for name in ("title", "body", "summary", "tags"):
            if name in fields:
                article[name] = fields[name]
        if fields.get("image"):
            # Shopify copies the image from its URL into its CDN as the article is written.
            image = fields["image"]
            with urllib.request.urlopen(image["url"], timeout=10) as answer:
                article["image"] = {
                    "url": image["url"],
                    "altText": image.get("altText"),
                    "bytes": answer.read(),
                }
        if fields.get("handle"):
            article["handle"] = fields["handle"]
        elif not article["handle"]:
            article["handle"] = re.sub(r"[^a-z0-9]+", "-", article["title"].lower()).strip("-")
        for metafield in fields.get("metafields") or []:
            article["metafields"][(metafield["namespace"], metafield["key"])] = metafield["value"]
        now = self._now()
        if "isPublished" in fields:
            published = bool(fields["isPublished"])
            if published and not article["isPublished"]:
                article["publishedAt"] = now
            if not published:
                article["publishedAt"] = None
            article["isPublished"] = published
        article["updatedAt"] = now

    def _holder_of(self, handle: Any, blog_id: Any) -> dict[str, Any] | None:
        for article in self.articles.values():
            if handle and article["handle"] == handle and article["blogId"] == blog_id:
                return article
        return None

    def _public(self, article: dict[str, Any]) -> dict[str, Any]:
        blog = self.blogs[article["blogId"]]
        return {
            "id": article["id"],
            "handle": article["handle"],
            "title": article["title"],
            "isPublished": article["isPublished"],
            "publishedAt": article["publishedAt"],
            "updatedAt": article["updatedAt"],
            "blog": {"id": blog["id"], "handle": blog["handle"]},
        }

    def _metafield(self, article: dict[str, Any], mark: re.Match[str] | None) -> dict[str, Any]:
        if mark is None:
            return {}
        value = article["metafields"].get((mark.group(1), mark.group(2)))
        return {"metafield": None if value is None else {"value": value}}

    def _now(self) -> str:
        # A second per write, so every write has an updatedAt of its own.
        moment = START + timedelta(seconds=next(self._ticks))
        return moment.isoformat().replace("+00:00", "Z")


def _input_problem(fields: dict[str, Any], allowed: set[str], type_name: str) -> str | None:
    for name in fields:
        if name not in allowed:
            return (
                f"Variable $article of type {type_name}! was provided invalid value for {name} "
                f"(Field is not defined on {type_name})"
            )
    for metafield in fields.get("metafields") or []:
        unknown = set(metafield) - METAFIELD_FIELDS
        if unknown or not {"namespace", "key", "type", "value"} <= set(metafield):
            return f"Variable $article of type {type_name}! was provided invalid metafields"
    return None


def _top_error(message: str, code: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"message": message, "locations": [{"line": 2, "column": 3}]}
    if code:
        error["extensions"] = {"code": code}
    return {"errors": [error]}


def _user_error(field: list[str], message: str, code: str) -> dict[str, Any]:
    return {"field": field, "message": message, "code": code}


def _payload(
    mutation: str, article: dict[str, Any] | None, errors: list[dict[str, Any]]
) -> dict[str, Any]:
    return {"data": {mutation: {"article": article, "userErrors": errors}}}
