"""public.contact over REST and RPC: no token, a message kept as a contact ticket that staff see
and its sender acknowledged by mail, text kept as text, the honeypot (same answer, nothing kept),
the proof-of-work captcha when configured (missing, forged, solved, replayed), and 5 messages an
hour per client address (429 with Retry-After).

Each runs on a second service on the suite's database with a limiter of its own, so the limit of
one test never spends another's (and the session's service keeps its own counts)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from altcha.v1 import create_challenge, solve_challenge
from pydantic import SecretStr

from contentplatform.config import Settings
from tests.conftest import Caller
from tests.support.mailbox import Mailbox
from tests.support.problems import problem
from tests.support.servers import second_service

KEY = "an-altcha-key-for-the-tests-only"


def service(settings: Settings, **changes: Any) -> Any:
    limited = settings.model_copy(
        update={
            "redis_prefix": f"{settings.redis_prefix}contact-{uuid.uuid4().hex[:8]}:",
            **changes,
        }
    )
    return second_service(limited)


@pytest.fixture(scope="module", params=["rest", "rpc"])
def contact(
    request: pytest.FixtureRequest, settings: Settings, openapi_document: dict[str, Any]
) -> Iterator[Caller]:
    """public.contact (and staff's reads) on a service whose contact limit is out of the way."""
    with service(settings, contact_rate_limit="1000/hour") as running, running.client() as http:
        yield Caller(http, openapi_document, request.param)


def message(email: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": "Grace <b>Hopper</b>",
        "email": email,
        "company": "Navy",
        "topic": "sales",
        "message": "We would like <script>alert(1)</script>a demo, please.",
        **extra,
    }


def fresh_email() -> str:
    return f"grace-{uuid.uuid4().hex[:8]}@example.test"


def staff_get(call: Caller, token: Any, reference: str) -> httpx.Response:
    return call(
        "admin.getSupportTicket", {"id": reference}, token=token(None, "root", superadmin=True)
    )


def test_a_message_is_kept_for_staff_and_acknowledged_by_mail(
    contact: Caller, token: Any, mailbox: Mailbox
) -> None:
    email = fresh_email()
    answered = contact("public.contact", message(email))
    assert answered.status_code == 200, answered.text
    body = answered.json()
    assert body["received"] is True
    assert set(body) == {"received", "reference"}

    seen = staff_get(contact, token, body["reference"])
    assert seen.status_code == 200, seen.text
    ticket = seen.json()
    assert ticket["source"] == "contact"
    assert ticket["tenant_id"] is None
    assert ticket["tenant"] is None
    assert ticket["requester"] == {
        "name": "Grace Hopper",
        "email": email,
        "company": "Navy",
        "topic": "sales",
    }
    (first,) = ticket["messages"]
    assert first["body"] == "We would like a demo, please."  # markup stripped: text only
    assert "<" not in ticket["subject"]
    listed = contact(
        "admin.listSupportTickets",
        {"source": "contact", "limit": 100},
        token=token(None, "root", superadmin=True),
    ).json()
    assert body["reference"] in {row["id"] for row in listed["data"]}

    ack = mailbox.wait_for(to=email, subject_contains="We received your message")
    assert body["reference"] in ack.get_content()

    # Staff answer by mail (a contact message has no one to notify in the app).
    answer = contact(
        "admin.replySupportTicket",
        {"id": body["reference"], "body": "Happy to show you around."},
        token=token(None, "root", superadmin=True),
    )
    assert answer.status_code == 200, answer.text
    mail = mailbox.wait_for(to=email, subject_contains=f"[#{ticket['number']}]")
    assert "Happy to show you around." in mail.get_content()


def test_a_filled_honeypot_gets_the_same_answer_and_nothing_is_kept(
    contact: Caller, token: Any
) -> None:
    trapped = contact("public.contact", message(fresh_email(), website="https://spam.example"))
    assert trapped.status_code == 200, trapped.text
    assert trapped.json()["received"] is True
    assert set(trapped.json()) == {"received", "reference"}
    problem(staff_get(contact, token, trapped.json()["reference"]), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": ""}, "name"),
        ({"email": "not-an-address"}, "email"),
        ({"message": "too short"}, "message"),
        ({"message": "x" * 5001}, "message"),
        ({"name": "Grace\x00"}, "name"),
        ({"topic": "jobs"}, "topic"),
        ({"extra": 1}, "extra"),
    ],
)
def test_a_bad_message_is_400_naming_the_field(contact: Caller, change: dict, field: str) -> None:
    body = problem(
        contact("public.contact", {**message(fresh_email()), **change}), 400, "BAD_REQUEST"
    )
    assert field in {error["path"] for error in body["errors"]}, body


def test_five_messages_an_hour_per_address_then_429(
    settings: Settings, openapi_document: dict[str, Any]
) -> None:
    with service(settings) as running, running.client() as http:  # the default: 5/hour
        rest = Caller(http, openapi_document, "rest")
        rpc = Caller(http, openapi_document, "rpc")
        taken = [rest("public.contact", message(fresh_email())) for _ in range(3)]
        taken += [rpc("public.contact", message(fresh_email(), website="trap")) for _ in range(2)]
        assert [response.status_code for response in taken] == [200] * 5
        for call in (rest, rpc):
            refused = problem(
                call("public.contact", message(fresh_email())), 429, "TOO_MANY_REQUESTS"
            )
            assert refused["status"] == 429
        late = rest("public.contact", message(fresh_email()))
        assert 1 <= int(late.headers["retry-after"]) <= 3600


def solved(key: str = KEY, *, expires: datetime | None = None) -> str:
    challenge = create_challenge(
        hmac_key=key, max_number=2000, expires=expires or datetime.now(UTC) + timedelta(minutes=10)
    )
    solution = solve_challenge(challenge)
    assert solution is not None
    payload = {
        "algorithm": challenge.algorithm,
        "challenge": challenge.challenge,
        "number": solution.number,
        "salt": challenge.salt,
        "signature": challenge.signature,
    }
    return base64.b64encode(json.dumps(payload).encode()).decode()


@pytest.mark.parametrize("transport", ["rest", "rpc"])
def test_with_altcha_configured_a_solved_challenge_is_needed_once(
    settings: Settings, openapi_document: dict[str, Any], transport: str
) -> None:
    changes = {"altcha_hmac_key": SecretStr(KEY), "contact_rate_limit": "1000/hour"}
    with service(settings, **changes) as running, running.client() as http:
        call = Caller(http, openapi_document, transport)
        for token, why in (
            (None, "required"),
            ("not base64!", "not an ALTCHA payload"),
            (solved("another-key"), "wrong"),
            (solved(expires=datetime.now(UTC) - timedelta(minutes=1)), "expired"),
        ):
            data = message(fresh_email(), **({"captchaToken": token} if token else {}))
            body = problem(call("public.contact", data), 400, "BAD_REQUEST")
            assert [error["path"] for error in body["errors"]] == ["captchaToken"]
            assert why in body["detail"]
        good = solved()
        taken = call("public.contact", message(fresh_email(), captchaToken=good))
        assert taken.status_code == 200, taken.text
        again = call("public.contact", message(fresh_email(), captchaToken=good))
        assert "used already" in problem(again, 400, "BAD_REQUEST")["detail"]
