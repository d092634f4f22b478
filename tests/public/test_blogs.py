"""The public blog feed (public.listBlogs, public.getBlog) over real HTTP, REST and RPC: no token,
the tenant named by x-tenant-id, only that tenant's published posts, sanitized HTML, bounds, and
the rate limit per client address."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from contentplatform.drafts import publication as draft_publication
from contentplatform.drafts import service as drafts_service
from contentplatform.kit.db import Database
from contentplatform.tenants.models import Tenant
from tests.drafts.support import Drafts, put_status
from tests.support.problems import problem
from tests.support.servers import second_service

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

TENANT = "x-tenant-id"
SUMMARY_FIELDS = {"title", "slug", "excerpt", "published_at", "url"}
POST_FIELDS = SUMMARY_FIELDS | {"content_html", "updated_at", "seo"}


def day(number: int) -> datetime:
    return datetime(2024, 1, number, 9, 30, tzinfo=UTC)


class Blog:
    """One tenant's blog: drafts written and approved through the API (one transport), taken live
    as a publisher takes them (drafts.service.mark_published), read through the public feed."""

    def __init__(self, drafts: Drafts, run: Any) -> None:
        self.call = drafts.call
        self.run = run
        self.drafts = drafts

    @property
    def tenant_id(self) -> str:
        return str(self.drafts.tenant_id)

    def post(
        self,
        title: str,
        content: str = "<p>Some words.</p>",
        *,
        published_at: datetime,
        url: str | None = None,
        **changes: Any,
    ) -> str:
        """A published post: its draft's id."""
        draft_id = str(self.drafts.create(title, content)["id"])
        if changes:
            self.drafts.update(draft_id, **changes)
        self.drafts.approve(draft_id)
        self.publish(draft_id, published_at, url)
        return draft_id

    def publish(self, draft_id: str, published_at: datetime, url: str | None) -> None:
        tenant_id = uuid.UUID(self.tenant_id)

        async def scenario(db: Database) -> None:
            async with db.unit_of_work() as session:
                draft = await drafts_service.require(
                    session, tenant_id, uuid.UUID(draft_id), for_update=True
                )
                await draft_publication.mark_published(session, draft, url, published_at)

        self.run(scenario)

    def list(self, tenant: str | None = None, **query: Any) -> httpx.Response:
        return self.call("public.listBlogs", query, headers={TENANT: tenant or self.tenant_id})

    def get(self, slug: str, tenant: str | None = None) -> httpx.Response:
        return self.call(
            "public.getBlog", {"slug": slug}, headers={TENANT: tenant or self.tenant_id}
        )

    def titles(self, **query: Any) -> list[str]:
        return [post["title"] for post in ok(self.list(**query))["data"]]


@pytest.fixture
def blog(tenant, run) -> Blog:
    return Blog(Drafts.of(tenant), run)


@pytest.fixture
def other(other_tenant, run) -> Blog:
    """A second tenant's blog, through the same transport."""
    return Blog(Drafts.of(other_tenant), run)


def ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def bad_fields(response: httpx.Response) -> list[str]:
    return [error["path"] for error in problem(response, 400, "BAD_REQUEST")["errors"]]


def when(value: str) -> datetime:
    return datetime.fromisoformat(value)


# --- the feed ---------------------------------------------------------------------------------


@pytest.mark.own_org
def test_the_feed_lists_only_published_posts_of_the_tenant_newest_first(blog, other):
    blog.post(
        "Older post",
        published_at=day(1),
        url="https://blog.example/older-post",
        excerpt="The older one.",
    )
    blog.post(
        "Newer post", "<p>The newer post starts here.</p><p>Then more.</p>", published_at=day(3)
    )
    blog.drafts.approve(blog.drafts.create("Approved, not published")["id"])
    blog.drafts.create("Still in review")
    other.post("Another tenant's post", published_at=day(2))

    page = ok(blog.list())

    assert (page["total"], page["page"], page["limit"]) == (2, 1, 10)
    newer, older = page["data"]
    assert set(newer) == set(older) == SUMMARY_FIELDS
    assert when(newer.pop("published_at")) == day(3)
    assert newer == {
        "title": "Newer post",
        "slug": "newer-post",
        # No excerpt of its own: the start of its first paragraph stands in.
        "excerpt": "The newer post starts here.",
        "url": None,
    }
    assert when(older.pop("published_at")) == day(1)
    assert older == {
        "title": "Older post",
        "slug": "older-post",
        "excerpt": "The older one.",
        "url": "https://blog.example/older-post",
    }


@pytest.mark.own_org
def test_the_feed_is_paginated(blog):
    for number in range(1, 6):
        blog.post(f"Post {number}", published_at=day(number))

    assert blog.titles() == ["Post 5", "Post 4", "Post 3", "Post 2", "Post 1"]
    pages = [ok(blog.list(page=page, limit=2)) for page in (1, 2, 3, 4)]
    assert [[post["title"] for post in page["data"]] for page in pages] == [
        ["Post 5", "Post 4"],
        ["Post 3", "Post 2"],
        ["Post 1"],
        [],
    ]
    assert [(page["total"], page["page"], page["limit"]) for page in pages] == [
        (5, 1, 2),
        (5, 2, 2),
        (5, 3, 2),
        (5, 4, 2),
    ]


@pytest.mark.own_org
def test_a_long_first_paragraph_is_cut_at_a_word_for_the_excerpt(blog):
    words = " ".join(f"word{number}" for number in range(200))
    blog.post("Long post", f"<p>{words}</p>", published_at=day(1))

    excerpt = ok(blog.list())["data"][0]["excerpt"]

    cut = excerpt.removesuffix("…")
    assert excerpt.endswith("…")
    assert 0 < len(cut) <= 300
    assert words[: len(cut) + 1] == cut + " ", "a prefix of whole words"


# --- one post ---------------------------------------------------------------------------------


def test_a_post_comes_with_its_html_and_seo(blog):
    blog.post(
        "Cooking rice",
        "<h2>Steps</h2><p>Rinse the rice, then simmer it.</p>",
        published_at=day(2),
        url="https://blog.example/cooking-rice",
        excerpt="How to cook rice.",
        seo_meta={"seo_title": "Rice, cooked right", "meta_description": "Rice in 20 minutes."},
    )

    post = ok(blog.get("cooking-rice"))

    assert set(post) == POST_FIELDS
    assert post["title"] == "Cooking rice"
    assert post["slug"] == "cooking-rice"
    assert post["excerpt"] == "How to cook rice."
    assert post["content_html"] == "<h2>Steps</h2><p>Rinse the rice, then simmer it.</p>"
    assert when(post["published_at"]) == day(2)
    assert when(post["updated_at"]) > day(2)
    assert post["url"] == "https://blog.example/cooking-rice"
    assert post["seo"] == {
        "title": "Rice, cooked right",
        "description": "Rice in 20 minutes.",
        "canonical_url": "https://blog.example/cooking-rice",
    }


def test_seo_falls_back_to_the_title_and_excerpt(blog):
    blog.post("Plain post", "<p>Only a paragraph.</p>", published_at=day(1))

    seo = ok(blog.get("plain-post"))["seo"]

    assert seo == {"title": "Plain post", "description": "Only a paragraph.", "canonical_url": None}


@pytest.mark.own_org
def test_the_slug_comes_from_the_seo_slug_and_stays_fixed(blog):
    draft_id = blog.post("A title", published_at=day(1), seo_meta={"slug": "Chosen Slug"})
    blog.drafts.update(draft_id, title="A new title", seo_meta={"slug": "another-slug"})

    assert [post["slug"] for post in ok(blog.list())["data"]] == ["chosen-slug"]
    assert ok(blog.get("chosen-slug"))["title"] == "A new title"
    problem(blog.get("another-slug"), 404, "NOT_FOUND")


def test_html_is_sanitized_on_the_way_out_too(blog, run):
    draft_id = blog.post("Tampered post", published_at=day(1))
    # Content that skipped the sanitizing write path (an import, a repair by hand).
    put_status(
        run,
        draft_id,
        "published",
        content=(
            '<p onclick="steal()">Still here</p><script>alert(1)</script>'
            '<a href="javascript:alert(2)">link</a>'
        ),
    )

    html = ok(blog.get("tampered-post"))["content_html"]

    assert "Still here" in html
    for dangerous in ("<script", "alert(1)", "onclick", "javascript:"):
        assert dangerous not in html


# --- nothing that is not a published post of the tenant ---------------------------------------


@pytest.mark.own_org
@pytest.mark.parametrize("status", ["reviewing", "approved", "rejected", "archived"])
def test_a_post_no_longer_published_leaves_the_feed(blog, run, status):
    # Once published its slug is fixed; moved out of published, the slug must not reach it.
    draft_id = blog.post("Withdrawn post", published_at=day(1))
    assert blog.titles() == ["Withdrawn post"]

    put_status(run, draft_id, status)

    assert ok(blog.list())["total"] == 0
    assert blog.titles() == []
    problem(blog.get("withdrawn-post"), 404, "NOT_FOUND")


@pytest.mark.own_org
def test_a_deleted_post_leaves_the_feed(blog):
    kept = blog.post("Kept post", published_at=day(1))
    deleted = blog.post("Deleted post", published_at=day(2))
    assert kept != deleted

    blog.drafts.delete(deleted)

    page = ok(blog.list())
    assert (page["total"], [post["title"] for post in page["data"]]) == (1, ["Kept post"])
    problem(blog.get("deleted-post"), 404, "NOT_FOUND")


@pytest.mark.own_org
def test_another_tenants_posts_are_not_found(blog, other):
    blog.post("Hello world", "<p>Ours.</p>", published_at=day(1))
    other.post("Hello world", "<p>Theirs.</p>", published_at=day(2))
    other.post("Only theirs", published_at=day(3))

    assert ok(blog.get("hello-world"))["content_html"] == "<p>Ours.</p>"
    assert ok(other.get("hello-world"))["content_html"] == "<p>Theirs.</p>"
    problem(blog.get("only-theirs"), 404, "NOT_FOUND")
    assert blog.titles() == ["Hello world"]
    assert other.titles() == ["Only theirs", "Hello world"]


@pytest.mark.parametrize(
    "stranger", ["0f8fad5b-d9cb-469f-a165-70867728950e", "org_nobody_here", "0" * 32]
)
def test_an_unknown_tenant_is_404(call, stranger):
    problem(call("public.listBlogs", headers={TENANT: stranger}), 404, "NOT_FOUND")
    problem(call("public.getBlog", {"slug": "hello"}, headers={TENANT: stranger}), 404, "NOT_FOUND")


@pytest.mark.own_org
def test_the_organization_id_names_the_tenant_as_its_id_does(blog, other):
    blog.post("Hello world", "<p>Ours.</p>", published_at=day(1))
    other.post("Only theirs", published_at=day(2))
    org, other_org = blog.drafts.org, other.drafts.org

    assert ok(blog.list(tenant=org)) == ok(blog.list())
    assert [post["title"] for post in ok(blog.list(tenant=org))["data"]] == ["Hello world"]
    assert ok(blog.get("hello-world", tenant=org)) == ok(blog.get("hello-world"))
    # Each organization's id finds its own posts only.
    assert [post["title"] for post in ok(other.list(tenant=other_org))["data"]] == ["Only theirs"]
    problem(blog.get("only-theirs", tenant=org), 404, "NOT_FOUND")
    problem(other.get("hello-world", tenant=other_org), 404, "NOT_FOUND")


@pytest.mark.own_org
def test_a_suspended_tenants_blog_is_404(blog, run):
    blog.post("Quiet post", published_at=day(1))
    tenant_id = uuid.UUID(blog.tenant_id)

    async def suspend(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(Tenant).where(Tenant.id == tenant_id).values(status="suspended")
            )

    run(suspend)

    for tenant in (blog.tenant_id, blog.drafts.org):
        problem(blog.list(tenant), 404, "NOT_FOUND")
        problem(blog.get("quiet-post", tenant), 404, "NOT_FOUND")


# --- input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("malformed", ["acme corp", "-acme", "a/b", "x" * 256])
def test_the_tenant_header_is_required_and_an_id(call, malformed):
    missing = problem(call("public.listBlogs"), 400, "BAD_REQUEST")
    assert missing["errors"] == [{"path": TENANT, "message": "Field required"}]
    assert bad_fields(call("public.getBlog", {"slug": "hello"})) == [TENANT]
    assert bad_fields(call("public.listBlogs", headers={TENANT: malformed})) == [TENANT]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"page": 0}, "page"),
        ({"page": "first"}, "page"),
        ({"limit": 0}, "limit"),
        ({"limit": 51}, "limit"),
    ],
)
def test_bad_page_or_limit_is_400(blog, query, field):
    assert bad_fields(blog.list(**query)) == [field]


@pytest.mark.own_org
def test_the_largest_page_is_allowed(blog):
    assert ok(blog.list(limit=50))["limit"] == 50


def test_rpc_takes_the_tenant_from_the_header_only(client):
    in_body = client.post("/api/rpc/public.listBlogs", json={"tenantId": str(uuid.uuid4())})
    assert bad_fields(in_body) == [TENANT, "tenantId"]


def test_the_feed_needs_no_token_and_documents_its_header(openapi_document):
    for path in ("/api/blogs", "/api/blogs/{slug}"):
        operation = openapi_document["paths"][path]["get"]
        assert operation["security"] == []
        assert {"400", "404", "429"} <= operation["responses"].keys()
        tenant = [p for p in operation["parameters"] if p["name"] == TENANT]
        assert len(tenant) == 1
        assert tenant[0]["in"] == "header"
        assert tenant[0]["required"] is True
        assert tenant[0]["schema"]["type"] == "string"
        assert "x-idp-org-id" in tenant[0]["description"]
        assert "organization's id" in operation["description"]


# --- rate limit -------------------------------------------------------------------------------


@pytest.mark.own_org
def test_the_feed_is_rate_limited_per_client_address(settings, client, token, org):
    tenant_id = client.get(
        "/v1/system/whoami",
        headers={"Authorization": f"Bearer {token(org, 'owner', 'admin')}", "x-idp-org-id": org},
    ).json()["tenant_id"]
    headers = {TENANT: tenant_id}
    # A second app on the same database with a tiny limit, so the suite's server keeps its own.
    limited = settings.model_copy(
        update={
            # A day: a minute's sliding window lets a fourth request through when the test
            # straddles the window's end (tests/kit/test_procedures.py `limited_client`).
            "rate_limit_public": "3/day",
            "redis_prefix": f"{settings.redis_prefix}limited-{uuid.uuid4().hex[:8]}:",
        }
    )
    with second_service(limited) as second, second.client() as http:
        allowed = [
            http.get("/api/blogs", headers=headers),
            http.post("/api/rpc/public.listBlogs", headers=headers),
            http.get("/api/blogs", headers=headers),
        ]
        assert [response.status_code for response in allowed] == [200, 200, 200]
        for refused in (
            http.get("/api/blogs", headers=headers),
            http.post("/api/rpc/public.getBlog", json={"slug": "any"}, headers=headers),
        ):
            problem(refused, 429, "TOO_MANY_REQUESTS")
            assert 1 <= int(refused.headers["retry-after"]) <= 86_400

    assert client.get("/api/blogs", headers=headers).status_code == 200
