"""What every publishing target implements, the typed errors it raises, and the pieces of
config and result the targets share.

A strategy is built per use from a connection's validated config and decrypted credentials and a
guarded HTTP client (kit/outbound.py: it refuses private addresses, follows no proxies, caps
responses). It speaks its target's real protocol and never touches our database: the publishers
service records attempts and results. Besides writing (`publish`, `update`, `unpublish`) it reads:
`test_connection`, and `targets` (what the connection can publish into, for forms and dialogs).
"""

from __future__ import annotations

import html
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import NoneType
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar, get_args

import httpx
from bs4 import BeautifulSoup, Tag
from pydantic import AfterValidator, BaseModel, ConfigDict, HttpUrl
from pydantic.alias_generators import to_camel

from contentplatform.kit import outbound, text

# `publish` makes the article live; `draft` puts it on the target unpublished (for a last look
# in the CMS). Scheduling is ours: a scheduled attempt waits, then publishes.
Mode = Literal["publish", "draft"]
RemoteStatus = Literal["published", "draft", "unpublished"]


class Settings(BaseModel):
    """Base of each strategy's Config and Credentials models: camelCase on the wire, unknown
    fields refused, so a typo in a field name is a 400 rather than a silently ignored setting."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


def parse_url(value: str) -> httpx.URL:
    """`value` parsed, when the outbound guard accepts its form; for a config's validators, a
    ValueError otherwise. http passes here: whether it may be used is the guard's call at each
    request."""
    try:
        return outbound.check_url(value, outbound.Policy(allow_http=True))
    except outbound.Refused as error:
        raise ValueError(str(error)) from None


def _site_address(url: HttpUrl) -> HttpUrl:
    if url.query or url.fragment:
        raise ValueError("give the site's address, without a ?query or #fragment")
    return url


# The address of a site whose API lives below it (WordPress, Ghost).
SiteAddress = Annotated[HttpUrl, AfterValidator(_site_address)]


@dataclass(frozen=True)
class Credit:
    """Whom an image's licence says to name, and where: "Photo by {author} on {source}"."""

    text: str
    author_name: str | None = None
    author_url: str | None = None
    source_name: str | None = None
    source_url: str | None = None


@dataclass(frozen=True)
class Picture:
    """An image that goes out with an article (media/): its featured image or one in its body.

    `data` is the file, for a target that takes an upload; None for a hotlinked stock image,
    whose provider requires its own URL to be shown and the file never copied (Unsplash): a
    target that can only take a copy (a WordPress featured image, Shopify's, Webflow's) shows it
    in the body instead, as a figure of `url`. `url` is where the image can be fetched: the
    provider's for a hotlinked one, else a signed URL of ours. Alt text and caption are plain
    text; `credit` is the attribution the licence requires, or None."""

    url: str
    alt: str
    filename: str
    mime_type: str
    content_hash: str
    data: bytes | None = None
    caption: str | None = None
    credit: Credit | None = None

    @property
    def hotlinked(self) -> bool:
        return self.data is None

    def caption_text(self) -> str | None:
        """The caption with the attribution after it, as plain text."""
        parts = [part for part in (self.caption, self.credit and self.credit.text) if part]
        return " — ".join(parts) or None

    def caption_html(self) -> str | None:
        """The caption with the attribution, as HTML: the author and the source linked when the
        licence gives their pages (as Unsplash's guidelines ask)."""
        parts = [html.escape(self.caption, quote=False)] if self.caption else []
        if self.credit is not None:
            parts.append(_credit_html(self.credit))
        return " — ".join(parts) or None

    def figure(self, src: str | None = None) -> str:
        """The image as a `<figure>` for an article's body, at `src` (default: its `url`)."""
        image = (
            f'<img src="{html.escape(src or self.url)}" alt="{html.escape(self.alt)}" '
            'loading="lazy">'
        )
        caption = self.caption_html()
        return (
            f"<figure>{image}<figcaption>{caption}</figcaption></figure>"
            if caption
            else (f"<figure>{image}</figure>")
        )


def _credit_html(credit: Credit) -> str:
    if not (credit.author_name and credit.source_name):
        return html.escape(credit.text, quote=False)
    author = _link(credit.author_name, credit.author_url)
    return f"Photo by {author} on {_link(credit.source_name, credit.source_url)}"


def _link(label: str, url: str | None) -> str:
    if not url:
        return html.escape(label, quote=False)
    return f'<a href="{html.escape(url)}" rel="noopener">{html.escape(label, quote=False)}</a>'


@dataclass(frozen=True)
class Article:
    """A draft as it goes out. `html` is already sanitized; the title, excerpt, SEO title, meta
    description and tags are plain text, made so here whatever the draft holds (kit/text.py):
    a target that reads one of them as HTML gets it through `text.escaped`, never as is."""

    draft_id: uuid.UUID
    version: int
    title: str
    html: str
    excerpt: str | None
    slug: str
    seo_title: str | None = None
    meta_description: str | None = None
    tags: list[str] = field(default_factory=list)
    canonical_url: str | None = None
    featured_image: Picture | None = None
    # The images of the body, in their attachments' order (placed by `with_inline_images`).
    inline_images: list[Picture] = field(default_factory=list)

    def __post_init__(self) -> None:
        # A draft written before titles were plain text may still hold markup.
        plain = {
            "title": text.plain_text(self.title),
            "excerpt": _plain_or_none(self.excerpt),
            "seo_title": _plain_or_none(self.seo_title),
            "meta_description": _plain_or_none(self.meta_description),
            "tags": [tag for tag in map(text.plain_text, self.tags) if tag],
        }
        for name, value in plain.items():
            object.__setattr__(self, name, value)


# Sections of the body that are not the article's own: figures never go in them.
_NOT_SECTIONS = ("sources", "related-reading")


async def inline_figures(
    article: Article, host: Callable[[Picture, bytes], Awaitable[str]]
) -> list[str]:
    """The article's inline images as figures, in order: of the target's copy (`host` uploads a
    file we hold and answers its URL there), or of the provider's URL for a hotlinked one."""
    figures = []
    for picture in article.inline_images:
        src = picture.url if picture.data is None else await host(picture, picture.data)
        figures.append(picture.figure(src))
    return figures


def with_inline_images(body: str, figures: Sequence[str]) -> str:
    """`body` with the inline images' `figures` in place, one rule for every target: the n-th
    after the first paragraph under the article's n-th `<h2>` (right after the heading when the
    section opens with no paragraph); the ones left over at the end of the article, before its
    Related reading or Sources list."""
    if not figures:
        return body
    soup = BeautifulSoup(body, "html.parser")
    headings = [h for h in soup.find_all("h2") if h.get("id") not in _NOT_SECTIONS]
    left = list(figures)
    for heading in headings:
        if not left:
            break
        anchor: Tag = heading
        for sibling in heading.find_next_siblings():
            if not isinstance(sibling, Tag) or sibling.name == "h2":
                break
            if sibling.name == "p":
                anchor = sibling
                break
        anchor.insert_after(BeautifulSoup(left.pop(0), "html.parser"))
    if left:
        rest = BeautifulSoup("".join(left), "html.parser")
        closing = next((h for h in soup.find_all("h2") if h.get("id") in _NOT_SECTIONS), None)
        if closing is not None:
            closing.insert_before(rest)
        else:
            soup.append(rest)
    return str(soup)


def _plain_or_none(value: str | None) -> str | None:
    if value is None:
        return None
    return text.plain_text(value) or None


@dataclass(frozen=True)
class Remote:
    """What we know of a copy already on the target (from an earlier successful attempt)."""

    external_id: str
    remote_version: str | None = None
    external_url: str | None = None


@dataclass(frozen=True)
class Result:
    external_id: str
    external_url: str | None
    # The target's version marker of the item (Ghost updated_at, Webflow lastUpdated, ...).
    remote_version: str | None
    status: RemoteStatus
    published_at: datetime | None


def unpublished(
    external_id: str, remote_version: str | None, external_url: str | None = None
) -> Result:
    """What taking an item down leaves on the target: nothing published."""
    return Result(
        external_id=external_id,
        external_url=external_url,
        remote_version=remote_version,
        status="unpublished",
        published_at=None,
    )


@dataclass(frozen=True)
class Choice:
    """One thing on the target a post can be filed under or credited to: a category, a tag, an
    author (WordPress numbers them, Ghost names them with hex ids)."""

    id: int | str
    name: str

    def __post_init__(self) -> None:
        # Names come as the target keeps them (WordPress keeps `&amp;` in term names): they
        # leave here as plain text, for a dialog to show as text.
        object.__setattr__(self, "name", text.plain_text(self.name))


@dataclass(frozen=True)
class Blog:
    """A Shopify blog articles go into."""

    id: str
    handle: str
    title: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "title", text.plain_text(self.title))


@dataclass(frozen=True)
class CollectionField:
    """A field of a Webflow collection, by the slug `fieldMapping` names it with."""

    slug: str
    type: str
    required: bool


@dataclass(frozen=True)
class Collection:
    """A Webflow CMS collection items go into, with its fields."""

    id: str
    name: str
    fields: list[CollectionField]

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", text.plain_text(self.name))


@dataclass(frozen=True)
class RemoteOptions:
    """What a connection can publish into, as its target lists it: the lists that apply to the
    target are set, the others None (a webhook has none)."""

    blogs: list[Blog] | None = None
    collections: list[Collection] | None = None
    categories: list[Choice] | None = None
    tags: list[Choice] | None = None
    authors: list[Choice] | None = None


# The most pages of one list a targets read follows (100 items a page where the target allows
# it): a site with more is listed in part rather than read for ever.
MAX_OPTION_PAGES = 10


# What a connection test reports where the target has no finer rights to read: all we do.
EVERY_CAPABILITY = ["publish", "draft", "update", "unpublish"]


@dataclass(frozen=True)
class TestResult:
    ok: bool
    account_label: str | None
    capabilities: list[str]
    warnings: list[str] = field(default_factory=list)


ErrorCode = Literal[
    "auth_failed",
    "invalid",
    "not_found",
    "conflict",
    "rate_limited",
    "transient",
    "ambiguous",
    "refused",
]


class PublishError(Exception):
    """A target's refusal or failure. `message` is safe to show a user (never a credential);
    `retryable` says whether trying the same thing again later may succeed."""

    code: ClassVar[ErrorCode]
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after

    def as_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "retryable": self.retryable}


class AuthFailed(PublishError):
    """The credentials were refused (401) or lack a right (403)."""

    code = "auth_failed"


class Invalid(PublishError):
    """The target refused what we sent (422, userErrors, a field mapping that does not fit)."""

    code = "invalid"


class RemoteNotFound(PublishError):
    """The item (or blog, collection) we addressed does not exist on the target."""

    code = "not_found"


class RemoteConflict(PublishError):
    """The target refused the write as conflicting (an edit there since our last read)."""

    code = "conflict"


class RateLimited(PublishError):
    """429 or a throttle: try again after `retry_after` seconds."""

    code = "rate_limited"
    retryable = True


class Transient(PublishError):
    """5xx, timeouts, a dropped connection: nothing was written, try again."""

    code = "transient"
    retryable = True


class Ambiguous(PublishError):
    """The write may or may not have happened (a timeout after sending a create). Retrying is
    safe only after checking the target, which the strategy does on its next try."""

    code = "ambiguous"
    retryable = True


class Refused(PublishError):
    """Our outbound guard refused the URL (a private address, http where https is required), or
    the target's TLS certificate (expired, for another name, from a CA not trusted here)."""

    code = "refused"


class TargetConfig(Settings):
    """A target's connection config."""

    def urls(self) -> list[str]:
        """Every user-supplied URL in it: each passes the outbound guard before it is stored."""
        raise NotImplementedError


class TargetCredentials(Settings):
    """A target's credentials: stored encrypted, shown only as `hint()`."""

    def hint(self) -> str:
        raise NotImplementedError


ConfigT = TypeVar("ConfigT", bound=TargetConfig)
# The target's TargetCredentials, or None for one that takes none.
CredentialsT = TypeVar("CredentialsT")


class Strategy(Generic[ConfigT, CredentialsT]):
    """One publishing target, built per use from a connection's validated config, its decrypted
    credentials, the guarded client and (webhooks) the signing secret. A target names its models
    and type in its class line: `class Ghost(Strategy[GhostConfig, GhostCredentials],
    type="ghost")`."""

    # Declared before `type`, which would otherwise shadow the builtin in this class body.
    Config: ClassVar[type[TargetConfig]]
    Credentials: ClassVar[type[TargetCredentials] | None]
    type: ClassVar[str]

    def __init_subclass__(cls, *, type: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The models come from the class line's Strategy[Config, Credentials].
        config, credentials = get_args(cls.__orig_bases__[0])  # type: ignore[attr-defined]
        cls.Config = config
        cls.Credentials = None if credentials is NoneType else credentials
        cls.type = type

    def __init__(
        self,
        config: ConfigT,
        credentials: CredentialsT,
        client: outbound.GuardedClient,
        *,
        signing_secret: str | None = None,
        previous_signing_secret: str | None = None,
    ) -> None:
        self.config = config
        self.credentials = credentials
        self.client = client
        self.signing_secret = signing_secret
        # The secret a rotation replaced, while its overlap lasts (webhooks sign with both).
        self.previous_signing_secret = previous_signing_secret

    @staticmethod
    def urls(config: TargetConfig) -> list[str]:
        return config.urls()

    @staticmethod
    def credentials_hint(credentials: TargetCredentials | None) -> str | None:
        return credentials.hint() if credentials is not None else None

    async def test_connection(self) -> TestResult:
        raise NotImplementedError

    async def publish(self, article: Article, mode: Mode) -> Result:
        """Create the item. After an `Ambiguous` failure the next call must find an item an
        earlier try created (by slug, idempotency key) instead of making a second one."""
        raise NotImplementedError

    async def update(self, remote: Remote, article: Article, mode: Mode) -> Result:
        """Update the item `remote` names; `RemoteNotFound` when it is gone there."""
        raise NotImplementedError

    async def unpublish(self, remote: Remote) -> Result:
        """Take the item down (back to a draft where the target has drafts)."""
        raise NotImplementedError

    async def targets(self) -> RemoteOptions:
        """Read, with the stored credentials, what the connection can publish into: blogs,
        collections and their fields, categories, tags, authors (those the target has). A
        refused credential raises AuthFailed, as any request does."""
        raise NotImplementedError


def marker(article: Article) -> str:
    """An HTML comment that marks an item on a target as this draft's copy, unseen by readers:
    how a retry tells the post an earlier try made from someone else's with the same slug."""
    return f"<!-- contentplatform:draft={article.draft_id} -->"


def mask(secret: str, *, keep: int = 4) -> str:
    """`••••abcd`: enough to tell two credentials apart, never enough to use one."""
    tail = secret[-keep:] if len(secret) > keep * 3 else ""
    return "••••" + tail
