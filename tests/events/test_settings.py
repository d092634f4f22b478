"""The audit trail of settings over REST and RPC: one `settings.updated` per write that changed
something, its `changes` the diff of the fields it changed (tenant settings, brand voice,
content strategy, content rules); API keys made and revoked (never the key); a beta feature
opted out and in. All admins' actions, audit only, none seen by another organization."""

from __future__ import annotations

from contentplatform.auth.context import Role
from contentplatform.config import Settings
from tests.events.support import Trail, by_user, payloads
from tests.support.orgs import org_fixture

trail = org_fixture(Trail)
other = org_fixture(Trail, second=True)


def audited(trail: Trail, resource_type: str) -> list[dict]:
    """The tenant's settings.updated rows about `resource_type`, newest first."""
    return trail.audit(action="settings.updated", resourceType=resource_type, limit=100)["data"]


def test_a_settings_update_is_audited_with_the_fields_it_changed(
    trail: Trail, other: Trail
) -> None:
    trail.ok(
        "settings.update",
        {
            "name": "Fernleaf Gardens",
            "blog": {"title": "Garden notes", "postsPerPage": 10},  # 10 is what it was
            "security": {"allowedRedirectOrigins": ["https://app.example.test"]},
        },
    )

    (row,) = audited(trail, "settings")
    assert row["actor"] == by_user(trail, "admin")
    assert row["resource_id"] == str(trail.tenant_id)
    assert row["changes"] == {
        "name": {"from": trail.org, "to": "Fernleaf Gardens"},
        "blog.title": {"from": "", "to": "Garden notes"},
        "security.allowed_redirect_origins": {"from": [], "to": ["https://app.example.test"]},
    }
    # An update that changes nothing is no event; the next one names only its own change.
    trail.ok("settings.update", {"blog": {"title": "Garden notes"}})
    trail.ok("settings.update", {"review": {"allowSelfApproval": False}})
    rows = audited(trail, "settings")
    assert len(rows) == 2
    assert rows[0]["changes"] == {
        "review.allow_self_approval": {"from": True, "to": False},
    }
    assert "settings.updated" not in trail.actions()  # audit only
    assert other.audit(action="settings.updated")["total"] == 0


def test_the_organizations_time_zone_is_audited_as_a_setting(trail: Trail) -> None:
    trail.ok("jobs.updateTimezone", {"timezone": "Europe/Berlin"})
    trail.ok("jobs.updateTimezone", {"timezone": "Europe/Berlin"})  # the same: no event

    (row,) = audited(trail, "settings")
    assert row["changes"] == {"timezone": {"from": "UTC", "to": "Europe/Berlin"}}
    assert row["actor"] == by_user(trail, "admin")


def test_brand_voice_and_strategy_versions_are_audited(trail: Trail) -> None:
    trail.ok("settings.updateBrandVoice", {"tone": ["warm"], "readingGrade": 8})
    trail.ok("settings.updateStrategy", {"excludedTopics": ["pricing"]})

    (voice,) = audited(trail, "brand_voice")
    assert voice["resource_id"] == str(trail.tenant_id)
    assert voice["actor"] == by_user(trail, "admin")
    assert voice["changes"] == {
        "version": {"from": 0, "to": 1},
        "tone": {"from": [], "to": ["warm"]},
        "reading_grade": {"from": 9, "to": 8},
    }
    (strategy,) = audited(trail, "content_strategy")
    assert strategy["changes"] == {
        "version": {"from": 0, "to": 1},
        "excluded_topics": {"from": [], "to": ["pricing"]},
    }


def test_content_rules_made_changed_and_deleted_are_audited(trail: Trail) -> None:
    rule = trail.ok(
        "settings.createRule",
        {"name": "No hype", "type": "banned_phrase", "config": {"phrases": ["synergy"]}},
    )
    trail.ok("settings.updateRule", {"id": rule["id"], "severity": "error"})
    trail.ok("settings.deleteRule", {"id": rule["id"]})

    deleted, changed, made = audited(trail, "content_rule")
    assert {row["resource_id"] for row in (deleted, changed, made)} == {rule["id"]}
    assert made["changes"]["name"] == {"from": None, "to": "No hype"}
    assert made["changes"]["severity"] == {"from": None, "to": "warning"}
    assert changed["changes"] == {"severity": {"from": "warning", "to": "error"}}
    assert deleted["changes"]["name"] == {"from": "No hype", "to": None}
    assert all(row["actor"] == by_user(trail, "admin") for row in (deleted, changed, made))


def test_api_keys_made_and_revoked_are_audited_without_the_key(
    trail: Trail, settings: Settings
) -> None:
    made = trail.ok("settings.createApiKey", {"name": "Nightly export", "role": "editor"})
    trail.ok("settings.revokeApiKey", {"id": made["id"]})

    created = trail.one("api_key.created", made["id"], scope="audit")
    revoked = trail.one("api_key.revoked", made["id"], scope="audit")
    for row in (created, revoked):
        assert row["resource_type"] == "api_key"
        assert row["actor"] == by_user(trail, "admin")
    assert "api_key.created" not in trail.actions()
    told = payloads(settings, trail.tenant_id, "api_key.created")
    assert told == [
        {
            "key_id": made["id"],
            "name": "Nightly export",
            "prefix": made["prefix"],
            "role": Role.editor.value,
        }
    ]
    assert made["secret"] not in str(told + payloads(settings, trail.tenant_id, "api_key.revoked"))
    # Revoking again changes nothing, and tells nothing.
    trail.ok("settings.revokeApiKey", {"id": made["id"]})
    assert trail.audit(action="api_key.revoked")["total"] == 1


def test_opting_out_of_a_beta_and_back_in_is_audited(trail: Trail) -> None:
    options = {"key": "topic_suggestions"}
    trail.ok("features.setOptIn", {**options, "enabled": False})
    trail.ok("features.setOptIn", {**options, "enabled": True})
    trail.ok("features.setOptIn", {**options, "enabled": True})  # no change: no event

    back_in, out = trail.audit(action="feature.opt_in_changed")["data"]
    assert out["changes"] == {
        "enabled": {"from": True, "to": False},
        "source": {"from": "default", "to": "opt_in"},
    }
    assert back_in["changes"] == {"enabled": {"from": False, "to": True}}
    assert back_in["resource_type"] == "feature"
    assert back_in["actor"] == by_user(trail, "admin")
    assert "feature.opt_in_changed" not in trail.actions()
