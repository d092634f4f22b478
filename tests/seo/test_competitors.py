"""seo.listCompetitors, createCompetitor, updateCompetitor and deleteCompetitor over REST and
RPC."""

from __future__ import annotations

import uuid

import pytest

from tests.seo.support import Seo
from tests.support.orgs import org_fixture
from tests.support.problems import problem

seo = org_fixture(Seo)
other = org_fixture(Seo, second=True)


def test_a_competitor_is_added_listed_edited_and_removed(seo: Seo):
    made = seo.add_competitor(name="Rival <i>Inc</i>", domain="https://WWW.Rival.com/")
    assert {k: made[k] for k in ("name", "domain", "aliases", "track_rank", "track_ai")} == {
        "name": "Rival Inc",
        "domain": "rival.com",
        "aliases": [],
        "track_rank": True,
        "track_ai": True,
    }
    assert made["created_at"] == made["updated_at"]
    second = seo.add_competitor(
        name="Bücher", domain="bücher.de", aliases=["Buecher", "buecher", "BD"], trackAi=False
    )
    assert second["domain"] == "xn--bcher-kva.de"
    assert second["aliases"] == ["Buecher", "BD"] and second["track_ai"] is False
    assert seo.competitors() == {"data": [made, second], "total": 2}  # oldest first

    edited = seo.ok(
        "seo.updateCompetitor",
        {"id": made["id"], "name": "Rival", "aliases": ["RV"], "trackRank": False},
        role="editor",
    )
    assert (edited["name"], edited["aliases"], edited["track_rank"], edited["track_ai"]) == (
        "Rival",
        ["RV"],
        False,
        True,
    )
    assert edited["domain"] == "rival.com" and edited["updated_at"] >= made["updated_at"]
    assert seo.ok("seo.deleteCompetitor", {"id": made["id"]}, role="admin") == {"success": True}
    assert seo.competitors() == {"data": [second], "total": 1}
    # Re-adding a removed domain is allowed (its stored history comes back with it).
    assert seo.add_competitor(name="Rival", domain="rival.com")["domain"] == "rival.com"


def test_a_domain_is_one_competitor_and_never_the_own_site(seo: Seo):
    seo.add_competitor(name="Rival", domain="rival.com")
    for spelling in ("rival.com", "www.rival.com", "RIVAL.COM.", "http://rival.com"):
        problem(
            seo.request("seo.createCompetitor", {"name": "Again", "domain": spelling}),
            409,
            "CONFLICT",
        )
    seo.ok("seo.updateSettings", {"siteUrl": "https://www.acme.example/"}, role="admin")
    refused = seo.request("seo.createCompetitor", {"name": "Us", "domain": "acme.example"})
    assert "own site" in problem(refused, 409, "CONFLICT")["detail"]
    # A subdomain of our site is another host: it may be tracked.
    assert seo.add_competitor(name="Blog", domain="blog.acme.example")["domain"] == (
        "blog.acme.example"
    )
    assert seo.competitors()["total"] == 2


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"name": "X", "domain": "rival.com/blog"}, "domain"),
        ({"name": "X", "domain": "rival.com:8080"}, "domain"),
        ({"name": "X", "domain": "203.0.113.9"}, "domain"),
        ({"name": "X", "domain": "localhost"}, "domain"),
        ({"name": "X", "domain": "ftp://rival.com"}, "domain"),
        ({"name": "X", "domain": "riv al.com"}, "domain"),
        ({"name": "X", "domain": "a" * 254 + ".com"}, "domain"),
        ({"name": "", "domain": "rival.com"}, "name"),
        ({"name": "x" * 101, "domain": "rival.com"}, "name"),
        ({"name": "Ri\x00val", "domain": "rival.com"}, "name"),
        ({"name": "X", "domain": "rival.com", "aliases": [""]}, "aliases"),
        ({"name": "X", "domain": "rival.com", "aliases": [f"a{n}" for n in range(21)]}, "aliases"),
        ({"domain": "rival.com"}, "name"),
    ],
)
def test_what_adding_refuses(seo: Seo, fields: dict[str, object], path: str):
    body = problem(seo.request("seo.createCompetitor", fields, role="editor"), 400, "BAD_REQUEST")
    assert any(error["path"].startswith(path) for error in body["errors"]), body


def test_twenty_competitors_at_most(seo: Seo):
    for n in range(20):
        seo.add_competitor(name=f"C{n}", domain=f"c{n}.example")
    refused = seo.request("seo.createCompetitor", {"name": "C20", "domain": "c20.example"})
    assert "20" in problem(refused, 400, "BAD_REQUEST")["detail"]
    assert seo.competitors()["total"] == 20


def test_the_domain_is_immutable(seo: Seo):
    made = seo.add_competitor(name="Rival", domain="rival.com")
    refused = seo.request("seo.updateCompetitor", {"id": made["id"], "domain": "other.com"})
    body = problem(refused, 400, "BAD_REQUEST")
    assert any(error["path"] == "domain" for error in body["errors"]), body
    assert seo.competitors()["data"][0]["domain"] == "rival.com"


def test_roles(seo: Seo):
    problem(
        seo.request("seo.createCompetitor", {"name": "R", "domain": "r.com"}, role="member"),
        403,
        "FORBIDDEN",
    )
    made = seo.add_competitor(name="R", domain="r.com", role="editor")
    problem(
        seo.request("seo.updateCompetitor", {"id": made["id"], "name": "S"}, role="member"),
        403,
        "FORBIDDEN",
    )
    problem(
        seo.request("seo.deleteCompetitor", {"id": made["id"]}, role="editor"), 403, "FORBIDDEN"
    )
    assert seo.ok("seo.listCompetitors", {}, role="member")["total"] == 1


def test_another_organizations_competitor_is_not_found(seo: Seo, other: Seo):
    made = seo.add_competitor(name="Rival", domain="rival.com")
    assert other.competitors() == {"data": [], "total": 0}
    problem(
        other.request("seo.updateCompetitor", {"id": made["id"], "name": "X"}), 404, "NOT_FOUND"
    )
    problem(other.request("seo.deleteCompetitor", {"id": made["id"]}), 404, "NOT_FOUND")
    problem(seo.request("seo.deleteCompetitor", {"id": str(uuid.uuid4())}), 404, "NOT_FOUND")
    # The same domain is the other organization's to track too.
    assert other.add_competitor(name="Rival", domain="rival.com")["id"] != made["id"]
    assert seo.competitors()["data"][0]["name"] == "Rival"
