"""PageSpeed through one organization (`PageSpeed`): runs asked for and waited on, results read;
and the fixture's own figures, which the stand-in varies per call."""

from __future__ import annotations

import statistics
import uuid
from typing import Any

import httpx

from contentplatform.seo.pagespeed import durable
from tests.seo.pagespeed.standin import TIMED, VARIATION, _fixture
from tests.support.orgs import Org
from tests.support.waits import until_workflow_ends


class PageSpeed(Org):
    default_role = "editor"

    @property
    def host(self) -> str:
        """The organization's own host, so the stand-in's per-URL counts never mix."""
        return f"{self.org.replace('_', '-')}.example.com"

    def url(self, path: str = "/") -> str:
        return f"https://{self.host}{path}"

    def run(self, body: dict[str, Any] | None = None, role: str = "editor") -> httpx.Response:
        return self.request("seo.runPageSpeed", body or {}, role=role)

    def measured(self, body: dict[str, Any] | None = None, timeout: float = 60) -> dict[str, Any]:
        """runPageSpeed, then its sync run once it ended."""
        answer = self.run(body)
        assert answer.status_code == 200, answer.text
        return self.wait(answer.json()["id"], timeout)

    def wait(self, run_id: str, timeout: float = 60) -> dict[str, Any]:
        def ended() -> dict[str, Any] | None:
            run = self.ok("seo.getSyncRun", {"id": run_id}, role="member")
            return run if run["status"] not in ("queued", "running") else None

        return until_workflow_ends(
            durable.workflow_id(uuid.UUID(run_id)), ended, timeout=timeout, what="pagespeed"
        )

    def results(self, role: str = "member", **filters: Any) -> dict[str, Any]:
        return self.ok("seo.listPageSpeedResults", filters, role=role)  # type: ignore[no-any-return]


def expected_runs(strategy: str, runs: int) -> list[dict[str, Any]]:
    """Each run's performance score and lab figures as the stand-in serves them."""
    result = _fixture(strategy)["lighthouseResult"]
    audits = result["audits"]
    made = []
    for call in range(runs):
        variation = VARIATION[call % len(VARIATION)]
        lab = {
            audit_id: audits[audit_id]["numericValue"] * (1 + variation / 10) for audit_id in TIMED
        }
        made.append(
            {
                "performance": round(
                    round(
                        max(0.0, result["categories"]["performance"]["score"] - variation / 50), 2
                    )
                    * 100
                ),
                "lcp_ms": round(lab["largest-contentful-paint"]),
                "fcp_ms": round(lab["first-contentful-paint"]),
                "cls": round(
                    audits["cumulative-layout-shift"]["numericValue"] + variation / 100, 4
                ),
            }
        )
    return made


def median(values: list[float]) -> float:
    return statistics.median(values)
