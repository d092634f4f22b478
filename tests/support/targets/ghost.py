"""A stand-in Ghost site (Admin API, v5) for tests, on loopback.

Enough of the real protocol to be faithful, and strict about what we send. What it does was
checked against a real Ghost 5.130 on SQLite (tests/publishers/strategies/test_ghost_real.py):
- every admin request needs `Accept-Version: v<major>.<minor>` (real Ghost tolerates it
  missing; the stand-in answers 400 so a test notices). All but `GET /site/` (served without a
  key) need `Authorization: Ghost <jwt>`, checked as Ghost checks it: without the header 403
  NoPermissionError, another scheme 401 INVALID_AUTH_HEADER, not a JWT 400, an unknown `kid`
  401 UNKNOWN_ADMIN_API_KEY; then HS256 with the hex-decoded secret of the Admin API key
  `id:secret`, `aud` matching /admin/, `iat` at most 5 minutes ago (Ghost's maxAge: how long
  the token is valid for is not checked, only how old it is), `exp` not passed, else 401
  INVALID_JWT "Invalid token: <jsonwebtoken's words>". `tokens` holds the claims of every
  token accepted;
- `POST /ghost/api/admin/posts/` creates (201), `PUT .../posts/{id}/` updates and needs an
  `updated_at` (422 without); when it is not the post's current one and the update changes
  anything, 409 UPDATE_COLLISION (an update that changes nothing is taken whatever it sends, and
  leaves `updated_at` as it was). `GET .../posts/{id}/`, `GET .../posts/slug/{slug}/` (any
  status; else 404 NotFoundError), `GET .../posts/` (`limit`, `page`, `fields`, and a `filter`
  of `field:'text'` or `field:~'text'` (contains), the part of Ghost's NQL the strategy uses;
  any other filter is 400), `GET .../site/`. Bodies are `{"posts": [{...}]}`. Without
  `?source=html` a post's `html` is ignored, as Ghost ignores it. With it, what sits in an
  `<!--kg-card-begin: html-->` card is kept but for its HTML comments (Ghost drops them, and
  also writes the card's HTML out again: `<tbody>` added, blank lines between blocks), the card
  shown between newlines; HTML outside a card is kept as sent, comments dropped (Ghost turns it
  into its editor's blocks);
- Ghost's validation (422 `ValidationError`, in its words): title at most 255 characters,
  custom_excerpt, meta_title 300, meta_description 500, canonical_url 2000 (and no spaces),
  feature_image_alt 191, feature_image_caption 65535, codeinjection_foot 65535, status
  `published` | `draft` | `scheduled` | `sent`, tags a list of names (or `{"name"}`) of at most
  191 characters, not blank;
- slugs as Ghost makes them: made URL-safe, cut to 185 characters, `ghost`, `rss` and `amp`
  (kept for the site's own pages) get `-post`, and unique (`-2`, `-3`), made again whenever a
  post is sent a slug other than the one it has, counting its own as taken (so a post Ghost
  named `rss-post`, sent `rss` again, becomes `rss-post-2`); `updated_at` (and every
  time) in whole seconds, as Ghost stores them (two writes within a second share one in Ghost;
  the stand-in moves on a second so that a test can tell them apart);
- `POST .../images/upload/` takes a multipart form with `file` and `purpose` (`image`,
  `profile_image`, `icon`; else 422) and an optional `ref`; only Ghost's image types (by
  extension and content type: JPEG, PNG, GIF, WebP, SVG, ICO; else 415); the file is named as
  Ghost names it: every byte of its UTF-8 name but letters, digits, `_`, `@` and `.` becomes
  `-`, `-1`, `-2`... when the month's folder has one of that name, and a name too long for the
  file system (with the `_o` Ghost adds for the original) is 400 ENAMETOOLONG;
- `GET .../tags/` and `GET .../users/` browse the site's tags (`tags`, by id, in the order they
  were made, as Ghost lists them) and staff users (`staff`, by id, by name) as `{"tags"|"users":
  [...], "meta": {"pagination": {page, limit, pages, total, next, prev}}}`; `limit` above 100,
  or `all`, is 100 (Ghost 6), and `fields` keeps the fields named;
- tags given by name (or as `{"name"}`) are the site's tag of that name, made when there is
  none (a post's names are taken once each, whatever their case);
  `published_at` is set when a post is first published; `url` is `{url}/{slug}/` when
  published and the preview `{url}/p/{uuid}/` when not; `html` comes back only with
  `?formats=html`, as in Ghost 5.

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

import copy
import email.parser
import email.policy
import json
import os
import re
import secrets
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt

from tests.support.targets.scripted import Answer, Failure, ScriptedServer, Seen

ADMIN = "/ghost/api/admin"
STATUSES = ("published", "draft", "scheduled", "sent")
# Checked by Ghost's request schema (its words: "Validation failed for <field>.").
SCHEMA_LENGTHS = {
    "custom_excerpt": 300,
    "meta_title": 300,
    "meta_description": 500,
    "canonical_url": 2000,
    "feature_image_caption": 65535,
    "codeinjection_foot": 65535,
}
# Checked by Ghost's database validation ("Value in [<table>.<field>] exceeds ...").
COLUMN_LENGTHS = {"title": ("posts", 255), "feature_image_alt": ("post_revisions", 191)}
MAX_TAG_NAME = 191
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
    415: "UnsupportedMediaTypeError",
    422: "ValidationError",
    429: "TooManyRequestsError",
}
COLLISION = "Saving failed! Someone else is editing this post."
NOT_FOUND = "Resource not found error, cannot read post."
VERSION = "5.130"
# The largest page Ghost serves (6.0 on; `limit=all` and larger limits become this).
MAX_LIMIT = 100
TOKEN_MAX_AGE = 5 * 60  # seconds since the token's `iat`
# Slugs Ghost keeps for the site's own pages; a post asking for one gets `-post` after it.
PROTECTED_SLUGS = ("ghost", "rss", "amp")
MAX_SLUG = 185
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".gif", ".png", ".svg", ".svgz", ".ico", ".webp")
IMAGE_TYPES = (
    "image/jpeg",
    "image/png",
    "image/gif",
    "image/svg+xml",
    "image/x-icon",
    "image/vnd.microsoft.icon",
    "image/webp",
)
UPLOAD_PURPOSES = ("image", "profile_image", "icon")
MAX_FILENAME_BYTES = 255
CARD = re.compile(r"\s*<!--kg-card-begin: html-->\n?(.*?)\n?<!--kg-card-end: html-->\s*", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)


class _Refusal(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        context: str | None = None,
        code: str | None = None,
        details: Any = None,
        property: str | None = None,
    ) -> None:
        super().__init__(message)
        body = error(
            status, message, context=context, code=code, details=details, property=property
        )
        self.answer: Answer = (status, {}, body)


def error(
    status: int,
    message: str,
    *,
    context: str | None = None,
    code: str | None = None,
    details: Any = None,
    property: str | None = None,
) -> dict[str, Any]:
    return {
        "errors": [
            {
                "message": message,
                "context": context,
                "type": ERROR_TYPES.get(status, "InternalServerError"),
                "details": details,
                "property": property,
                "help": None,
                "code": code,
                "id": str(uuid.uuid4()),
                "ghostErrorCode": None,
            }
        ]
    }


def _invalid(field: str, message: str, *, cannot: str = "save post") -> _Refusal:
    """A refusal by Ghost's request schema."""
    return _Refusal(
        422,
        f"Validation error, cannot {cannot}.",
        context=f"Validation failed for {field}.",
        details=[{"dataPath": f".posts[0].{field}", "message": message}],
        property=field,
    )


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
        self._last_update = _whole_seconds(datetime.now(UTC)) - timedelta(seconds=1)
        self.tags: dict[str, dict[str, Any]] = {}
        self.staff: dict[str, dict[str, Any]] = {}
        self.add_user("Stand-in Owner")

    def add_tag(self, name: str) -> str:
        """A tag made in Ghost (its id); the existing one when the site has that name."""
        with self.lock:
            for tag in self.tags.values():
                if tag["name"] == name:
                    return str(tag["id"])
            now = _timestamp(_whole_seconds(datetime.now(UTC)))
            # Ghost's internal tags start with #, and their slugs with hash-.
            internal = name.startswith("#")
            base = ("hash-" if internal else "") + (_slugify(name) or "tag")
            tag = {
                "id": secrets.token_hex(12),
                "name": name,
                "slug": _unique(base, {tag["slug"] for tag in self.tags.values()}),
                "description": None,
                "feature_image": None,
                "visibility": "internal" if internal else "public",
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
            now = _timestamp(_whole_seconds(datetime.now(UTC)))
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
            self.posts[post["id"]] = post
            return str(post["id"])

    def edit(self, post_id: str, **fields: Any) -> None:
        """A save in Ghost's own editor: the post changes and so does its `updated_at`."""
        with self.lock:
            self._apply(self.posts[post_id], fields, source="html")

    def error_body(self, status: int, message: str, code: str | None) -> Any:
        return error(status, message, code=code)

    def failure_answer(self, failure: Failure) -> Answer:
        if failure.status == 409 and failure.message is None and failure.body is None:
            code = failure.code or "UPDATE_COLLISION"
            body = error(409, COLLISION, context=COLLISION, code=code)
            return 409, dict(failure.headers), body
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
            users.sort(key=lambda user: (user["name"], user["id"]))
            return self._list("users", users, request)
        match = re.fullmatch(r"/posts/slug/([^/]+)/", route)
        if match and method == "GET":
            found = [post for post in self.posts.values() if post["slug"] == match[1]]
            if not found:
                raise _Refusal(404, NOT_FOUND, context="Post not found.")
            return 200, {}, {"posts": [self._render(found[0], request)]}
        match = re.fullmatch(r"/posts/([^/]+)/", route)
        if match and method in ("GET", "PUT"):
            post = self.posts.get(match[1])
            if post is None:
                raise _Refusal(404, NOT_FOUND, context="Post not found.")
            if method == "GET":
                return 200, {}, {"posts": [self._render(post, request)]}
            return self._edit(request, post)
        raise _Refusal(404, "Resource not found")

    def _authenticate(self, request: Seen) -> None:
        header = request.headers.get("authorization")
        if not header:
            raise _Refusal(
                403,
                "Authorization failed",
                context="Unable to determine the authenticated user or integration. Check "
                "that cookies are being passed through if using session authentication.",
            )
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "ghost" or not token:
            raise _Refusal(
                401,
                'Authorization header format is "Authorization: Ghost [token]"',
                code="INVALID_AUTH_HEADER",
            )
        try:
            key_id = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            raise _Refusal(400, "Invalid token", code="INVALID_JWT") from None
        if not key_id:
            raise _Refusal(400, "Admin API kid missing.", code="MISSING_ADMIN_API_KID")
        if key_id != self.key_id:
            raise _Refusal(401, "Unknown Admin API Key", code="UNKNOWN_ADMIN_API_KEY")
        try:
            claims = jwt.decode(
                token,
                bytes.fromhex(self.secret),
                algorithms=["HS256"],
                options={"verify_aud": False, "verify_iat": False},
            )
        except jwt.InvalidSignatureError:
            raise _invalid_token("invalid signature") from None
        except jwt.ExpiredSignatureError:
            raise _invalid_token("jwt expired") from None
        except jwt.PyJWTError:
            raise _invalid_token("jwt malformed") from None
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if not any(isinstance(aud, str) and re.search(r"/?admin/?$", aud) for aud in audiences):
            raise _invalid_token(r"jwt audience invalid. expected: /\/?admin\/?$/")
        if not isinstance(claims.get("iat"), int | float):
            raise _invalid_token("iat required when maxAge is specified")
        if time.time() - claims["iat"] > TOKEN_MAX_AGE:
            raise _invalid_token("maxAge exceeded")
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
        found = list(self.posts.values())
        wanted = request.query.get("filter")
        if wanted is not None:
            field, contains, text = _filter(wanted)
            found = [
                post
                for post in found
                if isinstance(post.get(field), str)
                and (text in post[field] if contains else post[field] == text)
            ]
        found.sort(key=lambda post: post["created_at"], reverse=True)
        return self._list("posts", found, request, render=True)

    def _list(
        self, resource: str, items: list[dict[str, Any]], request: Seen, *, render: bool = False
    ) -> Answer:
        """A browse answer: one page in the order given, with Ghost's pagination and `fields`."""
        asked = request.query.get("limit", "15")
        try:
            limit = MAX_LIMIT if asked == "all" else min(int(asked), MAX_LIMIT)
            page = int(request.query.get("page", "1"))
        except ValueError:
            raise _Refusal(422, "Validation error", context="limit and page are numbers") from None
        if limit < 1 or page < 1:
            raise _Refusal(422, "Validation error", context="limit and page start at 1")
        pages = max(1, -(-len(items) // limit))
        pagination = {
            "page": page,
            "limit": limit,
            "pages": pages,
            "total": len(items),
            "next": page + 1 if page < pages else None,
            "prev": page - 1 if page > 1 else None,
        }
        shown = items[(page - 1) * limit : page * limit]
        if render:
            shown = [self._render(item, request) for item in shown]
        fields = request.query.get("fields")
        if fields and not render:
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
        purpose = parts.get("purpose")
        if purpose is None or purpose.get_payload(decode=True).decode() not in UPLOAD_PURPOSES:
            raise _Refusal(
                422,
                "Validation error, cannot upload image.",
                context="Validation failed for purpose.",
                property="purpose",
            )
        file = parts.get("file")
        if file is None or not file.get_filename():
            raise _Refusal(422, "Please select an image.")
        filename = str(file.get_filename())
        stem, extension = os.path.splitext(filename)
        if extension.lower() not in IMAGE_EXTENSIONS or file.get_content_type() not in IMAGE_TYPES:
            raise _Refusal(415, "Please select a valid image.")
        # As multer hands Ghost the name (each UTF-8 byte a character) and Ghost cleans it.
        stem = re.sub(r"[^\w@.]", "-", stem.encode().decode("latin-1"), flags=re.ASCII)
        folder = f"{self.url}/content/images/{datetime.now(UTC):%Y/%m}/"
        name, number = f"{stem}{extension}", 0
        while folder + name in self.images:
            number += 1
            name = f"{stem}-{number}{extension}"
        if len(f"{stem}_o{extension}".encode()) > MAX_FILENAME_BYTES:
            raise _Refusal(
                400,
                "Request not understood error, cannot upload image.",
                context="The request could not be understood.",
                code="ENAMETOOLONG",
            )
        ref = parts.get("ref")
        self.images[folder + name] = {
            "filename": filename,
            "content_type": file.get_content_type(),
            "data": file.get_payload(decode=True),
            "ref": ref.get_payload(decode=True).decode() if ref is not None else None,
        }
        return (
            201,
            {},
            {"images": [{"url": folder + name, "ref": self.images[folder + name]["ref"]}]},
        )

    def _create(self, request: Seen) -> Answer:
        fields = _post_in(request)
        _validate(fields)
        post = self._new_post()
        self._apply(post, fields, source=request.query.get("source"))
        self.posts[post["id"]] = post
        return 201, {}, {"posts": [self._render(post, request)]}

    def _new_post(self) -> dict[str, Any]:
        now = _timestamp(_whole_seconds(datetime.now(UTC)))
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
        return post

    def _edit(self, request: Seen, post: dict[str, Any]) -> Answer:
        fields = _post_in(request, cannot="edit post")
        sent = fields.get("updated_at")
        if sent is None:
            raise _Refusal(
                422,
                "Validation error, cannot edit post.",
                context="Validation failed for posts[0].",
                details=[{"message": "should have required property 'updated_at'"}],
                property="posts[0]",
            )
        try:
            stale = _parse(str(sent)) != _parse(post["updated_at"])
        except ValueError:
            raise _invalid(
                "updated_at", 'should match format "date-time"', cannot="edit post"
            ) from None
        _validate(fields)
        edited = copy.deepcopy(post)
        changed = self._apply(edited, fields, source=request.query.get("source"), dry_run=True)
        if changed and stale:
            raise _Refusal(
                409,
                COLLISION,
                context=COLLISION,
                code="UPDATE_COLLISION",
                details={
                    "changedFields": changed,
                    "clientUpdatedAt": sent,
                    "serverUpdatedAt": post["updated_at"],
                },
            )
        self._apply(post, fields, source=request.query.get("source"))
        return 200, {}, {"posts": [self._render(post, request)]}

    def _apply(
        self,
        post: dict[str, Any],
        fields: dict[str, Any],
        *,
        source: str | None,
        dry_run: bool = False,
    ) -> list[str]:
        """Writes `fields` over `post`; the names of the fields that changed. `updated_at`
        moves only when something did. A dry run makes no tag."""
        _validate(fields)
        before = copy.deepcopy(post)
        for name in (*EDITABLE, "status"):
            if name in fields:
                post[name] = fields[name]
        if "html" in fields and source == "html":
            post["html"] = _as_ghost_renders(fields["html"] or "")
        if "tags" in fields:
            names = [tag if isinstance(tag, str) else str(tag["name"]) for tag in fields["tags"]]
            once = list({name.lower(): name for name in reversed(names)}.values())[::-1]
            if dry_run:
                post["tags"] = [{"name": name} for name in once]
            else:
                post["tags"] = [self._tag(self.add_tag(name)) for name in once]
        if fields.get("slug", post["slug"]) != post["slug"] or not post["slug"]:
            slug = _slugify(fields.get("slug") or post["title"])[:MAX_SLUG] or "untitled"
            if slug in PROTECTED_SLUGS:
                slug += "-post"
            # As Ghost does, the post's own slug counts as taken: a post sent a slug other than
            # its own gets a fresh one ("rss-post" sent "rss" becomes "rss-post-2").
            post["slug"] = _unique(slug, {other["slug"] for other in self.posts.values()})
        changed = [
            "lexical" if name == "html" else name
            for name in post
            if name != "tags" and post[name] != before.get(name)
        ]
        if [tag["name"] for tag in post["tags"]] != [tag["name"] for tag in before["tags"]]:
            changed.append("tags")
        if changed and not dry_run:
            now = self._tick()
            if post["status"] == "published" and post["published_at"] is None:
                post["published_at"] = now
            post["updated_at"] = now
        return changed

    def _tag(self, tag_id: str) -> dict[str, Any]:
        """A tag as a post carries it."""
        tag = self.tags[tag_id]
        return {"id": tag["id"], "name": tag["name"], "slug": tag["slug"]}

    def _tick(self) -> str:
        """Now in whole seconds, as Ghost stores it; after the last write, so that two writes
        within a second differ here (in Ghost they would not)."""
        now = _whole_seconds(datetime.now(UTC))
        self._last_update = max(now, self._last_update + timedelta(seconds=1))
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


def _invalid_token(said: str) -> _Refusal:
    return _Refusal(401, f"Invalid token: {said}", code="INVALID_JWT")


def _filter(nql: str) -> tuple[str, bool, str]:
    """(field, contains, text) of `field:'text'` or `field:~'text'`, the NQL the strategy sends."""
    match = re.fullmatch(r"([a-z_]+):(~?)'((?:[^'\\]|\\.)*)'", nql)
    if match is None:
        raise _Refusal(
            400,
            "Request not understood error, cannot list posts.",
            context="Error parsing filter (the stand-in reads field:'text' and field:~'text')",
        )
    return match[1], match[2] == "~", re.sub(r"\\(.)", r"\1", match[3])


def _as_ghost_renders(html: str) -> str:
    """The HTML Ghost serves for a post sent as `html`: an HTML card's content without its
    comments, between newlines; other HTML without comments (Ghost converts it to its blocks)."""
    card = CARD.fullmatch(html)
    if card is None:
        return COMMENT.sub("", html)
    inner = COMMENT.sub("", card[1])
    return f"\n<!--kg-card-begin: html-->\n{inner}\n<!--kg-card-end: html-->\n"


def _post_in(request: Seen, *, cannot: str = "save post") -> dict[str, Any]:
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        raise _Refusal(400, "An unexpected error occurred, please try again.") from None
    posts = body.get("posts") if isinstance(body, dict) else None
    if not isinstance(posts, list) or len(posts) != 1 or not isinstance(posts[0], dict):
        raise _Refusal(
            422,
            f"Validation error, cannot {cannot}.",
            context="Validation failed for posts.",
            property="posts",
        )
    fields: dict[str, Any] = posts[0]
    return fields


def _validate(fields: dict[str, Any]) -> None:
    for name, limit in SCHEMA_LENGTHS.items():
        value = fields.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > limit):
            raise _invalid(name, f"should NOT be longer than {limit} characters")
    if isinstance(fields.get("canonical_url"), str) and re.search(r"\s", fields["canonical_url"]):
        raise _invalid("canonical_url", 'should match format "uri-reference"')
    if "status" in fields and fields["status"] not in STATUSES:
        raise _invalid("status", "should be equal to one of the allowed values")
    tags = fields.get("tags", [])
    if not isinstance(tags, list) or not all(
        isinstance(tag, str) or (isinstance(tag, dict) and isinstance(tag.get("name"), str))
        for tag in tags
    ):
        raise _invalid("tags", "should be array")
    names = [tag if isinstance(tag, str) else tag["name"] for tag in tags]
    if any(len(name) > MAX_TAG_NAME for name in names):
        raise _invalid("name", f"should NOT be longer than {MAX_TAG_NAME} characters")
    if any(not name.strip() for name in names):
        raise _Refusal(
            422,
            "Validation error, cannot save post.",
            context="Value in [tags.name] cannot be blank. tags.name",
        )
    for name, (table, limit) in COLUMN_LENGTHS.items():
        value = fields.get(name)
        if isinstance(value, str) and len(value) > limit:
            raise _Refusal(
                422,
                "Validation error, cannot save post.",
                context=f"Value in [{table}.{name}] exceeds maximum length of {limit} "
                f"characters. {table}.{name}",
            )


def _slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _unique(slug: str, taken: set[str]) -> str:
    candidate, suffix = slug, 2
    while candidate in taken:
        candidate, suffix = f"{slug}-{suffix}", suffix + 1
    return candidate


def _whole_seconds(moment: datetime) -> datetime:
    return moment.replace(microsecond=0)


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text)
