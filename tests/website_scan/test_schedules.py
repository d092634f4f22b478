"""websiteScan.setSchedule and deleteSchedule over REST and RPC: a daily or weekly cron read on
a time zone's wall clock (the organization's by default), next_run_at computed from it, a cron
firing more often than once a day refused naming the field, replace and disable, the roles, a
second organization, and deleteConfig taking the schedule along."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select

from contentplatform.kit.db import Database
from contentplatform.website_scan import service
from contentplatform.website_scan.models import CrawlSchedule
from tests.conftest import Run
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.website_scan.support import Scanner, at

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

scanner = org_fixture(Scanner)
other = org_fixture(Scanner, second=True)

SCHEDULE_FIELDS = {
    "config_id",
    "cron_expression",
    "timezone",
    "enabled",
    "auto_import_changed",
    "next_run_at",
    "last_run_at",
    "last_run_id",
    "created_at",
    "updated_at",
}


def next_wall_time(next_run_at: str, zone: str, hour: int, minute: int) -> datetime:
    """next_run_at is the next hour:minute on the zone's wall clock, within a day from now."""
    moment = at(next_run_at)
    now = datetime.now(UTC)
    assert now < moment <= now + timedelta(days=1, minutes=1), next_run_at
    local = moment.astimezone(ZoneInfo(zone))
    assert (local.hour, local.minute) == (hour, minute), local
    return moment


def test_an_editor_schedules_a_daily_crawl_in_a_time_zone(scanner: Scanner) -> None:
    config = scanner.config()
    response = scanner.schedule(
        config["id"], cronExpression="  30   2 * * * ", timezone="Asia/Kolkata"
    )
    assert response.status_code == 200, response.text
    schedule = response.json()
    assert set(schedule) == SCHEDULE_FIELDS
    assert schedule["config_id"] == config["id"]
    assert (schedule["cron_expression"], schedule["timezone"]) == ("30 2 * * *", "Asia/Kolkata")
    assert (schedule["enabled"], schedule["auto_import_changed"]) == (True, False)
    assert (schedule["last_run_at"], schedule["last_run_id"]) == (None, None)
    # 02:30 in Kolkata (UTC+05:30) is 21:00 UTC: the zone is honoured.
    moment = next_wall_time(schedule["next_run_at"], "Asia/Kolkata", 2, 30)
    assert (moment.hour, moment.minute) == (21, 0)
    assert scanner.get(config["id"])["schedule"] == schedule


@pytest.mark.own_org
def test_the_organizations_time_zone_is_the_default(scanner: Scanner) -> None:
    zone = {"timezone": "America/New_York"}
    assert scanner.ok("jobs.updateTimezone", zone, role="admin") == zone
    config = scanner.config()
    schedule = scanner.ok(
        "websiteScan.setSchedule",
        {"id": config["id"], "cronExpression": "0 6 * * MON", "autoImportChanged": True},
    )
    assert (schedule["timezone"], schedule["auto_import_changed"]) == ("America/New_York", True)
    local = at(schedule["next_run_at"]).astimezone(ZoneInfo("America/New_York"))
    assert (local.weekday(), local.hour, local.minute) == (0, 6, 0)
    assert timedelta(0) < at(schedule["next_run_at"]) - datetime.now(UTC) <= timedelta(days=7)


@pytest.mark.own_org
def test_setting_it_again_replaces_it_and_disabling_plans_nothing(scanner: Scanner) -> None:
    config = scanner.config()
    first = scanner.schedule(config["id"]).json()

    disabled = scanner.ok(
        "websiteScan.setSchedule",
        {"id": config["id"], "cronExpression": "15 4 1 * *", "timezone": "UTC", "enabled": False},
    )
    assert (disabled["enabled"], disabled["next_run_at"]) == (False, None)
    assert disabled["created_at"] == first["created_at"]  # the same schedule, replaced
    assert scanner.listed(scheduled=True)["total"] == 0
    assert [c["id"] for c in scanner.listed(scheduled=False)["data"]] == [config["id"]]

    enabled = scanner.ok(
        "websiteScan.setSchedule",
        {"id": config["id"], "cronExpression": "15 4 1 * *", "timezone": "UTC"},
    )
    moment = at(enabled["next_run_at"])
    assert (moment.day, moment.hour, moment.minute) == (1, 4, 15)
    assert enabled["auto_import_changed"] is False  # PUT: what is not given takes its default
    assert scanner.get(config["id"])["schedule"] == enabled


@pytest.mark.parametrize(
    "cron",
    [
        "* * * * *",
        "0 * * * *",
        "*/15 2 * * *",
        "0,30 2 * * *",
        "0 9,21 * * *",
        "0 0-23/12 * * *",
        "0 8-9 * * MON",
        # One minute and hour, but read on elapsed time: twice on a fall-back night.
        "*/60 1 * * *",
    ],
)
def test_a_cron_firing_more_than_once_a_day_is_400_naming_it(scanner: Scanner, cron: str) -> None:
    config = scanner.config()
    body = problem(scanner.schedule(config["id"], cronExpression=cron), 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == ["cronExpression"]
    assert "more often than once a day" in body["detail"]
    assert scanner.get(config["id"])["schedule"] is None


@pytest.mark.parametrize(
    ("fields", "path", "words"),
    [
        ({"cronExpression": "0 9 * *"}, "cronExpression", "5 fields"),
        ({"cronExpression": "@daily"}, "cronExpression", "5 fields"),
        # Read as jobs read theirs (kit/cron.py), with the same sentences.
        ({"cronExpression": "61 9 * * *"}, "cronExpression", "Minute 61 is out of range 0-59"),
        ({"cronExpression": "0 9 * * FUNDAY"}, "cronExpression", "not a valid day-of-week"),
        ({"cronExpression": "0 0 31 4 *"}, "cronExpression", "never runs"),
        ({"cronExpression": ""}, "cronExpression", ""),
        ({"cronExpression": "0 9 * * * " + "*" * 120}, "cronExpression", ""),
        ({"timezone": "Mars/Olympus_Mons"}, "timezone", "Unknown time zone"),
        ({"timezone": "../etc/passwd"}, "timezone", "Unknown time zone"),
        ({"timezone": "posix/Europe/Berlin"}, "timezone", "Unknown time zone"),
        ({"enabled": "sometimes"}, "enabled", ""),
    ],
)
def test_a_bad_schedule_is_400_naming_the_field(
    scanner: Scanner, fields: dict[str, str], path: str, words: str
) -> None:
    config = scanner.config()
    body = problem(scanner.schedule(config["id"], **fields), 400, "BAD_REQUEST")
    assert path in {error["path"] for error in body["errors"]}, body
    assert words in body["detail"]
    assert scanner.get(config["id"])["schedule"] is None


def test_an_admin_deletes_the_schedule(scanner: Scanner) -> None:
    config = scanner.config()
    ref = {"id": config["id"]}
    body = problem(
        scanner.request("websiteScan.deleteSchedule", ref, role="admin"), 404, "NOT_FOUND"
    )
    assert "schedule" in body["detail"]

    assert scanner.schedule(config["id"]).status_code == 200
    assert scanner.ok("websiteScan.deleteSchedule", ref, role="admin") == {"success": True}
    assert scanner.get(config["id"])["schedule"] is None
    problem(scanner.request("websiteScan.deleteSchedule", ref, role="admin"), 404, "NOT_FOUND")
    # And a new one may be set afterwards.
    assert scanner.schedule(config["id"]).json()["cron_expression"] == "30 2 * * *"


def test_each_schedule_operation_needs_its_role(scanner: Scanner) -> None:
    config = scanner.config()
    problem(scanner.schedule(config["id"], role="member"), 403, "FORBIDDEN")
    assert scanner.schedule(config["id"], role="editor").status_code == 200
    ref = {"id": config["id"]}
    for role in ("member", "editor"):
        problem(scanner.request("websiteScan.deleteSchedule", ref, role=role), 403, "FORBIDDEN")
    assert scanner.get(config["id"])["schedule"] is not None


def test_another_organizations_config_cannot_be_scheduled(scanner: Scanner, other: Scanner) -> None:
    config = scanner.config()
    problem(other.schedule(config["id"]), 404, "NOT_FOUND")
    problem(other.schedule(str(uuid.uuid4())), 404, "NOT_FOUND")
    assert scanner.get(config["id"])["schedule"] is None
    assert scanner.schedule(config["id"]).status_code == 200
    problem(
        other.request("websiteScan.deleteSchedule", {"id": config["id"]}, role="admin"),
        404,
        "NOT_FOUND",
    )
    assert scanner.get(config["id"])["schedule"] is not None


def test_deleting_the_config_stops_its_schedule(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    assert scanner.schedule(config["id"]).json()["next_run_at"] is not None
    scanner.ok("websiteScan.deleteConfig", {"id": config["id"]}, role="admin")

    async def stored(db: Database) -> tuple[datetime | None, datetime | None]:
        async with db.unit_of_work() as session:
            statement = select(CrawlSchedule.deleted_at, CrawlSchedule.next_run_at).where(
                CrawlSchedule.config_id == uuid.UUID(config["id"])
            )
            row = (await session.execute(statement)).one()
            return row[0], row[1]

    deleted_at, next_run_at = run(stored)
    # Kept (soft-deleted), and off the scheduler's index: it has no next run.
    assert deleted_at is not None and next_run_at is None


# --- the wall clock across daylight-saving changes (pure) -------------------------------------


def test_a_daily_crawl_fires_once_per_local_day_across_daylight_saving() -> None:
    daily = "30 2 * * *"
    # Spring forward in Berlin (28 March 2027): 02:30 does not exist; it fires at 03:00 CEST.
    assert service.next_run(daily, "Europe/Berlin", datetime(2027, 3, 27, 2, tzinfo=UTC)) == (
        datetime(2027, 3, 28, 1, tzinfo=UTC)
    )
    # Fall back (31 October 2027): 02:30 happens twice; it fired at the first, never again.
    first = datetime(2027, 10, 31, 0, 30, tzinfo=UTC)
    assert service.next_run(daily, "Europe/Berlin", datetime(2027, 10, 30, 23, tzinfo=UTC)) == first
    for after in (first, first + timedelta(minutes=45)):
        assert service.next_run(daily, "Europe/Berlin", after) == datetime(
            2027, 11, 1, 1, 30, tzinfo=UTC
        )
