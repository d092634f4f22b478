"""A stand-in WordPress site (REST API v2, Application Passwords) for tests, on loopback.

Enough of the real protocol to be faithful, and strict about what we send:
- auth is HTTP Basic with the user's Application Password, accepted with the spaces WordPress
  shows it with or without them; a wrong user or password is 401 with WordPress's error body
  `{"code", "message", "data": {"status"}}`, on every route (as WordPress answers it);
- `POST /wp-json/wp/v2/posts` creates (201), `POST /wp-json/wp/v2/posts/{id}` updates,
  `GET /wp-json/wp/v2/posts/{id}` reads, `GET /wp-json/wp/v2/posts?slug=&status=&context=`
  lists (statuses other than `publish`, and `context=edit`, need a user who can edit posts;
  `status=any` is every status), `GET /wp-json/wp/v2/users/me` (401 `rest_not_logged_in`
  without auth; `roles` and `capabilities` only with `context=edit`);
- the role's capabilities are enforced: a create needs edit_posts, status `publish` needs
  publish_posts, editing a published post needs edit_published_posts; bad parameters are 400
  `rest_invalid_param`, an unknown author 400 `rest_invalid_author`, an unknown post 404
  `rest_post_invalid_id`, unknown fields are ignored;
- as WordPress does: a post that is not a draft gets a slug unique among all posts (`-2`,
  `-3`), drafts keep the one asked for; a draft's date follows its saves until it is first
  published; `modified_gmt` changes on every write;
- `GET /wp-json/wp/v2/categories` and `/tags` list the site's terms (`terms`, by id; ids shared
  by both taxonomies, as WordPress numbers terms; names kept with `&` as `&amp;`, as WordPress
  stores them), `GET /wp-json/wp/v2/users` its users: ordered by name, `per_page` (1-100) and
  `page`, `X-WP-Total` and `X-WP-TotalPages`, `_fields` kept to the top-level fields named.
  `who=authors` lists the users who can edit posts and needs edit_posts itself (403
  `rest_forbidden_who`); without it a user who cannot list users (no one here: the
  administrator's `list_users` is not in these roles) sees only users with published posts;
  `context=edit` on users needs list_users (403 `rest_forbidden_context`);
- posts answer in WordPress's shape: id, date(_gmt), modified(_gmt) as `2024-05-01T10:00:00`,
  slug, status, type, link (`{url}/{slug}/` when published, `{url}/?p={id}` otherwise),
  title/content/excerpt as `{rendered}` plus `raw` in the edit context (which every create and
  update answers in), author, categories (1, Uncategorized, by default), tags.

`posts` holds the posts by id, in the fields of that shape. Failures are scripted as on every
stand-in (tests/support/targets/scripted.py); their default body is WordPress's error shape.

    with WordPressServer(role="author") as wp:
        credentials = {"username": wp.username, "applicationPassword": wp.application_password}
        wp.fail(Failure(500, after=True), method="POST", path=wp.POSTS)  # created, answer lost
        ...
        assert [post["status"] for post in wp.posts.values()] == ["publish"]
        wp.add_post(title="Written by hand", slug="hello")  # someone else's post
        wp.add_term("category", "Garden & Home")            # listed as "Garden &amp; Home"
        wp.add_user("Sam Author", role="author")
"""

from __future__ import annotations

import base64
import html
import json
import re
import urllib.parse
from datetime import UTC, datetime
from typing import Any

from tests.support.targets.scripted import Answer, ScriptedServer, Seen

API = "/wp-json/wp/v2"
STATUSES = ("publish", "future", "draft", "pending", "private")
# WordPress's default roles, with the capabilities that matter to posts.
ROLES: dict[str, frozenset[str]] = {
    "editor": frozenset(
        {
            "read",
            "edit_posts",
            "publish_posts",
            "edit_published_posts",
            "edit_others_posts",
            "unfiltered_html",
            "upload_files",
        }
    ),
    "author": frozenset(
        {"read", "edit_posts", "publish_posts", "edit_published_posts", "upload_files"}
    ),
    "contributor": frozenset({"read", "edit_posts"}),
    "subscriber": frozenset({"read"}),
}
UNCATEGORIZED = 1


class _Refusal(Exception):
    def __init__(self, status: int, code: str, message: str, **data: Any) -> None:
        super().__init__(message)
        self.answer: Answer = (status, {}, error(status, message, code, **data))


def error(status: int, message: str, code: str | None, **data: Any) -> dict[str, Any]:
    return {
        "code": code or "internal_server_error",
        "message": message,
        "data": {"status": status} | data,
    }


class WordPressServer(ScriptedServer):
    POSTS = f"{API}/posts"
    ME = f"{API}/users/me"
    CATEGORIES = f"{API}/categories"
    TAGS = f"{API}/tags"
    USERS = f"{API}/users"
    MEDIA = f"{API}/media"

    def __init__(
        self,
        *,
        username: str = "eda",
        application_password: str = "abcd EFGH 1234 ijkl MNOP 5678",
        name: str = "Eda Editor",
        role: str = "editor",
    ) -> None:
        super().__init__()
        self.username = username
        self.application_password = application_password
        self.name = name
        self.role = role
        self.user_id = 1
        self.posts: dict[int, dict[str, Any]] = {}
        self._next_id = 1
        # The media library: {id, filename, mime_type, data, alt_text, caption, source_url}.
        self.media: dict[int, dict[str, Any]] = {}
        # Terms by id: {id, taxonomy, name (as stored: `&amp;`), slug, description, parent}.
        self.terms: dict[int, dict[str, Any]] = {}
        self._next_term_id = UNCATEGORIZED
        self.add_term("category", "Uncategorized")
        # Users by id: {id, name, slug, role}; the connection's user is the first.
        self.users: dict[int, dict[str, Any]] = {
            self.user_id: {"id": self.user_id, "name": name, "slug": username, "role": role}
        }

    def add_term(self, taxonomy: str, name: str, *, parent: int = 0) -> int:
        """A category (`category`) or tag (`post_tag`) made in WordPress; its id."""
        with self.lock:
            term_id = self._next_term_id
            self._next_term_id += 1
            self.terms[term_id] = {
                "id": term_id,
                "taxonomy": taxonomy,
                # WordPress keeps a term's name HTML-escaped (sanitize_term_field on save).
                "name": html.escape(name, quote=False),
                "slug": _slugify(name),
                "description": "",
                "parent": parent,
            }
            return term_id

    def add_user(self, name: str, *, role: str = "author") -> int:
        """Another user of the site; its id."""
        with self.lock:
            user_id = max(self.users) + 1
            self.users[user_id] = {
                "id": user_id,
                "name": name,
                "slug": _slugify(name),
                "role": role,
            }
            return user_id

    def add_post(self, *, title: str, slug: str, content: str = "", status: str = "publish") -> int:
        """A post made in WordPress itself (by someone else); its id."""
        with self.lock:
            post = self._new_post()
            post["author"] = self.user_id + 1
            self._apply(post, {"title": title, "slug": slug, "content": content, "status": status})
            return int(post["id"])

    def error_body(self, status: int, message: str, code: str | None) -> Any:
        return error(status, message, code)

    def handle(self, request: Seen) -> Answer:
        try:
            return self._route(request)
        except _Refusal as refusal:
            return refusal.answer

    def _route(self, request: Seen) -> Answer:
        logged_in = self._authenticate(request)
        path, method = request.path.rstrip("/"), request.method
        if path == self.ME and method == "GET":
            return self._me(logged_in, request)
        if path == self.POSTS and method == "GET":
            return self._list(logged_in, request)
        if path == self.POSTS and method == "POST":
            return self._create(logged_in, request)
        if path == self.CATEGORIES and method == "GET":
            return self._terms(request, "category")
        if path == self.TAGS and method == "GET":
            return self._terms(request, "post_tag")
        if path == self.USERS and method == "GET":
            return self._users(logged_in, request)
        if path == self.MEDIA and method == "GET":
            return self._media_list(request)
        if path == self.MEDIA and method == "POST":
            return self._upload(logged_in, request)
        match = re.fullmatch(rf"{self.MEDIA}/(\d+)", path)
        if match and method == "POST":
            return self._media_update(logged_in, request, int(match[1]))
        match = re.fullmatch(rf"{self.POSTS}/(\d+)", path)
        if match and method in ("GET", "POST", "PUT", "PATCH"):
            post = self.posts.get(int(match[1]))
            if post is None:
                raise _Refusal(404, "rest_post_invalid_id", "Invalid post ID.")
            if method == "GET":
                return self._read(logged_in, request, post)
            return self._update(logged_in, request, post)
        raise _Refusal(
            404, "rest_no_route", "No route was found matching the URL and request method."
        )

    # Auth and rights.

    def _authenticate(self, request: Seen) -> bool:
        """Whether the request is our user's; no credentials is an anonymous visitor."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            username, _, password = base64.b64decode(token, validate=True).decode().partition(":")
        except ValueError:
            username, password = "", ""
        if username != self.username:
            raise _Refusal(
                401, "invalid_username", "Unknown username. Check again or try your email address."
            )
        # WordPress keeps only the letters and digits: the spaces it shows the password with
        # are optional.
        if _alphanumeric(password) != _alphanumeric(self.application_password):
            raise _Refusal(
                401,
                "incorrect_password",
                "The provided password is an invalid application password.",
            )
        return True

    def _can(self, logged_in: bool, capability: str) -> bool:
        return logged_in and capability in ROLES[self.role]

    def _require(self, logged_in: bool, capability: str, code: str, message: str) -> None:
        if not self._can(logged_in, capability):
            # WordPress's rest_authorization_required_code(): 401 to a visitor, else 403.
            raise _Refusal(403 if logged_in else 401, code, message)

    # Routes.

    def _me(self, logged_in: bool, request: Seen) -> Answer:
        if not logged_in:
            raise _Refusal(401, "rest_not_logged_in", "You are not currently logged in.")
        user: dict[str, Any] = {
            "id": self.user_id,
            "name": self.name,
            "url": "",
            "description": "",
            "link": f"{self.url}/author/{self.username}/",
            "slug": self.username,
            "avatar_urls": {},
            "meta": [],
        }
        if request.query.get("context") == "edit":
            capabilities = dict.fromkeys(sorted(ROLES[self.role]), True)
            user |= {
                "username": self.username,
                "email": f"{self.username}@example.test",
                "roles": [self.role],
                "capabilities": capabilities | {self.role: True},
                "extra_capabilities": {self.role: True},
            }
        return 200, {}, user

    def _list(self, logged_in: bool, request: Seen) -> Answer:
        query = request.query
        edit = self._edit_context(logged_in, request)
        statuses = set(query.get("status", "publish").split(","))
        unknown = statuses - {*STATUSES, "any"}
        if unknown:
            raise _Refusal(
                400,
                "rest_invalid_param",
                "Invalid parameter(s): status",
                params={"status": f"status[0] is not one of {', '.join(STATUSES)}, any."},
            )
        if statuses != {"publish"}:
            self._require(logged_in, "edit_posts", "rest_forbidden_status", "Status is forbidden.")
        slugs = set(query["slug"].split(",")) if "slug" in query else None
        per_page = int(query.get("per_page", "10"))
        if not 1 <= per_page <= 100:
            raise _Refusal(
                400,
                "rest_invalid_param",
                "Invalid parameter(s): per_page",
                params={"per_page": "per_page must be between 1 (inclusive) and 100 (inclusive)"},
            )
        found = [
            post
            for post in self.posts.values()
            if ("any" in statuses or post["status"] in statuses)
            and (slugs is None or post["slug"] in slugs)
        ]
        found.sort(key=lambda post: (post["date_gmt"], post["id"]), reverse=True)
        headers = {
            "x-wp-total": str(len(found)),
            "x-wp-totalpages": str(-(-len(found) // per_page)),
        }
        return 200, headers, [self._render(post, edit=edit) for post in found[:per_page]]

    def _terms(self, request: Seen, taxonomy: str) -> Answer:
        """Anyone may list terms (the site's visitors too)."""
        found = [term for term in self.terms.values() if term["taxonomy"] == taxonomy]
        base = "category" if taxonomy == "category" else "tag"
        rendered = []
        for term in found:
            count = sum(
                1
                for post in self.posts.values()
                if post["status"] == "publish"
                and term["id"] in post["categories" if taxonomy == "category" else "tags"]
            )
            item = {
                "id": term["id"],
                "count": count,
                "description": term["description"],
                "link": f"{self.url}/{base}/{term['slug']}/",
                "name": term["name"],
                "slug": term["slug"],
                "taxonomy": taxonomy,
                "meta": [],
            }
            if taxonomy == "category":
                item["parent"] = term["parent"]
            rendered.append(item)
        return self._page(request, rendered)

    def _users(self, logged_in: bool, request: Seen) -> Answer:
        query = request.query
        if query.get("context") == "edit":
            self._require(
                logged_in,
                "list_users",
                "rest_forbidden_context",
                "Sorry, you are not allowed to list users.",
            )
        if query.get("who") == "authors":
            self._require(
                logged_in,
                "edit_posts",
                "rest_forbidden_who",
                "Sorry, you are not allowed to query users by this parameter.",
            )
            found = [user for user in self.users.values() if "edit_posts" in ROLES[user["role"]]]
        elif self._can(logged_in, "list_users"):
            found = list(self.users.values())
        else:
            # WordPress's has_published_posts: a stranger sees only the site's bylines.
            bylines = {
                post["author"] for post in self.posts.values() if post["status"] == "publish"
            }
            found = [user for user in self.users.values() if user["id"] in bylines]
        rendered = [
            {
                "id": user["id"],
                "name": user["name"],
                "url": "",
                "description": "",
                "link": f"{self.url}/author/{user['slug']}/",
                "slug": user["slug"],
                "avatar_urls": {},
                "meta": [],
            }
            for user in found
        ]
        return self._page(request, rendered)

    def _page(self, request: Seen, items: list[dict[str, Any]]) -> Answer:
        """One page of a list by name, with WordPress's paging headers and `_fields`."""
        query = request.query
        try:
            per_page, page = int(query.get("per_page", "10")), int(query.get("page", "1"))
        except ValueError:
            raise _Refusal(
                400, "rest_invalid_param", "Invalid parameter(s): per_page, page"
            ) from None
        if not 1 <= per_page <= 100:
            raise _Refusal(
                400,
                "rest_invalid_param",
                "Invalid parameter(s): per_page",
                params={"per_page": "per_page must be between 1 (inclusive) and 100 (inclusive)"},
            )
        if page < 1:
            raise _Refusal(
                400,
                "rest_invalid_param",
                "Invalid parameter(s): page",
                params={"page": "page must be greater than or equal to 1"},
            )
        items = sorted(items, key=lambda item: (item["name"], item["id"]))
        headers = {
            "x-wp-total": str(len(items)),
            "x-wp-totalpages": str(-(-len(items) // per_page)),
        }
        shown = items[(page - 1) * per_page : page * per_page]
        if "_fields" in query:
            wanted = set(query["_fields"].split(","))
            shown = [
                {name: value for name, value in item.items() if name in wanted} for item in shown
            ]
        return 200, headers, shown

    def _read(self, logged_in: bool, request: Seen, post: dict[str, Any]) -> Answer:
        edit = self._edit_context(logged_in, request)
        if post["status"] != "publish":
            self._require(
                logged_in, "edit_posts", "rest_forbidden", "Sorry, you are not allowed to do that."
            )
        return 200, {}, self._render(post, edit=edit)

    def _create(self, logged_in: bool, request: Seen) -> Answer:
        self._require(
            logged_in,
            "edit_posts",
            "rest_cannot_create",
            "Sorry, you are not allowed to create posts as this user.",
        )
        fields = _fields(request)
        self._check(logged_in, "draft", fields)
        post = self._new_post()
        self._apply(post, fields)
        location = {"location": f"{self.url}{self.POSTS}/{post['id']}"}
        return 201, location, self._render(post, edit=True)

    def _update(self, logged_in: bool, request: Seen, post: dict[str, Any]) -> Answer:
        self._require(
            logged_in,
            "edit_posts",
            "rest_cannot_edit",
            "Sorry, you are not allowed to edit this post.",
        )
        if post["status"] == "publish":
            self._require(
                logged_in,
                "edit_published_posts",
                "rest_cannot_edit",
                "Sorry, you are not allowed to edit this post.",
            )
        fields = _fields(request)
        self._check(logged_in, post["status"], fields)
        self._apply(post, fields)
        return 200, {}, self._render(post, edit=True)

    def _edit_context(self, logged_in: bool, request: Seen) -> bool:
        if request.query.get("context", "view") != "edit":
            return False
        self._require(
            logged_in,
            "edit_posts",
            "rest_forbidden_context",
            "Sorry, you are not allowed to edit posts in this post type.",
        )
        return True

    # The media library.

    def _upload(self, logged_in: bool, request: Seen) -> Answer:
        """A file sent as the body, named by Content-Disposition (WordPress's raw upload)."""
        self._require(
            logged_in,
            "upload_files",
            "rest_cannot_create",
            "Sorry, you are not allowed to upload media on this site.",
        )
        found = re.search(r'filename="?([^";]+)"?', request.headers.get("content-disposition", ""))
        if not found or not request.body:
            raise _Refusal(400, "rest_upload_no_data", "No data supplied.")
        filename = urllib.parse.unquote(found[1])
        media_id = self._next_id
        self._next_id += 1
        self.media[media_id] = {
            "id": media_id,
            "filename": filename,
            "mime_type": request.headers.get("content-type", ""),
            "data": request.body,
            "alt_text": "",
            "caption": "",
            # WordPress names the attachment (its title) after the file, without the extension.
            "title": filename.rsplit(".", 1)[0],
            "source_url": f"{self.url}/wp-content/uploads/2026/11/{filename}",
        }
        return 201, {}, self._media_item(self.media[media_id])

    def _media_update(self, logged_in: bool, request: Seen, media_id: int) -> Answer:
        self._require(
            logged_in, "upload_files", "rest_cannot_edit", "Sorry, you cannot edit this item."
        )
        item = self.media.get(media_id)
        if item is None:
            raise _Refusal(404, "rest_post_invalid_id", "Invalid post ID.")
        fields = _fields(request)
        for name in ("alt_text", "caption"):
            if name in fields:
                item[name] = fields[name]
        return 200, {}, self._media_item(item)

    def _media_list(self, request: Seen) -> Answer:
        search = request.query.get("search", "").lower()
        found = [item for item in self.media.values() if search in item["title"].lower()]
        return 200, {}, [self._media_item(item) for item in found]

    def _media_item(self, item: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": item["id"],
            "type": "attachment",
            "media_type": "image",
            "mime_type": item["mime_type"],
            "title": {"rendered": item["title"], "raw": item["title"]},
            "alt_text": item["alt_text"],
            "caption": {"rendered": item["caption"], "raw": item["caption"]},
            "source_url": item["source_url"],
        }

    # Posts.

    def _new_post(self) -> dict[str, Any]:
        post: dict[str, Any] = {
            "id": self._next_id,
            "status": "draft",
            "slug": "",
            "title": "",
            "content": "",
            "excerpt": "",
            "author": self.user_id,
            "categories": [UNCATEGORIZED],
            "tags": [],
            "date_gmt": _now(),
            "modified_gmt": _now(),
            # A draft's date follows its saves until it is published (WordPress's "floating" date).
            "floating": True,
        }
        self._next_id += 1
        self.posts[post["id"]] = post
        return post

    def _check(self, logged_in: bool, current_status: str, fields: dict[str, Any]) -> None:
        status = fields.get("status", current_status)
        if status in ("publish", "future", "private") and status != current_status:
            self._require(
                logged_in,
                "publish_posts",
                "rest_cannot_publish",
                "Sorry, you are not allowed to publish posts in this post type.",
            )
        if "author" in fields and fields["author"] != self.user_id:
            raise _Refusal(400, "rest_invalid_author", "Invalid author ID.")

    def _apply(self, post: dict[str, Any], fields: dict[str, Any]) -> None:
        for name in ("title", "content", "excerpt"):
            if name in fields:
                value = fields[name]
                post[name] = value["raw"] if isinstance(value, dict) else value
        for name in ("status", "author", "categories", "tags", "featured_media"):
            if name in fields:
                post[name] = fields[name]
        if post.get("featured_media") and post["featured_media"] not in self.media:
            raise _Refusal(400, "rest_invalid_featured_media", "Invalid featured media ID.")
        if "slug" in fields:
            post["slug"] = _slugify(fields["slug"])
        if post["status"] not in ("draft", "pending"):
            post["slug"] = self._unique_slug(post["slug"] or _slugify(post["title"]), post["id"])
        now = _now()
        if post["floating"]:
            post["date_gmt"] = now
            post["floating"] = post["status"] in ("draft", "pending")
        post["modified_gmt"] = now

    def _unique_slug(self, slug: str, post_id: int) -> str:
        taken = {post["slug"] for post in self.posts.values() if post["id"] != post_id}
        candidate, suffix = slug, 2
        while candidate in taken:
            candidate, suffix = f"{slug}-{suffix}", suffix + 1
        return candidate

    def _render(self, post: dict[str, Any], *, edit: bool) -> dict[str, Any]:
        def text(raw: str, rendered: str) -> dict[str, Any]:
            return {"rendered": rendered} | ({"raw": raw} if edit else {})

        published = post["status"] == "publish"
        link = f"{self.url}/{post['slug']}/" if published else f"{self.url}/?p={post['id']}"
        excerpt = post["excerpt"]
        return {
            "id": post["id"],
            "date": post["date_gmt"],  # the site's timezone is UTC
            "date_gmt": post["date_gmt"],
            "guid": text(f"{self.url}/?p={post['id']}", f"{self.url}/?p={post['id']}"),
            "modified": post["modified_gmt"],
            "modified_gmt": post["modified_gmt"],
            "slug": post["slug"],
            "status": post["status"],
            "type": "post",
            "link": link,
            "title": text(post["title"], post["title"]),
            "content": text(post["content"], post["content"]) | {"protected": False},
            "excerpt": text(excerpt, f"<p>{excerpt}</p>\n" if excerpt else "")
            | {"protected": False},
            "author": post["author"],
            "featured_media": post.get("featured_media", 0),
            "comment_status": "open",
            "ping_status": "open",
            "sticky": False,
            "template": "",
            "format": "standard",
            "meta": [],
            "categories": list(post["categories"]),
            "tags": list(post["tags"]),
        }


def _fields(request: Seen) -> dict[str, Any]:
    """The request's JSON fields, checked as WordPress checks their types."""
    try:
        fields = json.loads(request.body or b"{}")
    except ValueError:
        raise _Refusal(400, "rest_invalid_json", "Invalid JSON body passed.") from None
    if not isinstance(fields, dict):
        raise _Refusal(400, "rest_invalid_json", "Invalid JSON body passed.")
    invalid: dict[str, str] = {}
    for name in ("title", "content", "excerpt"):
        value = fields.get(name, "")
        if not (
            isinstance(value, str)
            or (isinstance(value, dict) and isinstance(value.get("raw"), str))
        ):
            invalid[name] = f"{name} is not of type object,string."
    if not isinstance(fields.get("slug", ""), str):
        invalid["slug"] = "slug is not of type string."
    if fields.get("status", "draft") not in STATUSES:
        invalid["status"] = f"status is not one of {', '.join(STATUSES)}."
    for name in ("categories", "tags"):
        value = fields.get(name, [])
        if not isinstance(value, list) or not all(_is_int(item) for item in value):
            invalid[name] = f"{name}[0] is not of type integer."
    if "author" in fields and not _is_int(fields["author"]):
        invalid["author"] = "author is not of type integer."
    if invalid:
        raise _Refusal(
            400, "rest_invalid_param", f"Invalid parameter(s): {', '.join(invalid)}", params=invalid
        )
    return fields


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _alphanumeric(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", text)


def _slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
