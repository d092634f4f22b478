"""WordPress through its REST API (v2), signed in with an Application Password.

Where the API is: each use first asks the site (`HEAD {siteUrl}`) where its REST API is, as
WordPress announces it in a `Link: <root>; rel="https://api.w.org/"` header: `{home}/wp-json/`
with pretty permalinks, `{home}/index.php?rest_route=/` with plain ones (the default until
permalinks are set, where /wp-json/ does not exist). Routes go below that root (`?rest_route=`
carries them on a plain site). A site that announces none (a plugin removed the header) is asked
at `?rest_route=`, which every WordPress answers; a root on another host than siteUrl (a
redirect to `www.`, say) is refused naming the address to use, as the password is not sent
there; an http root announced for an https siteUrl (a site behind a TLS proxy that believes
itself on http) is asked over https.

Who we are: then `GET /wp/v2/users/me?context=edit`. WordPress (6.1) answers a request whose
Application Password it refused as it answers a visitor, not with a 401 of its own: a publish
would otherwise fail on its first call as a bad parameter (`status=any` is refused to
visitors). A 401 there is AuthFailed saying which cause it is, from what the site shows a
visitor: Application Passwords off (its REST index lists none: WordPress allows them only over
https unless WP_ENVIRONMENT_TYPE is local), else a wrong username or password. Every operation
begins so; a user without edit_posts is refused there too, naming its role.

Posts are created at `/wp/v2/posts` and updated at `/wp/v2/posts/{id}`; taking a post down
makes it a draft again (one moved to the trash in WordPress stays there: it is down already).
WordPress has no idempotency key, so every create first looks for a post of ours: one whose
content carries the draft's marker comment, found by searching for it (`search`, over posts of
every status but the trash, `context=edit`), then by the article's slug for a site whose search
a plugin replaced. A retry after an ambiguous create (a timeout, a 5xx) then updates the post
the lost try made, even when someone else's post held the slug and ours got `-2`. A post
someone wrote in WordPress with the same slug is never taken over: ours is created beside it.
Updating a post moved to the trash brings it back (WordPress restores it on the update).

WordPress reads a post's title and excerpt as HTML (themes print them as they are), so both go
escaped: a title "Tom & Jerry <3" shows as written and never becomes markup.

`targets()` lists the site's categories and tags (`/categories`, `/tags`) and the users who may
write posts (`/users?who=authors`, which needs edit_posts; without `who` WordPress shows only
users with published posts), 100 a page, following `X-WP-TotalPages`: the ids `categories`,
`tags` and `authorId` in the config name.

The featured image is uploaded to the media library (`POST /media`, the file as the body with
an ASCII `Content-Disposition` filename: WordPress takes the name as it is sent, dropping `%`
rather than decoding it), its alt text, caption (with the attribution its licence requires)
and slug `cp-<sha256 of the file>` set by the same request, and named as the post's
`featured_media`. The library is searched for that slug first, so a republish or a retry
reuses the upload instead of adding a copy. A hotlinked stock image (Unsplash, whose files must
not be copied) is not uploaded: it opens the post's content as a figure of the provider's URL
with its attribution. A post without a featured image is sent `featured_media: 0`, which clears
one an earlier version had. Inline images are uploaded the same way (found again by their
slug) and shown in the content as figures of the library's `source_url`
(base.with_inline_images places them); hotlinked ones by the provider's URL.

Not sent: the article's tags (WordPress wants term ids, which it would take a lookup and maybe a
create per tag to get; `tags` in the config gives fixed ones), the SEO title and meta
description (core WordPress has no fields for them; SEO plugins add their own).
"""

from __future__ import annotations

import base64
import mimetypes
import re
import unicodedata
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Unpack
from urllib.parse import quote

import httpx
from pydantic import ConfigDict, Field, PositiveInt

from contentplatform.kit import text
from contentplatform.kit.outbound import GuardedClient, Response
from contentplatform.publishers.strategies import http
from contentplatform.publishers.strategies.base import (
    MAX_OPTION_PAGES,
    Article,
    AuthFailed,
    Choice,
    Invalid,
    Mode,
    Picture,
    PublishError,
    Remote,
    RemoteOptions,
    RemoteStatus,
    Result,
    SiteAddress,
    Strategy,
    TargetConfig,
    TargetCredentials,
    TestResult,
    marker,
    mask,
    unpublished,
    with_inline_images,
)

TARGET = "WordPress"
# A site without the REST API (or a siteUrl that is not a WordPress site) answers 200 with
# an HTML page.
NOT_THE_API = (
    f"{TARGET} did not answer with its REST API: is siteUrl the address of a WordPress site?"
)
# What a user may do with posts, as WordPress names it; reported by test_connection.
CAPABILITIES = ("edit_posts", "publish_posts", "edit_published_posts", "edit_others_posts")
V2 = "/wp/v2"
POSTS = f"{V2}/posts"
MEDIA = f"{V2}/media"
# The relation a WordPress site's `Link` header names its REST API root with.
API_REL = "https://api.w.org/"
_LINK = re.compile(r"<([^>]*)>([^<]*)")
_REL = re.compile(r';\s*rel\s*=\s*"?([^";]+)"?', re.IGNORECASE)
# A home page's answers that say the site is down or busy, not that it announces no API (a 404, a
# 405 or 501 to HEAD, a site-wide password: then the API is asked at `?rest_route=`).
_SITE_DOWN = frozenset({429, 500, 502, 503, 504})
# Why a site answered us as a visitor, and what to do (see the module's docstring).
CHECK_CREDENTIALS = (
    "Check the username (the login name or the email address), and make a new Application "
    "Password under Users → Profile → Application Passwords: the account's own password does not "
    "work here."
)
WRONG_CREDENTIALS = (
    f"{TARGET} did not accept the username and Application Password (it answered as to a "
    f"visitor). {CHECK_CREDENTIALS} If both are right, the web server may be dropping the "
    "Authorization header (some CGI and FastCGI set-ups do)."
)
PASSWORDS_OFF_OVER_HTTP = (
    f"{TARGET} ignored the Application Password: it turns Application Passwords off on a site "
    "served over plain http unless WP_ENVIRONMENT_TYPE is 'local'. Use the site's https address "
    "as siteUrl, or, on a development site, define WP_ENVIRONMENT_TYPE as 'local' in its "
    "wp-config.php."
)
PASSWORDS_OFF = (
    f"{TARGET} ignored the Application Password: Application Passwords are turned off on this "
    "site (by a plugin or the wp_is_application_passwords_available filter). Turn them on, or ask "
    "the site's administrator to."
)


class WordPressConfig(TargetConfig):
    site_url: SiteAddress
    categories: list[PositiveInt] = Field(default_factory=list)
    tags: list[PositiveInt] = Field(default_factory=list)
    author_id: PositiveInt | None = None

    def urls(self) -> list[str]:
        return [str(self.site_url)]


class WordPressCredentials(TargetCredentials):
    model_config = ConfigDict(hide_input_in_errors=True)

    username: str = Field(min_length=1)
    # As WordPress shows it ("abcd EFGH 1234 ..."); it ignores the spaces.
    application_password: str = Field(min_length=1, repr=False)

    def hint(self) -> str:
        return f"{self.username} {mask(self.application_password)}"


class WordPress(Strategy[WordPressConfig, WordPressCredentials], type="wordpress"):
    _session: _Session | None = None

    async def test_connection(self) -> TestResult:
        session = await self._signed_in()
        me = session.me
        if me is None:
            raise http.error_for(session.me_response, target=TARGET)
        capabilities = _capabilities(me)
        role = _role(me)
        warnings = []
        if "edit_posts" not in capabilities:
            warnings.append(
                f"This user cannot create posts (it lacks edit_posts; its role is {role}): "
                "give it the Author role, or Editor to edit other people's posts too."
            )
        elif "publish_posts" not in capabilities:
            warnings.append(
                f"This user can save drafts but not publish them (it lacks publish_posts; its "
                f"role is {role}): give it the Author or Editor role, or publish as drafts."
            )
        elif "edit_published_posts" not in capabilities:
            warnings.append(
                "This user cannot update or take down a post once it is published "
                f"(it lacks edit_published_posts; its role is {role}): give it the Author or "
                "Editor role."
            )
        elif "upload_files" not in _granted(me):
            warnings.append(
                "This user cannot upload featured or inline images (it lacks upload_files; its "
                f"role is {role}): give it the Author or Editor role."
            )
        return TestResult(
            ok="edit_posts" in capabilities,
            account_label=_label(me),
            capabilities=capabilities,
            warnings=warnings,
        )

    async def publish(self, article: Article, mode: Mode) -> Result:
        api = await self._writer()
        ours = await self._find_ours(api, article)
        fields = self._fields(
            article,
            mode,
            await self._featured_media(api, article),
            await self._figures(api, article),
        )
        if ours is not None:
            return await self._save(api, ours, fields)
        response = await self._write(api.call("POST", POSTS, json=fields, creates=True))
        return _result(http.json_object(response, unexpected=NOT_THE_API))

    async def update(self, remote: Remote, article: Article, mode: Mode) -> Result:
        api = await self._writer()
        fields = self._fields(
            article,
            mode,
            await self._featured_media(api, article),
            await self._figures(api, article),
        )
        return await self._save(api, remote.external_id, fields)

    async def unpublish(self, remote: Remote) -> Result:
        api = await self._writer()
        path = f"{POSTS}/{quote(remote.external_id, safe='')}"
        response = await api.call(
            "GET", path, params={"context": "edit", "_fields": "id,status,modified_gmt"}
        )
        post = http.json_object(response, unexpected=NOT_THE_API)
        if post.get("status") == "trash":
            modified = post.get("modified_gmt")
            return unpublished(remote.external_id, modified if isinstance(modified, str) else None)
        result = await self._save(api, remote.external_id, {"status": "draft"})
        return unpublished(result.external_id, result.remote_version, result.external_url)

    async def targets(self) -> RemoteOptions:
        api = (await self._signed_in()).api
        return RemoteOptions(
            categories=await self._choices(api, f"{V2}/categories"),
            tags=await self._choices(api, f"{V2}/tags"),
            authors=await self._choices(api, f"{V2}/users", who="authors"),
        )

    # --- where the API is, and who we are there -----------------------------------------------

    async def _signed_in(self) -> _Session:
        """The site's API and what it says of our user (`users/me`), asked once per use; a
        password WordPress ignored is AuthFailed saying why."""
        if self._session is None:
            api = _Api(self.client, await self._root(), self._headers())
            response = await api.send("GET", f"{V2}/users/me", params={"context": "edit"})
            if response.status == 401:
                raise AuthFailed(await self._why_refused(api, response))
            me = None
            if 200 <= response.status < 300:
                me = http.json_object(response, unexpected=NOT_THE_API)
            elif response.status in (403, 404):
                # A plugin that hides users from everyone: what is refused shows at the write.
                http.json_of(response, unexpected=NOT_THE_API)
            else:
                raise http.error_for(response, target=TARGET)
            self._session = _Session(api, me, response)
        return self._session

    async def _writer(self) -> _Api:
        """The API, for a user WordPress lets write posts."""
        session = await self._signed_in()
        if session.me is not None and "edit_posts" not in _capabilities(session.me):
            raise AuthFailed(
                f"The {TARGET} user {_label(session.me)} cannot create posts (it lacks "
                f"edit_posts; its role is {_role(session.me)}): give it the Author role, or "
                "Editor to edit other people's posts too."
            )
        return session.api

    def _headers(self) -> dict[str, str]:
        pair = f"{self.credentials.username}:{self.credentials.application_password}"
        return {
            "authorization": f"Basic {base64.b64encode(pair.encode()).decode()}",
            "accept": "application/json",
        }

    async def _root(self) -> str:
        """The REST API root the site announces, else its `?rest_route=` form."""
        site = str(self.config.site_url)
        response = await http.send(
            self.client, "HEAD", site, target=TARGET, headers={"accept": "text/html"}
        )
        if response.status in _SITE_DOWN:
            raise http.error_for(response, target=TARGET)
        root = _announced_root(response)
        if root is None:
            return site.rstrip("/") + "/?rest_route=/"
        announced, given = httpx.URL(root), httpx.URL(site)
        if announced.host != given.host:
            raise Invalid(
                f"{TARGET} says its REST API is at {root}, on another host than siteUrl: set "
                f"siteUrl to {_home_of(announced)} (the Application Password is sent to "
                "siteUrl's host only)."
            )
        if given.scheme == "https" and announced.scheme == "http":
            # A site behind a TLS proxy that believes itself on http: the password stays on
            # https.
            return str(announced.copy_with(scheme="https", port=given.port))
        return root

    async def _why_refused(self, api: _Api, response: Response) -> str:
        """Why WordPress answered `users/me` as to a visitor, and what to do."""
        code = _error_code(response)
        if code == "application_passwords_disabled" or not await _passwords_on(api):
            if httpx.URL(api.root).scheme == "http":
                return PASSWORDS_OFF_OVER_HTTP
            return PASSWORDS_OFF
        if code not in (None, "rest_not_logged_in"):
            # A WordPress that says what it refused.
            said = http.said(response)
            return f"{TARGET} refused the username and Application Password ({said}). " + (
                CHECK_CREDENTIALS
            )
        return WRONG_CREDENTIALS

    async def _write(self, request: Awaitable[Response]) -> Response:
        """A write's response; WordPress's refusal of a right names the user's role."""
        try:
            return await request
        except AuthFailed as error:
            me = self._session.me if self._session is not None else None
            if me is None:
                raise
            raise AuthFailed(
                f"{error.message} (The user {_label(me)} has the role {_role(me)}: an Author "
                "may publish and update its own posts and upload images, an Editor anyone's "
                "posts too.)"
            ) from None

    # --- posts ---------------------------------------------------------------------------------

    async def _choices(self, api: _Api, route: str, **query: str) -> list[Choice]:
        """Every item of a list route, as {id, name}, a page of 100 at a time."""
        found: list[Choice] = []
        for page in range(1, MAX_OPTION_PAGES + 1):
            params: dict[str, str | int] = {"per_page": 100, "page": page, "_fields": "id,name"}
            params.update(query)
            response = await api.call("GET", route, params=params)
            items = http.json_of(response, unexpected=NOT_THE_API)
            if not isinstance(items, list):
                raise Invalid(NOT_THE_API)
            found += [
                Choice(item["id"], str(item.get("name") or ""))
                for item in items
                if isinstance(item, dict) and isinstance(item.get("id"), int)
            ]
            if page >= _total_pages(response):
                break
        return found

    async def _find_ours(self, api: _Api, article: Article) -> str | None:
        """The id of the post an earlier try made for this draft, if there is one: found by its
        marker, else (a site whose search skips comments) by the article's slug."""
        term = marker(article).removeprefix("<!-- ").removesuffix(" -->")
        for query in ({"search": term}, {"slug": article.slug}):
            response = await api.call(
                "GET",
                POSTS,
                params={**query, "status": "any", "context": "edit", "per_page": 100},
            )
            found = http.json_of(response, unexpected=NOT_THE_API)
            if not isinstance(found, list):
                raise Invalid(NOT_THE_API)
            ids = [
                int(post["id"])
                for post in found
                if isinstance(post, dict)
                and isinstance(post.get("id"), int)
                and marker(article) in _raw(post.get("content"))
            ]
            if ids:
                return str(min(ids))  # the first try's, should a site hold two
        return None

    async def _save(self, api: _Api, post_id: str, fields: dict[str, Any]) -> Result:
        path = f"{POSTS}/{quote(post_id, safe='')}"
        response = await self._write(api.call("POST", path, json=fields))
        return _result(http.json_object(response, unexpected=NOT_THE_API))

    # --- images --------------------------------------------------------------------------------

    async def _featured_media(self, api: _Api, article: Article) -> int:
        """The media library's id of the article's featured image, uploaded unless an earlier
        try did; 0 when it has none, or one that must stay hotlinked."""
        picture = article.featured_image
        if picture is None or picture.data is None:
            return 0
        return int((await self._uploaded(api, picture, picture.data))["id"])

    async def _figures(self, api: _Api, article: Article) -> list[str]:
        """The inline images as figures of their library copies (hotlinked: the provider's)."""
        figures = []
        for picture in article.inline_images:
            src = picture.url
            if picture.data is not None:
                src = str((await self._uploaded(api, picture, picture.data))["source_url"])
            figures.append(picture.figure(src))
        return figures

    async def _uploaded(self, api: _Api, picture: Picture, data: bytes) -> dict[str, Any]:
        """The library item of the picture (`id`, `source_url`), uploaded unless it is there:
        found by the slug it was given, which carries the file's hash."""
        slug = "cp-" + re.sub(r"[^a-z0-9]", "", picture.content_hash.lower())
        response = await api.call(
            "GET", MEDIA, params={"slug": slug, "per_page": 10, "_fields": "id,source_url"}
        )
        found = http.json_of(response, unexpected=NOT_THE_API)
        for item in found if isinstance(found, list) else []:
            if isinstance(item, dict) and isinstance(item.get("id"), int):
                source = item.get("source_url")
                if isinstance(source, str) and source:
                    return {"id": item["id"], "source_url": source}
        response = await self._write(
            api.call(
                "POST",
                MEDIA,
                # WordPress takes these beside a file sent as the body, in one request.
                params={
                    "slug": slug,
                    "alt_text": picture.alt,
                    "caption": picture.caption_html() or "",
                },
                content=data,
                headers={
                    "content-type": picture.mime_type,
                    "content-disposition": f'attachment; filename="{_ascii_filename(picture)}"',
                },
                creates=True,
            )
        )
        media = http.json_object(response, unexpected=NOT_THE_API)
        source = media.get("source_url")
        if not isinstance(media.get("id"), int) or not isinstance(source, str) or not source:
            raise Invalid(NOT_THE_API)
        return {"id": media["id"], "source_url": source}

    def _fields(
        self, article: Article, mode: Mode, featured_media: int, figures: list[str]
    ) -> dict[str, Any]:
        content = with_inline_images(article.html, figures)
        if article.featured_image is not None and article.featured_image.hotlinked:
            content = f"{article.featured_image.figure()}\n{content}"
        fields: dict[str, Any] = {
            "title": text.escaped(article.title),
            "content": f"{marker(article)}\n{content}",
            "featured_media": featured_media,
            # Empty lets WordPress derive one from the content, as it does for its own posts.
            "excerpt": text.escaped(article.excerpt) if article.excerpt else "",
            "slug": article.slug,
            "status": "publish" if mode == "publish" else "draft",
        }
        if self.config.categories:
            fields["categories"] = list(self.config.categories)
        if self.config.tags:
            fields["tags"] = list(self.config.tags)
        if self.config.author_id is not None:
            fields["author"] = self.config.author_id
        return fields


@dataclass(frozen=True)
class _Api:
    """A site's REST API at `root` (as it announces it): a route (`/wp/v2/posts`) goes below a
    path root, or into the `rest_route` parameter of a plain-permalinks one."""

    client: GuardedClient
    root: str
    headers: Mapping[str, str]

    def where(
        self, route: str, params: Mapping[str, str | int] | None
    ) -> tuple[str, dict[str, str | int]]:
        root = httpx.URL(self.root)
        if "rest_route" in root.params:
            prefix = root.params["rest_route"].rstrip("/")
            url = root.copy_remove_param("rest_route")
            return str(url), {"rest_route": prefix + route, **(params or {})}
        return self.root.rstrip("/") + route, dict(params or {})

    async def call(
        self, method: str, route: str, *, creates: bool = False, **request: Unpack[http.Request]
    ) -> Response:
        """The 2xx response, else the PublishError for it (http.call)."""
        url, request["params"] = self.where(route, request.get("params"))
        request["headers"] = {**self.headers, **(request.get("headers") or {})}
        return await http.call(self.client, method, url, target=TARGET, creates=creates, **request)

    async def send(
        self, method: str, route: str, *, params: Mapping[str, str | int] | None = None
    ) -> Response:
        """The response, whatever its status (http.send)."""
        url, query = self.where(route, params)
        return await http.send(
            self.client, method, url, target=TARGET, headers=self.headers, params=query
        )


@dataclass(frozen=True)
class _Session:
    api: _Api
    # `users/me` in the edit context, or None when the site hides it (403, 404).
    me: dict[str, Any] | None
    me_response: Response


def _announced_root(response: Response) -> str | None:
    """The REST API root a page's `Link` headers announce (rel `https://api.w.org/`)."""
    for value in response.headers.get_list("link"):
        for target, parameters in _LINK.findall(value):
            rel = _REL.search(parameters)
            if rel is not None and API_REL in rel[1].split():
                return str(httpx.URL(response.url).join(target.strip()))
    return None


def _home_of(root: httpx.URL) -> str:
    """The site's address an API root is of: the root without `wp-json/` or
    `index.php?rest_route=/`."""
    path = root.path
    for tail in ("/wp-json/", "/wp-json", "/index.php"):
        if path.endswith(tail):
            path = path.removesuffix(tail)
            break
    return str(root.copy_with(path=path or "/", query=None)).rstrip("/")


async def _passwords_on(api: _Api) -> bool:
    """Whether the site's REST index lists Application Passwords among its ways to sign in
    (WordPress lists them only where they work); True when it cannot be read."""
    try:
        response = await api.send("GET", "/", params={"_fields": "authentication"})
        index = response.json() if 200 <= response.status < 300 else None
    except (PublishError, ValueError):
        return True
    if not isinstance(index, dict):
        return True
    ways = index.get("authentication")
    return isinstance(ways, dict) and "application-passwords" in ways


def _error_code(response: Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    code = body.get("code") if isinstance(body, dict) else None
    return code if isinstance(code, str) else None


def _granted(me: dict[str, Any]) -> set[str]:
    granted = me.get("capabilities")
    if not isinstance(granted, dict):
        return set()
    return {name for name, value in granted.items() if value is True}


def _capabilities(me: dict[str, Any]) -> list[str]:
    """What the user may do with posts, of CAPABILITIES, in that order."""
    granted = _granted(me)
    return [name for name in CAPABILITIES if name in granted]


def _role(me: dict[str, Any]) -> str:
    roles = me.get("roles")
    names = [str(role) for role in roles] if isinstance(roles, list) else []
    return ", ".join(names) or "none"


def _label(me: dict[str, Any]) -> str | None:
    label = me.get("name") or me.get("slug")
    return str(label) if label else None


def _raw(field: Any) -> str:
    raw = field.get("raw") if isinstance(field, dict) else None
    return raw if isinstance(raw, str) else ""


def _ascii_filename(picture: Picture) -> str:
    """The picture's filename in ASCII letters, digits, `.`, `-` and `_` ("Ünïcode photo.png"
    -> "Unicode-photo.png"), with an extension of its type when it has none (WordPress refuses
    a file whose name does not say its type)."""
    stem, dot, extension = picture.filename.rpartition(".")
    if not dot:
        stem, extension = picture.filename, ""
    folded = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode("ascii")
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", folded).strip("-_") or "image"
    extension = re.sub(r"[^A-Za-z0-9]", "", extension)
    if not extension:
        extension = (mimetypes.guess_extension(picture.mime_type) or ".bin").lstrip(".")
    return f"{stem}.{extension}"


def _result(post: dict[str, Any]) -> Result:
    if "id" not in post:
        raise Invalid(NOT_THE_API)
    published = post.get("status") == "publish"
    status: RemoteStatus = "published" if published else "draft"
    link, modified, date = post.get("link"), post.get("modified_gmt"), post.get("date_gmt")
    return Result(
        external_id=str(post["id"]),
        external_url=link if isinstance(link, str) else None,
        remote_version=modified if isinstance(modified, str) else None,
        status=status,
        published_at=_gmt(date) if published and isinstance(date, str) else None,
    )


def _total_pages(response: Response) -> int:
    try:
        return int(response.headers.get("x-wp-totalpages") or 1)
    except ValueError:
        return 1


def _gmt(text: str) -> datetime | None:
    """WordPress's `*_gmt` dates ("2024-05-01T10:00:00") are UTC without saying so."""
    try:
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError:
        return None
