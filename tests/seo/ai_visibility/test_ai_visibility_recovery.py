"""An AI visibility run survives `kill -9` of the service mid-way, on a real `contentplatform
serve` process (tests.support.processes) pointed at an answer-engine stand-in of the test's
own: restarted, the reconciler resumes the run, and the engine is asked only for the samples
still pending (counted at the stand-in): none stored before the kill is asked again; the
credits are committed once, for every answer."""

from __future__ import annotations

from sqlalchemy import select

from contentplatform.seo.models import SeoAiAnswer
from tests.seo.ai_visibility.standin import API_KEY, AnswerEngineStandIn
from tests.support.processes import ServiceClient, Services, Stack, wait_for

ENDED = ("succeeded", "partial", "failed")
PROMPTS, SAMPLES = 4, 5


def _settings(engines: AnswerEngineStandIn) -> dict[str, str]:
    return {
        "outbound_allow_http": "true",
        "outbound_allow_loopback": "true",
        "reconcile_interval_seconds": "1",
        **{key: str(value) for key, value in engines.settings().items()},
    }


def test_a_run_killed_mid_way_resumes_without_asking_a_stored_sample_again(
    services: Services, stack: Stack
) -> None:
    with AnswerEngineStandIn() as engines:
        engines.delay = 0.2
        service = services.start(**_settings(engines))
        client = ServiceClient.of_new_org(services, service, "aivis", role="admin")
        client.request(
            "POST", "/v1/seo/connections/openai", json={"credentials": {"apiKey": API_KEY}}
        )
        texts = [f"{client.org} killed {n}" for n in range(PROMPTS)]
        client.request(
            "POST",
            "/v1/seo/ai-visibility/prompts",
            json={"prompts": [{"text": text} for text in texts], "engines": ["chatgpt"]},
        )
        run = client.request(
            "POST",
            "/v1/seo/ai-visibility/runs",
            json={"samples": SAMPLES, "idempotencyKey": "killed"},
        )
        total = PROMPTS * SAMPLES
        assert run["credits_reserved"] == total

        def done() -> int:
            found = client.request("GET", f"/v1/seo/sync-runs/{run['id']}")
            assert found["status"] not in ENDED, "the run ended before the kill"
            return int(found["progress"]["done"])

        wait_for("a first part of the run to be stored", lambda: done() >= 6, service)
        service.kill()
        asked_before = sum(engines.asked[("openai", text)] for text in texts)
        stored = [
            status
            for (status,) in stack.rows(
                select(SeoAiAnswer.status).where(SeoAiAnswer.status == "answered")
            )
        ]
        assert 6 <= len(stored) < total, len(stored)
        # What was asked and not stored was in flight at the kill (at most 4 at once).
        assert 0 <= asked_before - len(stored) <= 4

        service = services.start(**_settings(engines))
        client = ServiceClient(service, client.headers["Authorization"][7:], client.org)
        ended = wait_for(
            "the run to end",
            lambda: (
                (found := client.request("GET", f"/v1/seo/sync-runs/{run['id']}"))["status"]
                in ENDED
                and found
            ),
            service,
            timeout=120,
        )
        assert ended["status"] == "succeeded", ended
        assert ended["progress"] == {"done": total, "total": total}
        assert ended["credits_used"] == total
        # After the restart, only the samples still pending were asked: none stored again.
        asked_after = sum(engines.asked[("openai", text)] for text in texts) - asked_before
        assert asked_after == total - len(stored)
