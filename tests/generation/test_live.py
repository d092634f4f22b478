"""Live generation runs over real HTTP, on the offline writer: a run's event stream
(generation.streamRun, read with an SSE client over the service's socket: every step to percent
100 and exactly one terminal event, resumption with Last-Event-ID, a failed run's `error`, a run
whose log is gone), generation.listRuns, cancelRun, retryRun, regenerateDraft and suggestTopics
(REST and RPC through the `call` fixture), each with its error paths, roles and a second tenant.

The model stand-in tests (a cancel mid-call, a retry reusing the calls that were made) are in
test_live_process.py.
"""

from __future__ import annotations

import math
import re
import uuid
from typing import Any

import pytest

from contentplatform.drafts import html
from tests.documents.support import hold_all_but
from tests.generation.live import (
    TERMINAL,
    Frame,
    Live,
    progress_of,
    queued_behind_the_back,
    wait_until,
)
from tests.generation.support import BEEKEEPING, HANDBOOK, blog_reservations, chunk_ids_of
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.support.streams import forget_stream

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

HOLD = 40
STEPS = ["retrieve", "outline", "write", "optimize", "score", "finalize"]
TOPIC = "Smart irrigation scheduling"
KEYWORDS = ["smart irrigation", "watering schedule"]
CANCELLED = "Generation was cancelled."
H2 = re.compile(r'<h2 id="([^"]*)">(.*?)</h2>')

live = org_fixture(Live)
other = org_fixture(Live, second=True)


def check_frames(frames: list[Frame], run_id: str) -> None:
    """Ids `<run>:1..n` without a gap, each data with its `seq`, the run and a time; exactly one
    terminal event, the last."""
    assert [frame_id for frame_id, _, _ in frames] == [
        f"{run_id}:{n}" for n in range(1, len(frames) + 1)
    ]
    for n, (_, _, data) in enumerate(frames, 1):
        assert data["seq"] == n
        assert data["run_id"] == run_id
        assert data["created_at"].endswith("Z")  # as every instant the API writes
    events = [event for _, event, _ in frames]
    assert sum(event in TERMINAL for event in events) == 1
    assert events[-1] in TERMINAL
    assert set(events[:-1]) == {"progress"}


def written(live: Live, **data: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """An article generated (and waited for): its run and its draft."""
    run, draft = live.generate(**data)
    assert run["status"] == "succeeded", run
    return run, draft


def sections(content: str) -> list[tuple[str, str, str]]:
    """(anchor, heading, body) of each <h2> section of the content."""
    found = list(H2.finditer(content))
    return [
        (
            match.group(1),
            match.group(2),
            content[match.end() : found[i + 1].start() if i + 1 < len(found) else len(content)],
        )
        for i, match in enumerate(found)
    ]


# --- the run's stream ---------------------------------------------------------------------------


def test_a_runs_stream_follows_every_step_to_100_and_ends_with_run_finished(live):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    started = live.start(topic=TOPIC, keywords=KEYWORDS)
    run_id = started["run"]["id"]

    frames = live.events(run_id)  # opened at once: the run is queued or under way

    check_frames(frames, run_id)
    progress = progress_of(frames)
    percents = [p["percent"] for p in progress]
    assert percents == sorted(percents) and percents[-1] == 100
    assert percents[0] < 10
    assert [p["step"] for p in progress][:1] == ["retrieve"]
    assert {p["step"] for p in progress} == set(STEPS)
    assert [STEPS.index(p["step"]) for p in progress] == sorted(
        STEPS.index(p["step"]) for p in progress
    )
    assert {p["status"] for p in progress[:-1]} == {"running"}
    assert (progress[-1]["status"], progress[-1]["step"]) == ("succeeded", "finalize")
    assert len(progress) >= 8  # started, retrieved, outlined, each part, optimized, scored, done
    run, draft = live.get_run(run_id), live.draft(started["id"])
    assert run["status"] == "succeeded"
    _, event, end = frames[-1]
    assert event == "run_finished"
    assert end == {
        "run_id": run_id,
        "status": "succeeded",
        "draft_id": started["id"],
        "seo_score": draft["seo_score"],
        "credits_charged": run["credits_committed"],
        "created_at": end["created_at"],
        "seq": len(frames),
    }
    assert draft["seo_score"] is not None and run["credits_committed"] >= 1

    # A finished run's stream replays the same events, over REST and RPC, for every role.
    assert live.events(run_id) == frames
    assert live.events(run_id, rpc=True) == frames
    assert live.events(run_id, role="admin") == frames


def test_a_reader_that_disconnects_resumes_after_its_last_event_id_with_exactly_the_rest(live):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    started = live.start(topic="Watering schedules", keywords=["irrigation"])
    run_id = started["run"]["id"]

    seen = live.events(run_id, first=3)  # then the client goes away
    rest = live.events(run_id, last_event_id=seen[-1][0])
    whole = [*seen, *rest]
    check_frames(whole, run_id)
    assert live.events(run_id) == whole
    # The browser's form (EventSource reconnecting: the query), and a bare number.
    assert live.events(run_id, query_id=whole[0][0]) == whole[1:]
    assert live.events(run_id, last_event_id="5") == whole[5:]
    # Mid-way through again, from a second and a third disconnection.
    again = live.events(run_id, last_event_id=whole[1][0], first=2)
    assert again == whole[2:4]
    assert live.events(run_id, last_event_id=again[-1][0]) == whole[4:]

    for refused in ("nope", "-1", f"{uuid.uuid4()}:2", "1.5"):
        problem(live.stream_problem(run_id, **{"Last-Event-ID": refused}), 400, "BAD_REQUEST")


@pytest.mark.own_org
def test_a_failed_run_ends_its_stream_with_a_terminal_error(live):
    started = live.start(topic="Smart irrigation scheduling")  # no documents at all
    run_id = started["run"]["id"]

    frames = live.events(run_id)

    check_frames(frames, run_id)
    run = live.get_run(run_id)
    assert run["status"] == "failed"
    assert progress_of(frames)[-1]["status"] == "failed"
    _, event, error = frames[-1]
    assert event == "error"
    assert error == {
        "run_id": run_id,
        "code": "NO_SOURCES",
        "detail": run["error"]["message"],
        "retryable": False,
        "created_at": error["created_at"],
        "seq": len(frames),
    }


def test_a_finished_run_whose_log_is_gone_streams_its_end_from_the_run(live, settings):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    run, draft = written(live, topic="Installation")
    forget_stream(settings, f"run:{run['id']}")  # expired and purged, or a run from before

    frames = live.events(run["id"])

    check_frames(frames, run["id"])
    assert [event for _, event, _ in frames] == ["progress", "run_finished"]
    last, end = frames[0][2], frames[1][2]
    assert (last["status"], last["step"], last["percent"]) == ("succeeded", "finalize", 100)
    assert (end["status"], end["draft_id"]) == ("succeeded", draft["id"])
    assert (end["seo_score"], end["credits_charged"]) == (
        draft["seo_score"],
        run["credits_committed"],
    )
    assert live.events(run["id"]) == frames  # written once


def test_a_stream_is_refused_before_it_opens_as_a_problem(live, other, client):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    started = live.start(topic="Installation")
    run_id = started["run"]["id"]

    problem(other.stream_problem(run_id), 404, "NOT_FOUND")
    problem(live.stream_problem(str(uuid.uuid4())), 404, "NOT_FOUND")
    problem(live.stream_problem("not-a-uuid"), 400, "BAD_REQUEST")
    problem(client.get(f"/v1/generation/runs/{run_id}/events"), 401, "UNAUTHORIZED")
    live.wait(run_id)
    problem(other.stream_problem(run_id), 404, "NOT_FOUND")


# --- listRuns -----------------------------------------------------------------------------------


@pytest.mark.own_org
def test_runs_are_listed_newest_first_and_filtered(live, other, settings):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    first, first_draft = written(live, topic="Installation")
    second, _ = written(live, topic="Watering schedules")
    queued, _ = queued_behind_the_back(settings, live.tenant_id, "Troubleshooting")
    assert live.cancel(queued).status_code == 200
    job = live.ok("jobs.create", {"name": "Garden", "topics": ["Soil moisture sensors"]})
    instance = live.ok("jobs.trigger", {"id": job["id"]}, role="editor")
    by_job = live.finished(instance["run_id"])

    listed = live.runs()
    assert (listed["total"], listed["page"], listed["limit"]) == (4, 1, 20)
    assert [run["id"] for run in listed["data"]] == [
        by_job["id"],
        queued,
        second["id"],
        first["id"],
    ]
    assert listed["data"][3] == live.get_run(first["id"])
    assert [r["id"] for r in live.runs(status="cancelled")["data"]] == [queued]
    assert [r["id"] for r in live.runs(status="succeeded", limit=1, page=2)["data"]] == [
        second["id"]
    ]
    assert [r["id"] for r in live.runs(draftId=first_draft["id"])["data"]] == [first["id"]]
    assert [r["id"] for r in live.runs(jobId=job["id"])["data"]] == [by_job["id"]]
    assert by_job["job_id"] == job["id"]
    assert live.runs(jobId=str(uuid.uuid4()))["total"] == 0
    assert live.runs(page=9)["data"] == []
    for role in ("editor", "admin"):
        assert live.runs(role=role) == listed

    assert other.runs() == {"data": [], "total": 0, "page": 1, "limit": 20}
    assert other.runs(draftId=first_draft["id"])["total"] == 0
    for bad in ({"limit": 0}, {"limit": 101}, {"page": 0}, {"status": "done"}, {"jobId": "x"}):
        problem(live.request("generation.listRuns", bad, role="member"), 400, "BAD_REQUEST")


# --- cancelRun ----------------------------------------------------------------------------------


@pytest.mark.own_org
def test_cancelling_a_queued_run_rejects_its_draft_releases_its_hold_and_ends_its_stream(
    live, settings
):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    run_id, draft_id = queued_behind_the_back(settings, live.tenant_id, "Installation")

    problem(live.cancel(run_id, role="member"), 403, "FORBIDDEN")
    answer = live.cancel(run_id)

    assert answer.status_code == 200, answer.text
    run = answer.json()
    assert (run["id"], run["status"], run["credits_committed"]) == (run_id, "cancelled", None)
    assert run["error"] == {
        "code": "CANCELLED",
        "message": "The run was cancelled.",
        "retryable": False,
    }
    assert run["finished_at"] is not None
    assert live.get_run(run_id) == run
    draft = live.draft(draft_id)
    assert (draft["status"], draft["rejection_reason"]) == ("rejected", CANCELLED)
    (hold,) = blog_reservations(settings, live.tenant_id)
    assert (hold["id"], hold["status"]) == (run["reservation_id"], "released")

    frames = live.events(run_id)
    check_frames(frames, run_id)
    assert [event for _, event, _ in frames] == ["progress", "run_finished"]
    assert frames[0][2]["status"] == "cancelled"
    end = frames[-1][2]
    assert (end["status"], end["draft_id"], end["seo_score"], end["credits_charged"]) == (
        "cancelled",
        draft_id,
        None,
        None,
    )

    problem(live.cancel(run_id), 409, "CONFLICT")
    # The reconciler leaves an ended run alone: nothing restarts it.
    assert live.get_run(run_id) == run


def test_a_finished_run_cannot_be_cancelled_and_another_tenants_run_is_404(live, other):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    run, draft = written(live, topic="Installation")
    body = problem(live.cancel(run["id"]), 409, "CONFLICT")
    assert "succeeded" in body["detail"]
    assert live.get_run(run["id"]) == run
    assert live.draft(draft["id"]) == draft
    problem(other.cancel(run["id"]), 404, "NOT_FOUND")
    problem(live.cancel(str(uuid.uuid4())), 404, "NOT_FOUND")


# --- retryRun -----------------------------------------------------------------------------------


@pytest.mark.own_org
def test_a_failed_run_is_retried_into_the_same_draft_under_a_new_hold(live, settings):
    started = live.start(topic=TOPIC, keywords=KEYWORDS, idempotencyKey="first")
    failed = live.finished(started["run"]["id"])
    assert (failed["status"], failed["error"]["code"]) == ("failed", "NO_SOURCES")
    live.ingest("Fernleaf handbook.md", HANDBOOK)  # what it lacked

    problem(live.retry(failed["id"], "again", role="member"), 403, "FORBIDDEN")
    answer = live.retry(failed["id"], "again")

    assert answer.status_code == 200, answer.text
    run = answer.json()
    assert run["id"] != failed["id"]
    assert (run["kind"], run["retry_of"], run["draft_id"]) == ("blog", failed["id"], started["id"])
    assert run["status"] in ("queued", "running", "succeeded")
    assert run["reservation_id"] != failed["reservation_id"]
    # The same key is the same retry; a key of another run is 409.
    assert live.retry(failed["id"], "again").json()["id"] == run["id"]
    problem(live.retry(failed["id"], "first"), 409, "CONFLICT")

    done = live.finished(run["id"])
    assert done["status"] == "succeeded", done
    draft = live.draft(started["id"])
    assert (draft["status"], draft["version"], draft["run_id"]) == ("reviewing", 1, run["id"])
    assert draft["rejection_reason"] is None
    holds = {hold["key"]: hold for hold in blog_reservations(settings, live.tenant_id)}
    assert holds["first"]["status"] == "released"
    assert (holds["again"]["status"], holds["again"]["committed_amount"]) == (
        "committed",
        done["credits_committed"],
    )
    assert live.events(run["id"])[-1][2]["status"] == "succeeded"
    assert [r["id"] for r in live.runs(draftId=started["id"])["data"]] == [run["id"], failed["id"]]

    # Neither a succeeded run nor one whose draft was written again since can be retried.
    problem(live.retry(run["id"], "third"), 409, "CONFLICT")
    problem(live.retry(failed["id"], "fourth"), 409, "CONFLICT")
    assert live.draft(started["id"]) == draft


@pytest.mark.own_org
def test_retry_refusals(live, other, settings):
    started = live.start(topic=TOPIC)
    failed = live.finished(started["run"]["id"])
    assert failed["status"] == "failed"
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    problem(other.retry(failed["id"], "theirs"), 404, "NOT_FOUND")
    problem(live.retry(str(uuid.uuid4()), "none"), 404, "NOT_FOUND")
    problem(live.request("generation.retryRun", {"id": failed["id"]}), 400, "BAD_REQUEST")
    problem(live.retry(failed["id"], ""), 400, "BAD_REQUEST")

    hold_all_but(settings, live.tenant_id, left=HOLD - 1)
    problem(live.retry(failed["id"], "short"), 402, "PAYMENT_REQUIRED")
    draft = live.draft(started["id"])
    assert (draft["status"], draft["run_id"]) == ("rejected", failed["id"])
    assert live.runs()["total"] == 1

    # Edited since it failed: the retry would overwrite the edit.
    live.ok("drafts.update", {"id": started["id"], "title": "My own title"}, role="editor")
    problem(live.retry(failed["id"], "edited"), 409, "CONFLICT")


# --- regenerateDraft ----------------------------------------------------------------------------


@pytest.mark.own_org
def test_regenerating_one_section_rewrites_it_alone_as_a_new_ai_revision(live, settings):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    _, draft = written(live, topic=TOPIC, keywords=KEYWORDS)
    live.ok("drafts.approve", {"id": draft["id"]}, role="editor")
    before = sections(draft["content"])
    anchor, _, body = before[1]
    assert anchor != "sources"

    answer = live.regenerate(
        draft["id"], sections=[anchor], contentInstructions="Plainer words.", idempotencyKey="r1"
    )

    assert answer.status_code == 200, answer.text
    run = answer.json()
    assert (run["kind"], run["draft_id"], run["retry_of"]) == ("regenerate", draft["id"], None)
    assert run["status"] in ("queued", "running", "succeeded")
    frames = live.events(run["id"])
    check_frames(frames, run["id"])
    assert frames[-1][1] == "run_finished"
    done = live.get_run(run["id"])
    assert done["status"] == "succeeded", done
    after = live.draft(draft["id"])
    assert (after["status"], after["version"], after["run_id"]) == ("reviewing", 2, run["id"])
    assert (after["approved_at"], after["approved_by"]) == (None, None)
    assert after["title"] == draft["title"]
    assert after["excerpt"] == draft["excerpt"]
    rewritten = sections(after["content"])
    assert [s[:2] for s in rewritten] == [s[:2] for s in before]  # the same headings
    assert rewritten[1][2] != body
    assert [s for i, s in enumerate(rewritten) if i != 1] == [
        s for i, s in enumerate(before) if i != 1
    ]
    intro = draft["content"][: draft["content"].index("<h2")]
    assert after["content"].startswith(intro)
    provenance = after["provenance"]
    assert provenance["run_id"] == run["id"]
    assert provenance["regenerated_sections"] == [anchor]
    assert [s["heading"] for s in provenance["sections"]] == [
        s["heading"] for s in draft["provenance"]["sections"]
    ]
    versions = live.ok("drafts.listVersions", {"id": draft["id"]})["data"]
    latest = max(versions, key=lambda v: v["version"])
    assert (latest["author_type"], latest["change_summary"]) == (
        "ai",
        f"Regenerated {anchor} with the offline writer",
    )
    assert latest["fields_changed"] == ["content"]
    # Priced by the words rewritten: 1 credit per started 100.
    words = html.word_count(rewritten[1][2])
    assert done["credits_committed"] == max(1, math.ceil(words / 100))
    hold = next(h for h in blog_reservations(settings, live.tenant_id) if h["key"] == "r1")
    assert (hold["status"], hold["committed_amount"]) == ("committed", done["credits_committed"])
    # The same key is the same run, even now it has ended.
    replay = live.regenerate(
        draft["id"], sections=[anchor], contentInstructions="Plainer words.", idempotencyKey="r1"
    )
    assert replay.json()["id"] == run["id"]
    problem(live.regenerate(draft["id"], idempotencyKey="r1"), 409, "CONFLICT")


def test_regenerating_the_whole_article_keeps_its_title_and_writes_it_anew(live):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    _, draft = written(live, topic=TOPIC, keywords=KEYWORDS)
    live.ok("drafts.update", {"id": draft["id"], "title": "Our irrigation guide"}, role="editor")

    answer = live.regenerate(draft["id"])

    assert answer.status_code == 200, answer.text
    done = live.finished(answer.json()["id"])
    assert done["status"] == "succeeded", done
    after = live.draft(draft["id"])
    assert (after["status"], after["version"]) == ("reviewing", 3)
    assert after["title"] == "Our irrigation guide"
    assert after["content"] != draft["content"]
    assert "regenerated_sections" not in after["provenance"]
    versions = live.ok("drafts.listVersions", {"id": draft["id"]})["data"]
    latest = max(versions, key=lambda v: v["version"])
    assert latest["change_summary"] == "Regenerated by the offline writer"


@pytest.mark.own_org
def test_regenerate_refusals(live, other, settings):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    bees = live.ingest("Beekeeping.md", BEEKEEPING)
    run, draft = written(live, topic="Installation", idempotencyKey="blog-key")
    anchors = [anchor for anchor, _, _ in sections(draft["content"])]

    body = problem(live.regenerate(draft["id"], sections=["no-such-heading"]), 400, "BAD_REQUEST")
    assert body["errors"] == [{"path": "sections.0", "message": "is not a section of the draft"}]
    problem(live.regenerate(draft["id"], sections=[anchors[0], "sources"]), 400, "BAD_REQUEST")
    problem(live.regenerate(draft["id"], sections=[]), 400, "BAD_REQUEST")
    problem(live.request("generation.regenerateDraft", {"id": draft["id"]}), 400, "BAD_REQUEST")
    problem(live.regenerate(draft["id"], role="member"), 403, "FORBIDDEN")
    problem(live.regenerate(str(uuid.uuid4())), 404, "NOT_FOUND")
    problem(other.regenerate(draft["id"]), 404, "NOT_FOUND")
    problem(other.regenerate(draft["id"], documentIds=[bees["id"]]), 404, "NOT_FOUND")
    problem(live.regenerate(draft["id"], idempotencyKey="blog-key"), 409, "CONFLICT")
    live.ok("documents.archive", {"id": bees["id"]}, role="editor")
    problem(live.regenerate(draft["id"], documentIds=[bees["id"]]), 400, "BAD_REQUEST")

    # A draft being generated cannot be regenerated.
    _, generating = queued_behind_the_back(settings, live.tenant_id, "Watering schedules")
    body = problem(live.regenerate(generating), 409, "CONFLICT")
    assert "generating" in body["detail"]

    hold_all_but(settings, live.tenant_id, left=HOLD - 1)
    problem(live.regenerate(draft["id"]), 402, "PAYMENT_REQUIRED")
    assert live.draft(draft["id"]) == draft
    assert live.get_run(run["id"]) == run


# --- suggestTopics ------------------------------------------------------------------------------


@pytest.mark.own_org
def test_topics_come_from_the_knowledge_nearest_the_seed_keywords_first(live, settings):
    handbook = live.ingest("Fernleaf handbook.md", HANDBOOK)
    chunks = chunk_ids_of(settings, handbook["id"])

    answer = live.topics(seedKeywords=["soil moisture"], count=5)

    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["total"] == len(found["data"])
    assert 3 <= found["total"] <= 5
    first = found["data"][0]
    assert "moisture" in first["topic"].casefold()
    assert "soil moisture" in first["rationale"]
    for topic in found["data"]:
        assert set(topic) == {
            "topic",
            "keywords",
            "pillar",
            "rationale",
            "source_documents",
            "covered_by_draft_id",
        }
        assert topic["topic"] and topic["keywords"] and topic["rationale"]
        assert (topic["pillar"], topic["covered_by_draft_id"]) == (None, None)
        (source,) = topic["source_documents"]
        assert source["document_id"] == handbook["id"]
        assert source["chunk_ids"] and set(source["chunk_ids"]) <= chunks
    topics = [topic["topic"].casefold() for topic in found["data"]]
    assert len(set(topics)) == len(topics)
    # Other seeds, another first topic; the same call, the same answer.
    priced = live.topics(seedKeywords=["pricing"], count=5).json()["data"]
    assert priced[0]["topic"] == "Plans and pricing"
    assert live.topics(seedKeywords=["soil moisture"], count=5).json() == found
    assert live.topics(documentIds=[handbook["id"]], count=50).json()["total"] >= 5


@pytest.mark.own_org
def test_topics_covered_by_a_draft_or_a_job_are_left_out_or_marked(live):
    live.ingest("Fernleaf handbook.md", HANDBOOK)

    def named(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {topic["topic"].casefold(): topic for topic in found["data"]}

    before = named(live.topics(count=50).json())
    assert {"watering schedules", "installation"} <= before.keys()
    draft = live.ok("drafts.createDraft", {"title": "Watering schedules"}, role="editor")
    live.ok("jobs.create", {"name": "Garden", "topics": ["Installation guide"]})

    left = named(live.topics(count=50).json())
    assert "watering schedules" not in left and "installation" not in left
    marked = named(live.topics(count=50, excludeCovered=False).json())
    assert marked["watering schedules"]["covered_by_draft_id"] == draft["id"]
    assert "already covered by a draft" in marked["watering schedules"]["rationale"]
    assert marked["installation"]["covered_by_draft_id"] is None
    assert "the job \u201cGarden\u201d" in marked["installation"]["rationale"]
    assert left.keys() <= marked.keys()


def test_topics_refusals_and_tenancy(live, other):
    handbook = live.ingest("Fernleaf handbook.md", HANDBOOK)
    problem(live.topics(role="member"), 403, "FORBIDDEN")
    problem(other.topics(documentIds=[handbook["id"]]), 404, "NOT_FOUND")
    for bad in ({"count": 0}, {"count": 51}, {"seedKeywords": ["x" * 101]}, {"extra": 1}):
        problem(live.topics(**bad), 400, "BAD_REQUEST")
    assert other.topics().json() == {"data": [], "total": 0}  # no knowledge there


@pytest.mark.own_org
def test_topics_are_limited_to_20_calls_an_hour_per_tenant(live, other):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    for _ in range(20):
        answer = live.topics(count=1)
        assert answer.status_code == 200, answer.text
    refused = live.topics(count=1)
    problem(refused, 429, "TOO_MANY_REQUESTS")
    assert int(refused.headers["retry-after"]) > 0
    assert other.topics(count=1).status_code == 200  # another tenant has its own 20


@pytest.mark.own_org
def test_jobs_still_follow_their_runs(live):
    """jobInstances.getProgress keeps working beside the stream."""
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    job = live.ok("jobs.create", {"name": "Garden", "topics": ["Watering schedules"]})
    instance = live.ok("jobs.trigger", {"id": job["id"]}, role="editor")
    run = live.finished(instance["run_id"])
    progress = wait_until(
        "the instance to complete",
        lambda: (
            (p := live.ok("jobInstances.getProgress", {"id": instance["id"]}, role="member"))[
                "status"
            ]
            == "completed"
            and p
        ),
    )
    assert progress["percent"] == 100
    assert live.events(run["id"])[-1][2]["status"] == "succeeded"
