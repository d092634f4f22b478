"""The delivery rules below the API: the retry schedule with its jitter and Retry-After, what an
answer means, what events tell of a URL, and the settings' default schedule (about a day)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from standardwebhooks.webhooks import Webhook

from contentplatform.config import Settings
from contentplatform.kit import outbound
from contentplatform.webhooks import deliveries, messages

SCHEDULE = [0.0, 5.0, 300.0, 1800.0]


def test_each_wait_of_the_schedule_has_its_jitter_and_the_schedule_ends():
    for attempts_made, base in enumerate(SCHEDULE[1:], start=1):
        waits = [deliveries.retry_delay(SCHEDULE, attempts_made, None) for _ in range(200)]
        assert all(w is not None and base * 0.8 <= w <= base * 1.2 for w in waits)
        assert len(set(waits)) > 1  # retries of many deliveries do not meet
    assert deliveries.retry_delay(SCHEDULE, len(SCHEDULE), None) is None


def test_a_longer_retry_after_wins_up_to_ten_hours():
    assert deliveries.retry_delay(SCHEDULE, 1, 60.0) == 60.0
    assert deliveries.retry_delay(SCHEDULE, 1, 10 * 86_400.0) == 36_000.0
    waited = deliveries.retry_delay(SCHEDULE, 3, 1.0)
    assert waited is not None and waited >= 1800 * 0.8  # a shorter one changes nothing
    assert deliveries.retry_delay(SCHEDULE, 4, 60.0) is None  # nor does it add an attempt


def test_the_default_schedule_is_eight_attempts_over_about_a_day():
    schedule = Settings(_env_file=None).webhook_retry_seconds  # type: ignore[call-arg]
    assert schedule == [0, 5, 300, 1800, 7200, 18000, 36000, 36000]
    assert timedelta(hours=24) < deliveries.window(schedule) < timedelta(hours=28)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("7", 7.0), ("0", 0.0), ("-3", 0.0), ("soon", None), ("", None), (None, None)],
)
def test_retry_after_in_seconds(value: str | None, seconds: float | None):
    assert outbound.retry_after_seconds(value) == seconds


def test_retry_after_as_a_date():
    later = datetime.now(UTC) + timedelta(seconds=120)
    found = outbound.retry_after_seconds(format_datetime(later, usegmt=True))
    assert found is not None and 110 <= found <= 121


@pytest.mark.parametrize(
    ("url", "told"),
    [
        ("https://hooks.example.com/T000/B000/secret", "https://hooks.example.com/…"),
        ("https://hooks.example.com/?token=abc", "https://hooks.example.com/…"),
        ("https://hooks.example.com", "https://hooks.example.com"),
        ("https://hooks.example.com:8443/", "https://hooks.example.com:8443"),
    ],
)
def test_events_tell_a_url_without_what_may_be_a_token(url: str, told: str):
    assert deliveries.redacted(url) == told


def test_a_secret_is_24_random_bytes_and_every_secret_signs():
    first, second = messages.new_secret(), messages.new_secret()
    assert first != second
    assert len(base64.b64decode(first.removeprefix("whsec_"))) == 24
    body = messages.body("draft.created", datetime.now(UTC), {"title": "A"})
    headers = messages.signed_headers("msg_1", body, [first, second], datetime.now(UTC))
    assert len(headers["webhook-signature"].split()) == 2
    for secret in (first, second):
        verified = Webhook(secret).verify(body, headers)
        assert (verified["type"], verified["data"]) == ("draft.created", {"title": "A"})
