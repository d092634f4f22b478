"""seo.listActions, createAction, getAction, updateAction, dismissAction, generateActions,
createJobFromAction and bulkActions over REST and RPC: manual actions and their moves (each in
the history), the documented errors (400, 404, 409), the roles (a member reads, an editor
writes), jobs made from content actions, bulk results per id, and another organization that
sees and touches none of it."""

from __future__ import annotations

import uuid

from contentplatform.config import Settings
from tests.seo.actions.support import Actions, end_run
from tests.support.orgs import org_fixture
from tests.support.problems import problem

actions = org_fixture(Actions)
other = org_fixture(Actions, second=True)


def test_a_manual_action_is_added_listed_and_read(actions: Actions, other: Actions) -> None:
    editor = actions.users["editor"]
    made = actions.add(
        "<b>Write</b> the compost guide",
        description="For the spring campaign.",
        type="create_content",
        priority="high",
        targetUrls=["https://example.com/compost"],
        keywords=["compost", "compost"],
        assigneeId=editor,
        dueDate="2030-04-01",
    )
    # Markup stripped; manual, open; impact the floor of its priority band.
    assert made["title"] == "Write the compost guide"
    assert (made["source"], made["status"], made["priority"]) == ("manual", "open", "high")
    assert (made["impact_score"], made["effort"]) == (60, "high")
    assert made["keywords"] == ["compost"] and made["assignee_id"] == editor
    assert made["due_date"] == "2030-04-01" and len(made["fingerprint"]) == 64
    low = actions.add("Check the sitemap", priority="low")
    detail = actions.detail(made["id"])
    assert detail["history"] == [
        {
            "at": detail["history"][0]["at"],
            "actor": editor,
            "from": None,
            "to": "open",
            "note": "Added by hand.",
        }
    ]
    assert detail["job"] is None and detail["draft"] is None and detail["verification"] is None
    # Filters and orders.
    listed = actions.actions()
    assert [row["id"] for row in listed["data"]] == [made["id"], low["id"]]
    assert (listed["total"], listed["page"], listed["limit"]) == (2, 1, 100)
    ascending = actions.actions(sortBy="priority", sortOrder="asc")["data"]
    assert [row["id"] for row in ascending] == [low["id"], made["id"]]
    assert [r["id"] for r in actions.actions(sortBy="due_date")["data"]] == [made["id"], low["id"]]
    assert actions.actions(type="create_content")["total"] == 1
    assert actions.actions(source="manual", priority="low")["total"] == 1
    assert actions.actions(search="COMPOST")["total"] == 1
    assert actions.actions(assigneeId=editor)["total"] == 1
    assert actions.actions(pageId=str(uuid.uuid4()))["total"] == 0
    assert actions.actions(status="done")["total"] == 0
    second = actions.actions(limit=1, page=2)
    assert [row["id"] for row in second["data"]] == [low["id"]] and second["total"] == 2
    # Another organization sees none of it.
    assert other.actions(status="all")["total"] == 0
    problem(other.request("seo.getAction", {"id": made["id"]}), 404, "NOT_FOUND")


def test_inputs_and_roles_are_checked(actions: Actions, other: Actions) -> None:
    for body in (
        {"title": ""},
        {"title": "a\u0000b"},
        {"title": "&nbsp;"},
        {"title": "   "},
        {"title": "x" * 201},
        {"title": "ok", "type": "nonsense"},
        {"title": "ok", "targetUrls": ["javascript:alert(1)"]},
        {"title": "ok", "keywords": ["k"] * 21},
        {"title": "ok", "dueDate": "tomorrow"},
    ):
        problem(actions.request("seo.createAction", body), 400, "BAD_REQUEST")
    # An assignee who is not a member of the organization.
    outsider = other.users["editor"]
    other.whoami("editor")
    problem(
        actions.request("seo.createAction", {"title": "ok", "assigneeId": outsider}),
        400,
        "BAD_REQUEST",
    )
    made = actions.add()
    problem(
        actions.request("seo.updateAction", {"id": made["id"], "assigneeId": outsider}),
        400,
        "BAD_REQUEST",
    )
    problem(
        actions.request("seo.dismissAction", {"id": made["id"], "reason": " "}), 400, "BAD_REQUEST"
    )
    problem(
        actions.request("seo.updateAction", {"id": made["id"], "status": "verified"}),
        400,
        "BAD_REQUEST",
    )
    # A member reads and writes nothing.
    assert actions.ok("seo.getAction", {"id": made["id"]}, role="member")["id"] == made["id"]
    for operation, body in (
        ("seo.createAction", {"title": "ok"}),
        ("seo.updateAction", {"id": made["id"], "status": "in_progress"}),
        ("seo.dismissAction", {"id": made["id"], "reason": "no"}),
        ("seo.generateActions", {}),
        ("seo.createJobFromAction", {"id": made["id"]}),
        ("seo.bulkActions", {"action": "start", "actionIds": [made["id"]]}),
    ):
        problem(actions.request(operation, body, role="member"), 403, "FORBIDDEN")
    # Unknown ids, and another organization's, are not found.
    for who, action_id in ((actions, str(uuid.uuid4())), (other, made["id"])):
        for operation, body in (
            ("seo.getAction", {}),
            ("seo.updateAction", {"status": "in_progress"}),
            ("seo.dismissAction", {"reason": "no"}),
            ("seo.createJobFromAction", {}),
        ):
            problem(who.request(operation, {"id": action_id, **body}), 404, "NOT_FOUND")
    assert actions.detail(made["id"])["status"] == "open"


def test_moves_follow_the_states_and_write_the_history(actions: Actions) -> None:
    made = actions.add()
    action_id = made["id"]

    def patch(**body: object) -> dict[str, object]:
        return actions.ok("seo.updateAction", {"id": action_id, **body})  # type: ignore[no-any-return]

    assert patch(status="in_progress")["status"] == "in_progress"
    assert patch(status="open")["status"] == "open"
    done = patch(status="done", title="Compost guide, written", priority="critical")
    assert done["status"] == "done" and done["done_at"] and done["priority"] == "critical"
    # Done -> in_progress is no move: 409 naming the status.
    refused = problem(
        actions.request("seo.updateAction", {"id": action_id, "status": "in_progress"}),
        409,
        "CONFLICT",
    )
    assert "is done" in refused["detail"]
    refused = problem(
        actions.request("seo.dismissAction", {"id": action_id, "reason": "no"}), 409, "CONFLICT"
    )
    assert "is done" in refused["detail"]
    reopened = patch(status="open", dueDate=None, assigneeId=None)
    assert reopened["status"] == "open" and reopened["done_at"] is None
    # The same status is no move.
    assert patch(status="open")["status"] == "open"
    dismissed = actions.ok(
        "seo.dismissAction", {"id": action_id, "reason": "Not for <i>this</i> site."}
    )
    assert dismissed["status"] == "dismissed"
    assert dismissed["dismissed_reason"] == "Not for this site."
    problem(
        actions.request("seo.updateAction", {"id": action_id, "status": "done"}), 409, "CONFLICT"
    )
    restored = patch(status="open")
    assert restored["status"] == "open" and restored["dismissed_reason"] is None
    history = actions.detail(action_id)["history"]
    assert [(h["from"], h["to"]) for h in history] == [
        (None, "open"),
        ("open", "in_progress"),
        ("in_progress", "open"),
        ("open", "done"),
        ("done", "open"),
        ("open", "dismissed"),
        ("dismissed", "open"),
    ]
    assert history[5]["note"] == "Not for this site."
    assert {h["actor"] for h in history} == {actions.users["editor"]}


def test_bulk_reports_each_id_and_never_touches_another_organizations(
    actions: Actions, other: Actions
) -> None:
    mine = [actions.add(f"Task {n}")["id"] for n in range(3)]
    theirs = other.add("Their task")["id"]
    unknown = str(uuid.uuid4())
    started = actions.ok(
        "seo.bulkActions", {"action": "start", "actionIds": [*mine[:2], theirs, unknown]}
    )
    assert started["success"] is False and started["affected"] == 2
    assert [(r["id"], r["ok"], r["error"]) for r in started["results"]] == [
        (mine[0], True, None),
        (mine[1], True, None),
        (theirs, False, "NOT_FOUND"),
        (unknown, False, "NOT_FOUND"),
    ]
    assert other.detail(theirs)["status"] == "open"
    # Each id by the single operations' rules: in progress already is a CONFLICT.
    again = actions.ok("seo.bulkActions", {"action": "start", "actionIds": mine})
    assert [r["error"] for r in again["results"]] == ["CONFLICT", "CONFLICT", None]
    completed = actions.ok("seo.bulkActions", {"action": "complete", "actionIds": mine})
    assert completed == {
        "success": True,
        "affected": 3,
        "results": [{"id": i, "ok": True, "error": None} for i in mine],
    }
    reopened = actions.ok("seo.bulkActions", {"action": "reopen", "actionIds": mine[:1]})
    assert reopened["affected"] == 1
    dismissed = actions.ok(
        "seo.bulkActions", {"action": "dismiss", "actionIds": mine, "reason": "Out of scope."}
    )
    assert [r["error"] for r in dismissed["results"]] == [None, "CONFLICT", "CONFLICT"]
    assert actions.detail(mine[0])["dismissed_reason"] == "Out of scope."
    member = actions.users["member"]
    actions.whoami("member")
    assigned = actions.ok(
        "seo.bulkActions", {"action": "assign", "actionIds": [*mine, theirs], "assigneeId": member}
    )
    assert assigned["affected"] == 3 and assigned["results"][3]["error"] == "NOT_FOUND"
    assert actions.actions(assigneeId=member, status="all")["total"] == 3
    assert other.detail(theirs)["assignee_id"] is None
    # What each verb needs.
    for body in (
        {"action": "dismiss", "actionIds": mine},
        {"action": "assign", "actionIds": mine},
        {"action": "start", "actionIds": []},
        {"action": "start", "actionIds": [str(uuid.uuid4()) for _ in range(101)]},
        {"action": "verify", "actionIds": mine},
    ):
        problem(actions.request("seo.bulkActions", body), 400, "BAD_REQUEST")
    problem(
        actions.request(
            "seo.bulkActions",
            {"action": "assign", "actionIds": mine, "assigneeId": other.users["editor"]},
        ),
        400,
        "BAD_REQUEST",
    )


def test_generation_without_signals_makes_nothing_and_checks_the_audit(
    actions: Actions, other: Actions
) -> None:
    assert actions.generate() == {
        "created": 0,
        "updated": 0,
        "reopened": 0,
        "verified": 0,
        "unchanged": 0,
        "data": [],
    }
    # AI visibility with no prompt tracked makes nothing.
    assert actions.generate(sources=["ai_visibility"])["created"] == 0
    problem(
        actions.request("seo.generateActions", {"auditId": str(uuid.uuid4())}), 404, "NOT_FOUND"
    )
    problem(actions.request("seo.generateActions", {"sources": ["manual"]}), 400, "BAD_REQUEST")


def test_a_content_action_becomes_a_job(actions: Actions, other: Actions) -> None:
    content = actions.add(
        "Write about compost bins", type="create_content", keywords=["compost bin"]
    )
    made = actions.ok(
        "seo.createJobFromAction",
        {"id": content["id"], "scheduledDate": "2031-05-01T08:00:00Z", "autoPublish": True},
    )
    job, instance = made["job"], made["instance"]
    assert made["action"]["status"] == "in_progress" and made["action"]["job_id"] == job["id"]
    assert (job["name"], job["job_type"], job["status"]) == (
        "Write about compost bins",
        "one_off",
        "active",
    )
    assert job["seo_action_id"] == content["id"] and job["auto_publish"] is True
    assert job["topics"] == ["Write about compost bins"] and job["keywords"] == ["compost bin"]
    assert job["content_instructions"].startswith("Written for the SEO action")
    assert instance["scheduled_date"].startswith("2031-05-01T08:00:00")
    assert instance["job_id"] == job["id"] and instance["status"] == "pending"
    assert (
        actions.ok("jobs.getById", {"id": job["id"]}, role="member")["seo_action_id"]
        == content["id"]
    )
    # Another instance on that job, from an in-progress action (no status change).
    second = actions.add("Compost bins compared", type="improve_snippet")
    on_job = actions.ok(
        "seo.createJobFromAction",
        {
            "id": second["id"],
            "mode": "existing_job",
            "jobId": job["id"],
            "scheduledDate": "2031-06-01T08:00:00Z",
            "keywords": ["best compost bin"],
        },
    )
    assert on_job["job"]["id"] == job["id"]
    assert on_job["instance"]["keywords"] == ["best compost bin"]
    assert "Compost bins compared" in on_job["instance"]["content_instructions"]
    # The same date on that job is taken.
    third = actions.add("Bins again", type="create_content")
    problem(
        actions.request(
            "seo.createJobFromAction",
            {
                "id": third["id"],
                "mode": "existing_job",
                "jobId": job["id"],
                "scheduledDate": "2031-06-01T08:00:00Z",
            },
        ),
        409,
        "CONFLICT",
    )
    # existing_job needs a job of this organization.
    problem(
        actions.request("seo.createJobFromAction", {"id": third["id"], "mode": "existing_job"}),
        400,
        "BAD_REQUEST",
    )
    theirs = other.ok(
        "jobs.create", {"name": "Theirs", "topics": ["x"], "status": "paused"}, role="editor"
    )
    problem(
        actions.request(
            "seo.createJobFromAction",
            {"id": third["id"], "mode": "existing_job", "jobId": theirs["id"]},
        ),
        404,
        "NOT_FOUND",
    )
    # Not a content type, not open or in progress, or a refresh: 409.
    custom = actions.add("Talk to the developers")
    refresh = actions.add("Refresh the old post", type="refresh_content")
    done = actions.add("Done already", type="create_content")
    actions.ok("seo.updateAction", {"id": done["id"], "status": "done"})
    for action_id, says in (
        (custom["id"], "custom"),
        (refresh["id"], "not built yet"),
        (done["id"], "done"),
    ):
        refused = problem(
            actions.request("seo.createJobFromAction", {"id": action_id}), 409, "CONFLICT"
        )
        assert says in refused["detail"]
    assert actions.detail(refresh["id"])["status"] == "open"


def test_runs_generate_only_while_the_settings_say_so(actions: Actions, settings: Settings) -> None:
    failing = [{"url": "https://example.com/lost", "verdict": "FAIL"}]
    actions.ok("seo.updateSettings", {"actions": {"autoGenerate": False}}, role="admin")
    end_run(settings, actions.tenant_id, "url_inspection", inspections=failing)
    assert actions.actions(status="all")["total"] == 0
    actions.ok("seo.updateSettings", {"actions": {"autoGenerate": True}}, role="admin")
    end_run(settings, actions.tenant_id, "url_inspection", inspections=failing)
    (made,) = actions.actions()["data"]
    assert (made["type"], made["source"]) == ("fix_indexing", "url_inspection")
    assert made["target_urls"] == ["https://example.com/lost"]
    # No clicks on the page: not critical by the indexing rule; its impact decides.
    assert made["impact_score"] == 40 and made["priority"] == "medium"
    assert actions.generate(sources=["url_inspection"])["created"] == 0
