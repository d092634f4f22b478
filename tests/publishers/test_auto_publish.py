"""Auto-publish through a real job run on the offline writer (REST and RPC): a job with
`autoPublish` and a connection publishes the draft its run writes when the draft's SEO score
reaches the threshold, and otherwise holds it for review with the reason on the draft."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.jobs.support import Planner
from tests.publishers.test_publishing import Desk, webhook_to
from tests.support.targets.webhook import WebhookReceiver

AUTO_APPROVER = "system:auto_publish"


class Newsroom:
    """An organization whose job writes drafts from the handbook and publishes them to a
    webhook receiver (the planner drives the job; the desk reads drafts and attempts)."""

    def __init__(
        self, planner: Planner, desk: Desk, receiver: WebhookReceiver, connection: dict[str, Any]
    ) -> None:
        self.planner = planner
        self.desk = desk
        self.planner.handbook()
        self.receiver = receiver
        self.connection = connection

    def job(self, **fields: Any) -> str:
        """A one-off job writing from the handbook, with these fields: its id."""
        return str(self.planner.job(topics=["Watering schedules"], **fields)["id"])

    def run(self, job_id: str | None = None, **fields: Any) -> dict[str, Any]:
        """The job (a new one with these fields unless given) triggered and run to the end:
        the draft it wrote, as it then is."""
        job_id = job_id or self.job(**fields)
        instance = self.planner.ok("jobs.trigger", {"id": job_id}, role="editor")
        finished, _ = self.planner.wait_instance(instance["id"])
        assert finished["status"] == "completed", finished
        return self.desk.get(instance["draft_id"])


@pytest.fixture
def newsroom(tenant) -> Iterator[Newsroom]:
    desk = Desk.of(tenant)
    answer = {"id": "hook-1", "url": "https://blog.example/hook-1"}
    with webhook_to(desk, answer=lambda event: answer) as (receiver, connection):
        yield Newsroom(Planner.of(tenant), desk, receiver, connection)


def test_a_draft_reaching_the_threshold_is_approved_and_published(newsroom: Newsroom) -> None:
    draft = newsroom.run(
        autoPublish=True, autoPublishThreshold=10, publisherConnectionId=newsroom.connection["id"]
    )

    assert draft["seo_score"] >= 10
    assert draft["approved_by"] == AUTO_APPROVER
    decision = draft["auto_publish"]
    assert decision["decision"] == "published"
    assert decision["threshold"] == 10
    assert decision["seo_score"] == draft["seo_score"]
    assert str(draft["seo_score"]) in decision["reason"]
    [attempt] = newsroom.desk.attempts(draft["id"])["data"]
    assert attempt["triggered_by"] == "auto_publish"
    assert attempt["triggered_by_id"] is None
    assert attempt["publisher_connection_id"] == newsroom.connection["id"]
    finished = newsroom.desk.wait(draft["id"], attempt["id"])
    assert finished["status"] == "succeeded", finished
    live = newsroom.desk.get(draft["id"])
    assert live["status"] == "published"
    assert live["published_url"] == "https://blog.example/hook-1"
    assert live["approved_by"] == AUTO_APPROVER
    [event] = newsroom.receiver.events
    assert event["type"] == "article.published"
    assert event["data"]["title"] == draft["title"]


def test_a_job_without_a_threshold_publishes_every_draft(newsroom: Newsroom) -> None:
    draft = newsroom.run(autoPublish=True, publisherConnectionId=newsroom.connection["id"])

    assert draft["approved_by"] == AUTO_APPROVER
    assert draft["auto_publish"]["decision"] == "published"
    assert draft["auto_publish"]["threshold"] is None
    [attempt] = newsroom.desk.attempts(draft["id"])["data"]
    assert newsroom.desk.wait(draft["id"], attempt["id"])["status"] == "succeeded"
    assert newsroom.desk.get(draft["id"])["status"] == "published"


def test_a_draft_below_the_threshold_stays_in_review_with_the_reason(newsroom: Newsroom) -> None:
    draft = newsroom.run(
        autoPublish=True, autoPublishThreshold=100, publisherConnectionId=newsroom.connection["id"]
    )

    assert draft["seo_score"] < 100
    assert draft["status"] == "reviewing"
    assert draft["approved_by"] is None
    decision = draft["auto_publish"]
    assert decision["decision"] == "held"
    assert f"SEO score {draft['seo_score']}" in decision["reason"]
    assert "threshold 100" in decision["reason"]
    assert newsroom.desk.attempts(draft["id"]) == {"data": [], "total": 0}
    assert newsroom.receiver.requests == []


def delete(newsroom: Newsroom, connection_id: str) -> None:
    newsroom.desk.ok("publishers.delete", {"id": connection_id}, role="admin")


def disable(newsroom: Newsroom, connection_id: str) -> None:
    data = {"id": connection_id, "status": "disabled"}
    newsroom.desk.ok("publishers.update", data, role="admin")


@pytest.mark.parametrize(("change", "reason"), [(delete, "deleted"), (disable, "disabled")])
def test_a_job_whose_connection_went_away_holds_its_draft(
    newsroom: Newsroom, change: Callable[[Newsroom, str], None], reason: str
) -> None:
    connection_id = newsroom.connection["id"]
    job_id = newsroom.job(
        autoPublish=True, autoPublishThreshold=10, publisherConnectionId=connection_id
    )
    change(newsroom, connection_id)

    draft = newsroom.run(job_id)

    assert draft["status"] == "reviewing"
    assert draft["approved_by"] is None
    assert draft["auto_publish"]["decision"] == "held"
    assert reason in draft["auto_publish"]["reason"]
    assert newsroom.desk.attempts(draft["id"])["total"] == 0
    assert newsroom.receiver.requests == []


def test_a_job_without_a_connection_holds_its_draft(newsroom: Newsroom) -> None:
    draft = newsroom.run(autoPublish=True, autoPublishThreshold=10)

    assert draft["status"] == "reviewing"
    assert draft["auto_publish"]["decision"] == "held"
    assert "no publisher connection" in draft["auto_publish"]["reason"]
    assert newsroom.desk.attempts(draft["id"])["total"] == 0


def test_a_job_without_auto_publish_leaves_its_draft_alone(newsroom: Newsroom) -> None:
    draft = newsroom.run(publisherConnectionId=newsroom.connection["id"])

    assert draft["status"] == "reviewing"
    assert draft["auto_publish"] is None
    assert newsroom.desk.attempts(draft["id"])["total"] == 0
    assert newsroom.receiver.requests == []
