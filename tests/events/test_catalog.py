"""Every event type of the catalog has a test that makes it happen through the real operation
(or background work) and finds it where it lands: a type added to the catalog without one, or a
test renamed away, fails here."""

from __future__ import annotations

import re
from pathlib import Path

from contentplatform.events import catalog

ROOT = Path(__file__).resolve().parents[2]

DRAFTS = "tests/drafts/test_events.py"
WEBHOOKS = "tests/webhooks/test_endpoints.py"
LICENCES = "tests/media/test_license_alerts.py"
LICENCES_TOLD = "test_a_licence_drafts_use_is_told_once_as_it_nears_its_end_and_once_ended"
CRAWLS = "tests/website_scan/test_runs.py"

# The type -> the test proving it is emitted ("path::name").
PROVEN_BY = {
    "document.ready": "tests/events/test_documents.py::test_a_document_that_becomes_ready_is_told",
    "document.failed": (
        "tests/events/test_documents.py::test_a_document_that_fails_is_told_with_the_reason"
    ),
    "draft.created": f"{DRAFTS}::test_creating_a_draft_by_hand_is_announced_by_its_author",
    "draft.status_changed": f"{DRAFTS}::test_every_review_move_is_announced_by_who_made_it",
    "draft.assigned": (
        f"{DRAFTS}::test_assigning_is_announced_and_assigning_the_same_member_again_is_not"
    ),
    "draft.commented": f"{DRAFTS}::test_a_comment_is_announced_and_its_mentions_too",
    "comment.mentioned": f"{DRAFTS}::test_a_comment_is_announced_and_its_mentions_too",
    "draft.published": f"{DRAFTS}::test_auto_approval_and_publishing_are_announced",
    "draft.unpublished": (
        "tests/publishers/test_unpublish.py::test_the_trail_tells_of_each_copy_taken_down"
    ),
    "publish_attempt.failed": (
        "tests/publishers/test_unpublish.py::test_a_publish_that_fails_for_good_is_told_too"
    ),
    "job.run_completed": "tests/events/test_runs.py::test_a_job_run_that_wrote_its_draft_is_told",
    "job.run_failed": (
        "tests/events/test_runs.py::"
        "test_a_job_run_whose_generation_failed_is_told_with_the_runs_failure"
    ),
    "generation.run_failed": (
        "tests/events/test_runs.py::"
        "test_a_job_run_whose_generation_failed_is_told_with_the_runs_failure"
    ),
    "credits.low_balance": (
        "tests/events/test_credits.py::"
        "test_the_balance_falling_to_ten_percent_and_to_zero_is_told_once_each"
    ),
    "subscription.updated": (
        "tests/events/test_billing.py::test_a_change_of_plan_or_status_is_told_once"
    ),
    "member.added": "tests/events/test_team.py::test_a_first_login_adds_the_member_who_logged_in",
    "member.removed": "tests/events/test_team.py::test_an_admin_removes_a_member",
    "webhook.test": f"{WEBHOOKS}::test_a_test_event_is_delivered_signed",
    "webhook_endpoint.disabled": (
        "tests/webhooks/test_delivery.py::test_an_endpoint_failing_for_long_is_disabled"
    ),
    "member.role_changed": (
        "tests/events/test_team.py::test_an_admin_changes_a_role_audited_with_the_diff"
    ),
    "invitation.created": (
        "tests/events/test_team.py::test_invitations_made_and_revoked_are_audited"
    ),
    "invitation.revoked": (
        "tests/events/test_team.py::test_invitations_made_and_revoked_are_audited"
    ),
    "settings.updated": (
        "tests/events/test_settings.py::"
        "test_a_settings_update_is_audited_with_the_fields_it_changed"
    ),
    "api_key.created": (
        "tests/events/test_settings.py::test_api_keys_made_and_revoked_are_audited_without_the_key"
    ),
    "api_key.revoked": (
        "tests/events/test_settings.py::test_api_keys_made_and_revoked_are_audited_without_the_key"
    ),
    "feature.opt_in_changed": (
        "tests/events/test_settings.py::test_opting_out_of_a_beta_and_back_in_is_audited"
    ),
    "tenant.suspended": (
        "tests/admin/test_tenants.py::"
        "test_a_suspended_tenant_is_refused_at_once_and_admitted_again_when_reactivated"
    ),
    "tenant.reactivated": (
        "tests/admin/test_tenants.py::"
        "test_a_suspended_tenant_is_refused_at_once_and_admitted_again_when_reactivated"
    ),
    "tenant.overridden": (
        "tests/admin/test_tenants.py::test_a_limits_override_wins_over_the_plan_and_is_audited"
    ),
    "credits.adjusted": (
        "tests/admin/test_credits.py::test_a_grant_adds_an_admin_bucket_once_per_key"
    ),
    "feature.overridden": (
        "tests/admin/test_flags.py::test_tenant_overrides_win_and_are_removed_by_null"
    ),
    "inbound_event.replayed": (
        "tests/admin/test_inbound.py::test_a_failed_event_replayed_is_applied"
    ),
    "publisher.secret_rotated": (
        "tests/publishers/test_rotate_secret.py::"
        "test_a_rotation_is_in_the_audit_trail_without_the_secret"
    ),
    "webhook_endpoint.created": f"{WEBHOOKS}::test_endpoint_changes_are_audited",
    "webhook_endpoint.updated": f"{WEBHOOKS}::test_endpoint_changes_are_audited",
    "webhook_endpoint.deleted": f"{WEBHOOKS}::test_endpoint_changes_are_audited",
    "webhook_endpoint.secret_rotated": f"{WEBHOOKS}::test_endpoint_changes_are_audited",
    "crawl.started": f"{CRAWLS}::test_the_crawl_is_told_as_events",
    "crawl.completed": f"{CRAWLS}::test_the_crawl_is_told_as_events",
    "crawl.cancelled": (
        f"{CRAWLS}::test_cancelling_a_running_crawl_keeps_what_it_stored_as_a_partial_snapshot"
    ),
    "crawl.failed": f"{CRAWLS}::test_a_site_whose_robots_txt_fails_is_not_crawled_and_is_told",
    "media.license_expiring": f"{LICENCES}::{LICENCES_TOLD}",
    "media.license_expired": f"{LICENCES}::{LICENCES_TOLD}",
    "support_ticket.replied": (
        "tests/support_tickets/test_tickets.py::"
        "test_staff_answers_notes_and_the_customer_sees_only_the_answer"
    ),
    "seo.connection_needs_reauth": (
        "tests/seo/connections/test_connections.py::"
        "test_a_revoked_grant_turns_needs_reauth_and_tells_the_admins"
    ),
    "seo.audit_issue_on_published_page": (
        "tests/seo/audits/test_audits.py::"
        "test_a_new_error_on_a_page_we_published_lately_alerts_and_offers_the_draft"
    ),
    "impersonation.started": (
        "tests/admin_impersonation/test_operations.py::test_the_tenants_admins_are_notified"
    ),
    "impersonation.ended": (
        "tests/admin_impersonation/test_operations.py::test_ending_is_at_once_and_idempotent"
    ),
}


def test_every_type_of_the_catalog_names_the_test_that_proves_it() -> None:
    assert set(PROVEN_BY) == set(catalog.TYPES)


def test_every_named_test_exists() -> None:
    missing = []
    for name, test in PROVEN_BY.items():
        path, _, function = test.partition("::")
        file = ROOT / path
        found = file.is_file() and re.search(
            rf"^(async )?def {re.escape(function)}\(", file.read_text(), re.MULTILINE
        )
        if not found:
            missing.append(f"{name}: {test}")
    assert not missing, "\n".join(missing)
