"""The set-up every strategy test shares: a strategy of its own (as each publish attempt gets
one) on a guarded client that may reach the stand-in targets on loopback over http, built from a
connection's config and credentials as a connection stores them; and the articles they publish."""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

import PIL.Image

from contentplatform.kit.outbound import GuardedClient, Policy
from contentplatform.publishers.strategies.base import Article, Credit, Picture, Strategy
from tests.support.servers import StubServer

S = TypeVar("S", bound=Strategy)
T = TypeVar("T")

# The stand-ins listen on http://127.0.0.1; a test that needs a shorter timeout says so. Generous,
# since a stand-in is a thread of the test process and CI runs suites side by side on two cores.
LOOPBACK = Policy(allow_http=True, allow_loopback=True, connect_timeout=5.0, timeout=20.0)

# What the WordPress and Ghost tests publish (WordPress takes neither the SEO fields nor tags).
PRICING_THAT_SCALES = Article(
    draft_id=uuid.UUID("0b6f3c1e-8f0a-4d52-9a3e-6c2f1d7e8a90"),
    version=1,
    title="Pricing that scales",
    html="<h2>Why</h2><p>Because usage grows.</p>",
    excerpt="Why our pricing grows with you.",
    slug="pricing-that-scales",
    seo_title="Pricing that scales | Acme",
    meta_description="How Acme's pricing grows with your usage.",
    tags=["pricing", "growth"],
    canonical_url="https://acme.example/pricing",
)

# What the Shopify and Webflow tests publish (`article()`; Webflow takes no tags). The webhook
# tests' article, of their own, is of the same draft.
DRAFT_ID = uuid.UUID("0b7f3c2e-5d1a-4c7e-9f00-123456789abc")
ACME_PRICING = Article(
    draft_id=DRAFT_ID,
    version=1,
    title="Acme pricing explained",
    html="<h2>Plans</h2><p>Three plans, billed monthly.</p>",
    excerpt="How the three plans differ.",
    slug="acme-pricing",
    seo_title="Acme pricing: plans and prices",
    meta_description="What each Acme plan costs and includes.",
    tags=["pricing", "plans"],
)


def publish(mode: str = "publish", article: Article = PRICING_THAT_SCALES) -> Any:
    """The work of publishing `article` in `mode`, for a strategy to do."""
    return lambda strategy: strategy.publish(article, mode)


def article(**changes: Any) -> Article:
    """ACME_PRICING with `changes`."""
    return replace(ACME_PRICING, **changes)


def only(found: Mapping[str, T]) -> T:
    """The one thing a stand-in holds (its posts, articles, items...), which must be one."""
    assert len(found) == 1, found
    return next(iter(found.values()))


def run_strategy(
    kind: type[S],
    config: dict[str, Any],
    credentials: dict[str, Any] | None,
    work: Callable[[S], Awaitable[T]],
    *,
    policy: Policy = LOOPBACK,
    signing_secret: str | None = None,
) -> T:
    """`work` done by a `kind` strategy of its own, on `config` and `credentials` (camelCase, as
    a connection stores them), over a guarded client with `policy`."""
    settings = kind.Config.model_validate(config)
    secrets = kind.Credentials.model_validate(credentials) if kind.Credentials else None

    async def main() -> T:
        async with GuardedClient(policy) as client:
            strategy = kind(settings, secrets, client, signing_secret=signing_secret)
            return await work(strategy)

    return asyncio.run(main())


# A featured image of ours (uploaded; its file goes to targets that take one) and a hotlinked
# stock one (Unsplash: shown from the provider's URL, never copied).
def _png() -> bytes:
    out = io.BytesIO()
    PIL.Image.new("RGB", (4, 3), "navy").save(out, "PNG")
    return out.getvalue()


PNG_BYTES = _png()
UNSPLASH_CREDIT = Credit(
    text="Photo by Ana Lens on Unsplash",
    author_name="Ana Lens",
    author_url="https://unsplash.com/@analens?utm_source=content_platform&utm_medium=referral",
    source_name="Unsplash",
    source_url="https://unsplash.com/?utm_source=content_platform&utm_medium=referral",
)


def our_picture(url: str = "https://files.example/signed/harbour.png") -> Picture:
    return Picture(
        url=url,
        alt="Boats in the harbour at dawn",
        filename="harbour.png",
        mime_type="image/png",
        content_hash="ab12" * 16,
        data=PNG_BYTES,
        caption="The harbour <at> dawn",
    )


def stock_picture() -> Picture:
    return Picture(
        url="https://images.unsplash.com/photo-1?ixid=abc&w=1080",
        alt="A lighthouse",
        filename="photo-1.jpg",
        mime_type="image/jpeg",
        content_hash="cd34" * 16,
        credit=UNSPLASH_CREDIT,
    )


def serving(picture_bytes: bytes) -> StubServer:
    """A loopback server answering GET /signed/harbour.png with `picture_bytes`: our signed URL,
    for the targets that fetch the image themselves (Shopify, Webflow)."""
    server = StubServer()
    server.route(
        "GET", "/signed/harbour.png", lambda *_: (200, {"content-type": "image/png"}, picture_bytes)
    )
    return server
