"""A stand-in WordPress site (REST API v2, Application Passwords) for tests, on loopback.

Enough of the real protocol to be faithful, and strict about what we send; where it was checked
against a real WordPress 6.1 (tests/publishers/strategies/test_real_wordpress.py), it answers
as that did:
- the home page (`GET`/`HEAD /`) announces the REST API root in `Link: <root>;
  rel="https://api.w.org/"`: `/wp-json/` with pretty permalinks (the default here),
  `/index.php?rest_route=/` with `permalinks="plain"`, where `/wp-json/...` is the web server's
  404 page; `?rest_route=/wp/v2/...` reaches every route either way (the home is the host it
  is asked by, where a real site's is its `home` option). `GET /wp-json/` is the
  REST index (`authentication` lists `application-passwords` only where they work);
- auth is HTTP Basic with the user's Application Password, accepted with the spaces WordPress
  shows it with or without them. A wrong user or password is not refused: the request is a
  visitor's, as WordPress 6.1 answers the REST API (it checks the password only after the
  request was taken for anonymous). With `application_passwords=False` (a site on plain http
  without WP_ENVIRONMENT_TYPE local) the credentials are ignored the same way;
- `POST /wp-json/wp/v2/posts` creates (201), `POST /wp-json/wp/v2/posts/{id}` updates,
  `GET /wp-json/wp/v2/posts/{id}` reads, `DELETE /wp-json/wp/v2/posts/{id}` moves to the trash
  (status `trash`, slug `<slug>__trashed`; `force=true` deletes; an update with a status brings
  a trashed post back, slug and all), `GET /wp-json/wp/v2/posts?slug=&search=&status=&context=`
  lists (`search` matches every word in the title, excerpt or content; statuses other than
  `publish`, and `context=edit`, need a user who can edit posts: a visitor asking for them gets
  WordPress's 400 `rest_invalid_param` naming `status`; `status=any` is every status but the
  trash), `GET /wp-json/wp/v2/users/me` (401 `rest_not_logged_in` to a visitor; `roles` and
  `capabilities` only with `context=edit`);
- the role's capabilities are enforced: a create needs edit_posts, status `publish` needs
  publish_posts, editing a published post needs edit_published_posts, the trash delete_posts;
  bad parameters are 400 `rest_invalid_param`, an unknown author 400 `rest_invalid_author`, an
  unknown post 404 `rest_post_invalid_id`, unknown fields are ignored;
- as WordPress does: a post that is not a draft gets a slug unique among all posts (`-2`,
  `-3`), drafts keep the one asked for; a draft's date follows its saves until it is first
  published; `modified_gmt` changes on every write; `rendered` titles, contents and excerpts
  go through (a part of) wptexturize: curly quotes, dashes, ellipses;
- `GET /wp-json/wp/v2/categories` and `/tags` list the site's terms (`terms`, by id; ids shared
  by both taxonomies, as WordPress numbers terms; names kept with `&` as `&amp;`, as WordPress
  stores them), `GET /wp-json/wp/v2/users` its users: ordered by name, `per_page` (1-100) and
  `page`, `X-WP-Total` and `X-WP-TotalPages`, `_fields` kept to the top-level fields named.
  `who=authors` lists the users who can edit posts and needs edit_posts itself (403
  `rest_forbidden_who`); without it a user who cannot list users (no one here: the
  administrator's `list_users` is not in these roles) sees only users with published posts;
  `context=edit` on users needs list_users (403 `rest_forbidden_context`);
- the media library: `POST /wp-json/wp/v2/media` takes the file as the body, named by
  `Content-Disposition` as WordPress reads it (the name as sent, through sanitize_file_name:
  `%` and other special characters dropped, spaces made `-`, never percent-decoded), with
  `slug`, `alt_text`, `caption` and `title` from the query; 201 with a `Location`; the title is
  the file's name without its extension, the slug the one asked for or the title's, unique;
  `GET .../media?slug=&search=` lists;
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
        wp.trash(post_id)                                   # moved to the trash in WordPress
        wp.add_term("category", "Garden & Home")            # listed as "Garden &amp; Home"
        wp.add_user("Sam Author", role="author")
"""

from __future__ import annotations

import base64
import html
import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from tests.support.targets.scripted import Answer, ScriptedServer, Seen

API = "/wp-json/wp/v2"
STATUSES = ("publish", "future", "draft", "pending", "private")
# What `status` may ask for: `any` is every status of STATUSES, never the trash.
LISTED = (*STATUSES, "trash")
API_REL = "https://api.w.org/"
TRASHED = "__trashed"
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
            "delete_posts",
            "delete_published_posts",
        }
    ),
    "author": frozenset(
        {
            "read",
            "edit_posts",
            "publish_posts",
            "edit_published_posts",
            "upload_files",
            "delete_posts",
            "delete_published_posts",
        }
    ),
    "contributor": frozenset({"read", "edit_posts", "delete_posts"}),
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
        application_passwords: bool = True,
        permalinks: str = "pretty",
    ) -> None:
        super().__init__()
        # The home page is asked with HEAD: serve it as GET (headers only).
        handler: Any = self.httpd.RequestHandlerClass
        handler.do_HEAD = handler.do_GET
        # False: as on a site over plain http without WP_ENVIRONMENT_TYPE local.
        self.application_passwords = application_passwords
        self.permalinks = permalinks
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

    def trash(self, post_id: int) -> None:
        """The post moved to the trash in WordPress (its "Move to Trash")."""
        with self.lock:
            _trash(self.posts[post_id])

    def api_root(self, home: str) -> str:
        """The REST API root the home page announces, for a site at `home`."""
        if self.permalinks == "plain":
            return f"{home}/index.php?rest_route=/"
        return f"{home}/wp-json/"

    def error_body(self, status: int, message: str, code: str | None) -> Any:
        return error(status, message, code)

    def handle(self, request: Seen) -> Answer:
        try:
            return self._route(request)
        except _Refusal as refusal:
            return refusal.answer

    def _route(self, request: Seen) -> Answer:
        if request.path in ("/", "/index.php") and "rest_route" in request.query:
            # `?rest_route=/wp/v2/posts` is `/wp-json/wp/v2/posts`, whatever the permalinks.
            query = {k: v for k, v in request.query.items() if k != "rest_route"}
            path = "/wp-json" + request.query["rest_route"]
            request = replace(request, path=path, query=query)
        elif request.path in ("/", "/index.php"):
            return self._home_page(request)
        elif self.permalinks == "plain" and request.path.startswith("/wp-json"):
            # No rewrite rules: the web server finds no such file.
            return 404, {"content-type": "text/html"}, b"<h1>Not Found</h1>"
        logged_in = self._authenticate(request)
        path, method = request.path.rstrip("/"), request.method
        if path == "/wp-json" and method == "GET":
            return self._index(request)
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
        if match and method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            post = self.posts.get(int(match[1]))
            if post is None:
                raise _Refusal(404, "rest_post_invalid_id", "Invalid post ID.")
            if method == "GET":
                return self._read(logged_in, request, post)
            if method == "DELETE":
                return self._delete(logged_in, request, post)
            return self._update(logged_in, request, post)
        raise _Refusal(
            404, "rest_no_route", "No route was found matching the URL and request method."
        )

    # Auth and rights.

    def _authenticate(self, request: Seen) -> bool:
        """Whether the request is our user's. Anything else is a visitor's: no credentials,
        a wrong user or password (WordPress 6.1 does not refuse them to the REST API), or any
        credentials where Application Passwords are off."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic" or not self.application_passwords:
            return False
        try:
            username, _, password = base64.b64decode(token, validate=True).decode().partition(":")
        except ValueError:
            return False
        # WordPress keeps only the letters and digits: the spaces it shows the password with
        # are optional.
        return username == self.username and _alphanumeric(password) == _alphanumeric(
            self.application_password
        )

    def _can(self, logged_in: bool, capability: str) -> bool:
        return logged_in and capability in ROLES[self.role]

    def _require(self, logged_in: bool, capability: str, code: str, message: str) -> None:
        if not self._can(logged_in, capability):
            # WordPress's rest_authorization_required_code(): 401 to a visitor, else 403.
            raise _Refusal(403 if logged_in else 401, code, message)

    # Routes.

    def _home_page(self, request: Seen) -> Answer:
        # The site's home is the host it was asked by (a real site's is its `home` option).
        home = f"http://{request.headers.get('host') or self.url.removeprefix('http://')}"
        link = f'<{self.api_root(home)}>; rel="{API_REL}"'
        page = b"<!doctype html><title>A WordPress site</title><p>Hello.</p>"
        return 200, {"content-type": "text/html; charset=UTF-8", "link": link}, page

    def _index(self, request: Seen) -> Answer:
        ways: Any = []  # WordPress sends an empty list, not an object, when there are none
        if self.application_passwords:
            authorize = f"{self.url}/wp-admin/authorize-application.php"
            ways = {"application-passwords": {"endpoints": {"authorization": authorize}}}
        index = {
            "name": "A WordPress site",
            "description": "",
            "url": self.url,
            "home": self.url,
            "namespaces": ["oembed/1.0", "wp/v2", "wp-site-health/v1"],
            "authentication": ways,
            "routes": {},
        }
        if "_fields" in request.query:
            wanted = set(request.query["_fields"].split(","))
            index = {name: value for name, value in index.items() if name in wanted}
        return 200, {}, index

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
        statuses = set(query.get("status", "publish").split(","))
        unknown = statuses - {*LISTED, "any"}
        if unknown:
            raise _Refusal(
                400,
                "rest_invalid_param",
                "Invalid parameter(s): status",
                params={"status": f"status[0] is not one of {', '.join(LISTED)}, any."},
            )
        if statuses != {"publish"} and not self._can(logged_in, "edit_posts"):
            # The parameter is checked before the route's permission: its refusal is a bad
            # parameter, the reason inside (401 to a visitor, else 403).
            status = 403 if logged_in else 401
            raise _Refusal(
                400,
                "rest_invalid_param",
                "Invalid parameter(s): status",
                params={"status": "Status is forbidden."},
                details={
                    "status": {
                        "code": "rest_forbidden_status",
                        "message": "Status is forbidden.",
                        "data": {"status": status},
                    }
                },
            )
        edit = self._edit_context(logged_in, request)
        terms = _search_terms(query.get("search", ""))
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
            if (post["status"] in statuses or ("any" in statuses and post["status"] in STATUSES))
            and (slugs is None or post["slug"] in slugs)
            and all(
                any(term in post[field].lower() for field in ("title", "excerpt", "content"))
                for term in terms
            )
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
        return 200, {}, _only_fields(request, self._render(post, edit=edit))

    def _delete(self, logged_in: bool, request: Seen, post: dict[str, Any]) -> Answer:
        self._require(
            logged_in,
            "delete_posts",
            "rest_cannot_delete",
            "Sorry, you are not allowed to delete this post.",
        )
        if request.query.get("force") in ("true", "1"):
            del self.posts[post["id"]]
            return 200, {}, {"deleted": True, "previous": self._render(post, edit=True)}
        if post["status"] == "trash":
            raise _Refusal(410, "rest_already_trashed", "The post has already been deleted.")
        _trash(post)
        return 200, {}, self._render(post, edit=True)

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
        if post["status"] == "trash" and fields.get("status", "trash") != "trash":
            # An update with another status takes it out of the trash, its slug restored.
            post["slug"] = post["slug"].removesuffix(TRASHED)
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
        """A file sent as the body, named by Content-Disposition (WordPress's raw upload), its
        other fields from the query."""
        self._require(
            logged_in,
            "upload_files",
            "rest_cannot_create",
            "Sorry, you are not allowed to upload media on this site.",
        )
        found = re.search(r'filename="?([^";]+)"?', request.headers.get("content-disposition", ""))
        if not found or not request.body:
            raise _Refusal(400, "rest_upload_no_data", "No data supplied.")
        taken = {item["filename"] for item in self.media.values()}
        filename = _unique_filename(_sanitize_file_name(found[1]), taken)
        query = request.query
        # WordPress names the attachment (its title) after the file, without the extension.
        title = query.get("title") or filename.rsplit(".", 1)[0]
        media_id = self._next_id
        self._next_id += 1
        self.media[media_id] = {
            "id": media_id,
            "filename": filename,
            "mime_type": request.headers.get("content-type", ""),
            "data": request.body,
            "alt_text": query.get("alt_text", ""),
            "caption": query.get("caption", ""),
            "title": title,
            "slug": self._unique_slug(_slugify(query.get("slug") or title), media_id),
            "source_url": f"{self.url}/wp-content/uploads/2026/11/{filename}",
        }
        location = {"location": f"{self.url}{self.MEDIA}/{media_id}"}
        return 201, location, self._media_item(self.media[media_id])

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
        slugs = set(request.query["slug"].split(",")) if "slug" in request.query else None
        found = [
            item
            for item in self.media.values()
            if search in item["title"].lower() and (slugs is None or item["slug"] in slugs)
        ]
        return 200, {}, [_only_fields(request, self._media_item(item)) for item in found]

    def _media_item(self, item: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": item["id"],
            "type": "attachment",
            "media_type": "image",
            "mime_type": item["mime_type"],
            "slug": item["slug"],
            "title": {"rendered": _texturize(item["title"]), "raw": item["title"]},
            "alt_text": item["alt_text"],
            "caption": {
                "rendered": f"<p>{_texturize(item['caption'])}</p>\n" if item["caption"] else "",
                "raw": item["caption"],
            },
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
        """`slug`, or with `-2`, `-3`... when a post or media item (but `post_id`) holds it."""
        items = (*self.posts.values(), *self.media.values())
        taken = {item["slug"] for item in items if item["id"] != post_id}
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
            "title": text(post["title"], _texturize(post["title"])),
            "content": text(post["content"], _texturize(post["content"])) | {"protected": False},
            "excerpt": text(excerpt, f"<p>{_texturize(excerpt)}</p>\n" if excerpt else "")
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


def _trash(post: dict[str, Any]) -> None:
    post["status"] = "trash"
    post["slug"] = post["slug"] + TRASHED
    post["modified_gmt"] = _now()


def _only_fields(request: Seen, item: dict[str, Any]) -> dict[str, Any]:
    """`item` with only the top-level fields `_fields` names, when it names some."""
    if "_fields" not in request.query:
        return item
    wanted = set(request.query["_fields"].split(","))
    return {name: value for name, value in item.items() if name in wanted}


def _search_terms(search: str) -> list[str]:
    """WordPress's search words: split at spaces, commas and `+`, a quoted phrase kept whole."""
    terms = re.findall(r'"[^"]*"|[^\s",+]+', search.lower())
    return [term.strip('"') for term in terms if term.strip('"')]


def _texturize(text: str) -> str:
    """A part of WordPress's wptexturize, on the text between tags: curly quotes, dashes and
    ellipses, as `rendered` fields show them."""
    parts = re.split(r"(<[^>]*>)", text)
    for index, part in enumerate(parts):
        if part.startswith("<"):
            continue
        part = part.replace("---", "&#8212;").replace(" -- ", " &#8212; ")
        part = part.replace("--", "&#8211;").replace("...", "&#8230;")
        part = re.sub(r'(^|[\s(\[])"', r"\1&#8220;", part).replace('"', "&#8221;")
        part = re.sub(r"(^|[\s(\[])'", r"\1&#8216;", part).replace("'", "&#8217;")
        parts[index] = part
    return "".join(parts)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _sanitize_file_name(name: str) -> str:
    """WordPress's sanitize_file_name, in part: special characters (`%` among them: a
    percent-encoded name is never decoded) dropped, runs of spaces and dashes made one `-`."""
    name = re.sub(r"[?\[\]/\\=<>:;,'\"&$#*()|~`!{}%+\x00-\x1f]", "", name)
    name = re.sub(r"[\s-]+", "-", name)
    return name.strip(".-_")


def _unique_filename(filename: str, taken: set[str]) -> str:
    stem, dot, extension = filename.rpartition(".")
    if not dot:
        stem, extension = filename, ""
    candidate, number = filename, 1
    while candidate in taken:
        candidate = f"{stem}-{number}{dot}{extension}"
        number += 1
    return candidate


def _alphanumeric(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", text)


def _slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
