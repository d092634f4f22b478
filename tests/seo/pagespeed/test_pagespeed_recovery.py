"""A PageSpeed run survives `kill -9` of the service mid-way, on a real `contentplatform serve`
process (tests.support.processes) pointed at a PageSpeed stand-in of the test's own: restarted,
its run resumes, no Lighthouse run it stored is asked for again (but the one in flight at the
kill), and each result has its runs, the stored ones among them as they were."""

from __future__ import annotations

from sqlalchemy import select

from contentplatform.seo.models import SeoPageSpeedResult
from tests.seo.pagespeed.standin import PageSpeedStandIn
from tests.support.processes import ServiceClient, Services, Stack, wait_for

ENDED = ("succeeded", "partial", "failed")


def test_a_run_killed_mid_way_resumes_without_measuring_a_stored_run_again(
    services: Services, stack: Stack
) -> None:
    with PageSpeedStandIn() as standin:
        standin.delay = 0.3
        settings = {
            "outbound_allow_http": "true",
            "outbound_allow_loopback": "true",
            **{key: str(value) for key, value in standin.settings().items()},
        }
        service = services.start(**settings)
        client = ServiceClient.of_new_org(services, service, "pagespeed", role="editor")
        urls = [f"https://{client.org.replace('_', '-')}.example.com/{n}" for n in range(3)]
        run = client.request("POST", "/v1/seo/pagespeed", json={"urls": urls, "runs": 3})

        def stored() -> dict[str, list[dict]]:
            rows = stack.rows(select(SeoPageSpeedResult.url, SeoPageSpeedResult.runs))
            return {url: list(runs) for url, runs in rows}

        wait_for("some runs to be stored", lambda: sum(map(len, stored().values())) >= 4, service)
        service.kill()
        before = stored()
        assert 4 <= sum(map(len, before.values())) < 9, before

        service = services.start(**settings)
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
        assert ended["progress"] == {"done": 3, "total": 3}
        calls = {url: len(standin.sent_for(url)) for url in urls}
        # Three runs each, and at most one asked twice: the one in flight at the kill.
        assert all(calls[url] >= 3 for url in urls), calls
        assert sum(calls.values()) <= 10, calls
        results = client.request("GET", "/v1/seo/pagespeed?latestOnly=false")["data"]
        assert sorted(row["url"] for row in results) == sorted(urls)
        for row in results:
            assert len(row["runs"]) == 3
            kept = [run["scores"] for run in before[row["url"]]]
            assert [run["scores"] for run in row["runs"]][: len(kept)] == kept
