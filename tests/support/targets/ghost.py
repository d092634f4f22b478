"""A stand-in Ghost site (Admin API, v5) for tests, on loopback.

Enough of the real protocol to be faithful, and strict about what we send:
- every admin request needs `Accept-Version: v<major>.<minor>` (real Ghost tolerates it
  missing; the stand-in answers 400 so a test notices) and all but `GET /site/` (which Ghost
  serves without a key) `Authorization: Ghost <jwt>`: HS256, signed with the hex-decoded
  secret of the Admin API key `id:secret`, header `kid` the id, claims `aud` "/admin/", `iat`
  and `exp` at most 5 minutes apart, not expired. Anything else is 401 in Ghost's error body
  `{"errors": [{"message", "context", "type", ...}]}`. `tokens` holds the claims of every
  token accepted;
- `POST /ghost/api/admin/posts/` creates (201), `PUT .../posts/{id}/` updates and needs the
  post's current `updated_at` (an older one: 409 `UPDATE_COLLISION`), `GET .../posts/{id}/`,
  `GET .../posts/slug/{slug}/` (any status; else 404 `NotFoundError`), `GET .../posts/?limit=`,
  `GET .../site/`. Bodies are `{"posts": [{...}]}`. Without `?source=html` a post's `html` is
  ignored, as Ghost ignores it; with it the html is kept as sent (Ghost would convert it to
  its editor's format, keeping what sits in an `<!--kg-card-begin: html-->` card verbatim);
- Ghost's validation (422 `ValidationError`): title at most 255 characters, custom_excerpt
  300, meta_title 300, meta_description 500, status `published` | `draft` | `scheduled`;
- `GET .../tags/` and `GET .../users/` browse the site's tags (`tags`, by id) and staff users
  (`staff`, by id) as `{"tags"|"users": [...], "meta": {"pagination": {page, limit, pages,
  total, next, prev}}}`, ordered by name; `limit` above 100, or `all`, is 100 (Ghost 6), and
  `fields` keeps the fields named;
- slugs are unique (`-2`, `-3`); tags given by name (or as `{"name"}`) are the site's tag of that
  name, made when there is none;
  `published_at` is set when a post is first published; `url` is `{url}/{slug}/` when
  published and the preview `{url}/p/{uuid}/` when not; `updated_at` moves forward on every
  write; `html` comes back only with `?formats=html`, as in Ghost 5.

`posts` holds the posts by id, in Ghost's field names. Failures are scripted as on every
stand-in (tests/support/targets/scripted.py); their default body is Ghost's error shape, a 409
Ghost's UPDATE_COLLISION.

    with GhostServer() as ghost:
        credentials = {"adminApiKey": ghost.admin_api_key}
        ghost.edit(post_id, title="Changed in Ghost")  # a save in Ghost's editor
        ghost.fail(Failure(409), method="PUT")         # someone saved just before us
        ...
        assert ghost.tokens[-1]["aud"] == "/admin/"
        ghost.add_tag("Gardening")
        ghost.add_user("Sam Writer")
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt

from tests.support.targets.scripted import Answer, Failure, ScriptedServer, Seen

ADMIN = "/ghost/api/admin"
STATUSES = ("published", "draft", "scheduled")
MAX_LENGTHS = {"title": 255, "custom_excerpt": 300, "meta_title": 300, "meta_description": 500}
EDITABLE = (
    "title",
    "custom_excerpt",
    "meta_title",
    "meta_description",
    "canonical_url",
    "codeinjection_head",
    "codeinjection_foot",
    "feature_image",
    "feature_image_alt",
    "feature_image_caption",
    "featured",
)
ERROR_TYPES = {
    400: "BadRequestError",
    401: "UnauthorizedError",
    403: "NoPermissionError",
    404: "NotFoundError",
    409: "UpdateCollisionError",
    422: "ValidationError",
    429: "TooManyRequestsError",
}
COLLISION = "Saving failed! Someone else is editing this post."
VERSION = "5.96"
# The largest page Ghost serves (6.0 on; `limit=all` and larger limits become this).
MAX_LIMIT = 100


class _Refusal(Exception):
    def __init__(
        self, status: int, message: str, *, context: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.answer: Answer = (status, {}, error(status, message, context=context, code=code))


def error(
    status: int, message: str, *, context: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {
        "errors": [
            {
                "message": message,
                "context": context,
                "type": ERROR_TYPES.get(status, "InternalServerError"),
                "details": None,
                "property": None,
                "help": None,
                "code": code,
                "id": str(uuid.uuid4()),
                "ghostErrorCode": None,
            }
        ]
    }


class GhostServer(ScriptedServer):
    POSTS = f"{ADMIN}/posts/"

    def __init__(self, *, title: str = "The Stand-in Gazette") -> None:
        super().__init__()
        self.title = title
        self.key_id = secrets.token_hex(12)
        self.secret = secrets.token_hex(32)
        self.posts: dict[str, dict[str, Any]] = {}
        # Uploaded images by the URL Ghost answered: {filename, content_type, data, ref}.
        self.images: dict[str, dict[str, Any]] = {}
        self.tokens: list[dict[str, Any]] = []
        self._last_update = datetime.now(UTC)
        self.tags: dict[str, dict[str, Any]] = {}
        self.staff: dict[str, dict[str, Any]] = {}
        self.add_user("Stand-in Owner")

    def add_tag(self, name: str) -> str:
        """A tag made in Ghost (its id); the existing one when the site has that name."""
        with self.lock:
            for tag in self.tags.values():
                if tag["name"] == name:
                    return str(tag["id"])
            now = _timestamp(datetime.now(UTC))
            tag = {
                "id": secrets.token_hex(12),
                "name": name,
                "slug": _slugify(name),
                "description": None,
                "feature_image": None,
                # Ghost's internal tags start with #.
                "visibility": "internal" if name.startswith("#") else "public",
                "meta_title": None,
                "meta_description": None,
                "created_at": now,
                "updated_at": now,
            }
            self.tags[tag["id"]] = tag
            return str(tag["id"])

    def add_user(self, name: str) -> str:
        """A staff user of the site; its id."""
        with self.lock:
            now = _timestamp(datetime.now(UTC))
            slug = _slugify(name)
            user = {
                "id": secrets.token_hex(12),
                "name": name,
                "slug": slug,
                "email": f"{slug}@example.test",
                "profile_image": None,
                "cover_image": None,
                "bio": None,
                "website": None,
                "location": None,
                "facebook": None,
                "twitter": None,
                "accessibility": None,
                "status": "active",
                "meta_title": None,
                "meta_description": None,
                "tour": None,
                "last_seen": None,
                "created_at": now,
                "updated_at": now,
            }
            self.staff[user["id"]] = user
            return str(user["id"])

    @property
    def admin_api_key(self) -> str:
        return f"{self.key_id}:{self.secret}"

    def post_path(self, post_id: str) -> str:
        return f"{self.POSTS}{post_id}/"

    def add_post(self, *, title: str, slug: str, html: str = "", status: str = "published") -> str:
        """A post made in Ghost itself (by someone else); its id."""
        with self.lock:
            post = self._new_post()
            self._apply(
                post, {"title": title, "slug": slug, "html": html, "status": status}, source="html"
            )
            return str(post["id"])

    def edit(self, post_id: str, **fields: Any) -> None:
        """A save in Ghost's own editor: the post changes and so does its `updated_at`."""
        with self.lock:
            self._apply(self.posts[post_id], fields, source="html")

    def error_body(self, status: int, message: str, code: str | None) -> Any:
        return error(status, message, code=code)

    def failure_answer(self, failure: Failure) -> Answer:
        if failure.status == 409 and failure.message is None and failure.body is None:
            failure = Failure(
                409, COLLISION, code=failure.code or "UPDATE_COLLISION", headers=failure.headers
            )
        return super().failure_answer(failure)

    def handle(self, request: Seen) -> Answer:
        try:
            status, headers, body = self._route(request)
        except _Refusal as refusal:
            status, headers, body = refusal.answer
        return status, {"content-version": f"v{VERSION}", **headers}, body

    def _route(self, request: Seen) -> Answer:
        if not request.path.startswith(f"{ADMIN}/"):
            raise _Refusal(404, "Resource not found")
        if not re.fullmatch(r"v\d+\.\d+", request.headers.get("accept-version", "")):
            raise _Refusal(
                400,
                "Accept-Version header missing or malformed",
                context="Send Accept-Version: v5.0 (the stand-in insists; Ghost tolerates it).",
            )
        route, method = request.path.removeprefix(ADMIN), request.method
        if route == "/site/" and method == "GET":
            return 200, {}, {"site": self._site()}
        self._authenticate(request)
        if route == "/posts/" and method == "GET":
            return self._browse(request)
        if route == "/posts/" and method == "POST":
            return self._create(request)
        if route == "/images/upload/" and method == "POST":
            return self._upload(request)
        if route == "/tags/" and method == "GET":
            tags = [tag | {"url": f"{self.url}/tag/{tag['slug']}/"} for tag in self.tags.values()]
            return self._list("tags", tags, request)
        if route == "/users/" and method == "GET":
            users = [
                user | {"url": f"{self.url}/author/{user['slug']}/"} for user in self.staff.values()
            ]
            return self._list("users", users, request)
        match = re.fullmatch(r"/posts/slug/([^/]+)/", route)
        if match and method == "GET":
            found = [post for post in self.posts.values() if post["slug"] == match[1]]
            if not found:
                raise _Refusal(404, "Post not found.")
            return 200, {}, {"posts": [self._render(found[0], request)]}
        match = re.fullmatch(r"/posts/([^/]+)/", route)
        if match and method in ("GET", "PUT"):
            post = self.posts.get(match[1])
            if post is None:
                raise _Refusal(404, "Post not found.")
            if method == "GET":
                return 200, {}, {"posts": [self._render(post, request)]}
            return self._edit(request, post)
        raise _Refusal(404, "Resource not found")

    def _authenticate(self, request: Seen) -> None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme != "Ghost" or not token:
            raise _Refusal(
                401,
                "Authorization failed",
                context="Unable to determine the authenticated user or integration.",
            )
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise _Refusal(401, "Invalid token", context="The token is not a JWT.") from None
        if header.get("kid") != self.key_id:
            raise _Refusal(401, "Unknown Admin API Key")
        try:
            claims = jwt.decode(
                token,
                bytes.fromhex(self.secret),
                algorithms=["HS256"],
                audience="/admin/",
                options={"require": ["iat", "exp", "aud"]},
            )
        except jwt.PyJWTError as problem:
            raise _Refusal(401, f"Invalid token: {problem}") from None
        if claims["exp"] - claims["iat"] > 5 * 60:
            raise _Refusal(401, "Invalid token: a token may be valid for at most 5 minutes")
        self.tokens.append(claims)

    def _site(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "description": "Thoughts, stories and ideas.",
            "logo": None,
            "icon": None,
            "accent_color": "#FF1A75",
            "locale": "en",
            "url": f"{self.url}/",
            "version": VERSION,
        }

    def _browse(self, request: Seen) -> Answer:
        limit = int(request.query.get("limit", "15"))
        found = sorted(self.posts.values(), key=lambda post: post["created_at"], reverse=True)
        pages = max(1, -(-len(found) // limit))
        pagination = {
            "page": 1,
            "limit": limit,
            "pages": pages,
            "total": len(found),
            "next": 2 if pages > 1 else None,
            "prev": None,
        }
        posts = [self._render(post, request) for post in found[:limit]]
        return 200, {}, {"posts": posts, "meta": {"pagination": pagination}}

    def _list(self, resource: str, items: list[dict[str, Any]], request: Seen) -> Answer:
        """A browse answer: one page by name, with Ghost's pagination and `fields`."""
        asked = request.query.get("limit", "15")
        try:
            limit = MAX_LIMIT if asked == "all" else min(int(asked), MAX_LIMIT)
            page = int(request.query.get("page", "1"))
        except ValueError:
            raise _Refusal(422, "Validation error", context="limit and page are numbers") from None
        if limit < 1 or page < 1:
            raise _Refusal(422, "Validation error", context="limit and page start at 1")
        found = sorted(items, key=lambda item: (item["name"], item["id"]))
        pages = max(1, -(-len(found) // limit))
        pagination = {
            "page": page,
            "limit": limit,
            "pages": pages,
            "total": len(found),
            "next": page + 1 if page < pages else None,
            "prev": page - 1 if page > 1 else None,
        }
        shown = found[(page - 1) * limit : page * limit]
        fields = request.query.get("fields")
        if fields:
            wanted = fields.split(",")
            shown = [{name: item[name] for name in wanted if name in item} for item in shown]
        return 200, {}, {resource: shown, "meta": {"pagination": pagination}}

    def _upload(self, request: Seen) -> Answer:
        """`POST /images/upload/`: a multipart form with `file`, `purpose` and `ref`."""
        content_type = request.headers.get("content-type", "")
        if not content_type.startswith("multipart/form-data"):
            raise _Refusal(415, "Please select an image.")
        form = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"content-type: {content_type}\r\n\r\n".encode() + request.body
        )
        parts = {
            part.get_param("name", header="content-disposition"): part for part in form.iter_parts()
        }
        file = parts.get("file")
        if file is None or not file.get_filename():
            raise _Refusal(422, "Please select an image.")
        data = file.get_payload(decode=True)
        url = f"{self.url}/content/images/2026/11/{file.get_filename()}"
        ref = parts.get("ref")
        self.images[url] = {
            "filename": file.get_filename(),
            "content_type": file.get_content_type(),
            "data": data,
            "ref": ref.get_payload(decode=True).decode() if ref is not None else None,
        }
        return 201, {}, {"images": [{"url": url, "ref": self.images[url]["ref"]}]}

    def _create(self, request: Seen) -> Answer:
        fields = _post_in(request)
        _validate(fields)
        post = self._new_post()
        self._apply(post, fields, source=request.query.get("source"))
        return 201, {}, {"posts": [self._render(post, request)]}

    def _new_post(self) -> dict[str, Any]:
        now = _timestamp(datetime.now(UTC))
        post: dict[str, Any] = {
            "id": secrets.token_hex(12),
            "uuid": str(uuid.uuid4()),
            "title": "(Untitled)",
            "slug": "",
            "html": "",
            "status": "draft",
            "tags": [],
            "created_at": now,
            "updated_at": now,
            "published_at": None,
        } | dict.fromkeys(EDITABLE)
        post["featured"] = False
        self.posts[post["id"]] = post
        return post

    def _edit(self, request: Seen, post: dict[str, Any]) -> Answer:
        fields = _post_in(request)
        sent = fields.get("updated_at")
        if not isinstance(sent, str):
            raise _Refusal(
                422,
                "Validation error, cannot edit post.",
                context="data.posts[0] should have required property 'updated_at'",
            )
        try:
            stale = _parse(sent) != _parse(post["updated_at"])
        except ValueError:
            raise _Refusal(
                422, "Validation error, cannot edit post.", context="updated_at"
            ) from None
        if stale:
            raise _Refusal(409, COLLISION, code="UPDATE_COLLISION")
        self._apply(post, fields, source=request.query.get("source"))
        return 200, {}, {"posts": [self._render(post, request)]}

    def _apply(self, post: dict[str, Any], fields: dict[str, Any], *, source: str | None) -> None:
        _validate(fields)
        for name in (*EDITABLE, "status"):
            if name in fields:
                post[name] = fields[name]
        if "html" in fields and source == "html":
            post["html"] = fields["html"] or ""
        if "tags" in fields:
            names = [tag if isinstance(tag, str) else str(tag["name"]) for tag in fields["tags"]]
            post["tags"] = [self._tag(self.add_tag(name)) for name in names]
        slug = _slugify(fields.get("slug") or post["slug"] or post["title"]) or "untitled"
        taken = {other["slug"] for other in self.posts.values() if other["id"] != post["id"]}
        candidate, suffix = slug, 2
        while candidate in taken:
            candidate, suffix = f"{slug}-{suffix}", suffix + 1
        post["slug"] = candidate
        now = self._tick()
        if post["status"] == "published" and post["published_at"] is None:
            post["published_at"] = now
        post["updated_at"] = now

    def _tag(self, tag_id: str) -> dict[str, Any]:
        """A tag as a post carries it."""
        tag = self.tags[tag_id]
        return {"id": tag["id"], "name": tag["name"], "slug": tag["slug"]}

    def _tick(self) -> str:
        """Now, strictly after the last write (two writes in a millisecond must differ)."""
        now = datetime.now(UTC)
        self._last_update = max(now, self._last_update + timedelta(milliseconds=1))
        return _timestamp(self._last_update)

    def _render(self, post: dict[str, Any], request: Seen) -> dict[str, Any]:
        shown = {name: value for name, value in post.items() if name != "html"}
        if post["status"] == "published":
            shown["url"] = f"{self.url}/{post['slug']}/"
        else:
            shown["url"] = f"{self.url}/p/{post['uuid']}/"
        shown["excerpt"] = post["custom_excerpt"]
        shown["primary_tag"] = post["tags"][0] if post["tags"] else None
        if "html" in request.query.get("formats", "").split(","):
            shown["html"] = post["html"]
        fields = request.query.get("fields")
        if fields:
            shown = {name: shown[name] for name in fields.split(",") if name in shown}
        return shown


def _post_in(request: Seen) -> dict[str, Any]:
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        raise _Refusal(400, "Request body is not valid JSON.") from None
    posts = body.get("posts") if isinstance(body, dict) else None
    if not isinstance(posts, list) or len(posts) != 1 or not isinstance(posts[0], dict):
        raise _Refusal(422, "No root key ('posts') provided.")
    fields: dict[str, Any] = posts[0]
    return fields


def _validate(fields: dict[str, Any]) -> None:
    for name, limit in MAX_LENGTHS.items():
        value = fields.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > limit):
            raise _Refusal(
                422,
                "Validation error, cannot save post.",
                context=f"Value in [posts.{name}] exceeds maximum length of {limit} characters.",
            )
    if "status" in fields and fields["status"] not in STATUSES:
        raise _Refusal(
            422,
            "Validation error, cannot save post.",
            context="Validation (isIn) failed for status",
        )
    tags = fields.get("tags", [])
    if not isinstance(tags, list) or not all(
        isinstance(tag, str) or (isinstance(tag, dict) and isinstance(tag.get("name"), str))
        for tag in tags
    ):
        raise _Refusal(422, "Validation error, cannot save post.", context="tags: a list of {name}")


def _slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text)
