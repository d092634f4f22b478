"""The public blog feed hands out titles, excerpts and SEO texts as plain text (never markup, even
from a row that still holds some or text in the content that reads as a tag), and holds its
input to the kit's rule: a slug with an invisible character or a page past any bound is a 400, a

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org
page past the last is empty. Over REST and RPC."""

from __future__ import annotations

from typing import Any

from contentplatform.kit.schemas import MAX_PAGE
from tests.drafts.support import Drafts, put_status
from tests.public.test_blogs import Blog, bad_fields, day, ok

HUGE = "99999999999999999999"


def test_the_feed_hands_out_plain_text(tenant, run):
    blog = Blog(Drafts.of(tenant), run)
    draft_id = blog.post("Placeholder", "<p>Grind fine.</p>", published_at=day(1))
    # A row from before titles were plain text, and content whose text reads as a tag.
    put_status(
        run,
        draft_id,
        "published",
        title="<img src=x onerror=alert(1)>Fresh <b>beans</b> & more",
        excerpt=None,
        content="<p>&lt;img src=x onerror=alert(2)&gt;Grind fine &amp; brew.</p>",
        seo_meta={"seo_title": "<b>Beans</b>", "meta_description": "<i>Fresh</i> beans"},
    )

    [summary] = ok(blog.list())["data"]
    post = ok(blog.get(summary["slug"]))

    assert (summary["title"], summary["excerpt"]) == ("Fresh beans & more", "Grind fine & brew.")
    assert (post["title"], post["excerpt"]) == ("Fresh beans & more", "Grind fine & brew.")
    assert post["seo"]["title"] == "Beans"
    assert post["seo"]["description"] == "Fresh beans"
    texts: list[Any] = [summary, post["title"], post["excerpt"], post["seo"]]
    assert "<" not in str(texts)


def test_a_title_written_with_markup_is_published_without_it(tenant, run):
    blog = Blog(Drafts.of(tenant), run)
    blog.post("<script>alert(1)</script>Cold <em>brew</em>", published_at=day(1))
    assert blog.titles() == ["Cold brew"]


def test_slugs_and_pages_are_held_to_the_rule(tenant, run):
    blog = Blog(Drafts.of(tenant), run)
    blog.post("Only post", published_at=day(1))
    # A URL carries a NUL percent-encoded.
    nul = "only%00post" if tenant.call.transport == "rest" else "only\x00post"
    for slug in ("only\u202epost", "only\u200bpost", nul):
        assert bad_fields(blog.get(slug)) == ["slug"], slug
    for page in (HUGE, str(MAX_PAGE + 1)):
        assert bad_fields(blog.list(page=page)) == ["page"]
    page = ok(blog.list(page=MAX_PAGE))
    assert (page["data"], page["total"]) == ([], 1)
