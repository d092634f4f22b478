"""The rules that turn signals into action candidates: pure functions, no database, so the same
signals always give the same candidates (generation.py reads the signals and reconciles).

A candidate's identity is its fingerprint, a hash of its type and subject (what it is about: a
check id, a URL, a query, a tracked keyword, a crawler), so the same signal seen again is the
same action. impact_score (0-100) adds up the signal's severity and, on log scales so that
large sites do not all score 100, the clicks (or the clicks at stake) and impressions it
touches, the keyword's search volume, the URLs affected and the positions lost.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from dataclasses import dataclass, field
from typing import Any

from contentplatform.seo.audits.checks import CHECKS
from contentplatform.seo.geo.schemas import GeoReadiness
from contentplatform.seo.insights.schemas import SearchInsight
from contentplatform.seo.models import SeoAuditIssue, SeoUrlInspection
from contentplatform.website_scan.crawling.urls import normalize

# What each signal's severity is worth; an opportunity (an insight) has no severity.
SEVERITY_POINTS = {"error": 40, "warning": 20, "notice": 5}
OPPORTUNITY_POINTS = 10
PRIORITY_RANK = {"low": 0, "medium": 1, "high": 2, "critical": 3}
# How much work each type usually is (a manual action's too).
EFFORT = {
    "fix_technical_issue": "medium",
    "fix_indexing": "medium",
    "improve_snippet": "low",
    "target_striking_distance": "medium",
    "refresh_content": "medium",
    "resolve_cannibalization": "high",
    "create_content": "high",
    "close_ai_gap": "high",
    "improve_geo": "low",
    "recover_ranking": "medium",
    "custom": "medium",
}
# The types a job can write for (createJobFromAction).
CONTENT_TYPES = frozenset(
    {
        "create_content",
        "close_ai_gap",
        "refresh_content",
        "target_striking_distance",
        "improve_snippet",
        "improve_geo",
    }
)
# recover_ranking: a keyword in the top 20 that lost this many places over its last checks.
RANK_TOP = 20
RANK_DROP = 5
RANK_CHECKS = 3
NOT_RANKING = 100


@dataclass
class Candidate:
    type: str
    source: str
    subject: str
    title: str
    description: str
    impact: int
    evidence: dict[str, Any]
    target_urls: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    audit_id: uuid.UUID | None = None
    check_id: str | None = None

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.type, self.subject)


def fingerprint(kind: str, subject: str) -> str:
    return hashlib.sha256(f"{kind}\n{subject}".encode()).hexdigest()


def _log_points(value: float, per_decade: float, cap: float) -> float:
    return min(cap, per_decade * math.log10(1 + max(value, 0)))


def impact(
    *,
    severity: str | None = None,
    clicks: float = 0,
    impressions: float = 0,
    volume: float = 0,
    urls: float = 0,
    positions_lost: float = 0,
) -> int:
    """0-100: severity (error 40, warning 20, notice 5, an opportunity 10) + clicks (10 a
    decade, at most 30) + impressions (5 a decade, at most 20) + search volume (5 a decade, at
    most 20) + URLs affected (10 a decade, at most 20) + positions lost (1 each, at most 20)."""
    score: float = SEVERITY_POINTS.get(severity or "", OPPORTUNITY_POINTS)
    score += _log_points(clicks, 10, 30) + _log_points(impressions, 5, 20)
    score += _log_points(volume, 5, 20) + _log_points(urls, 10, 20)
    score += min(20.0, max(positions_lost, 0))
    return max(0, min(100, round(score)))


def priority_of(score: int, kind: str, evidence: dict[str, Any]) -> str:
    """The catalog's rule: critical from 80 (or an indexing blocker on a page with clicks),
    high from 60, medium from 30, else low."""
    if score >= 80 or (kind == "fix_indexing" and (evidence.get("clicks") or 0) > 0):
        return "critical"
    if score >= 60:
        return "high"
    return "medium" if score >= 30 else "low"


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def subject_url(url: str) -> str:
    """A URL as subjects name it: normalized as the page inventory keys pages."""
    return normalize(url) or url


# --- audits ---------------------------------------------------------------------------------


def from_audit(
    audit_id: uuid.UUID,
    issues: list[SeoAuditIssue],
    traffic: dict[str, tuple[int, int]],
) -> list[Candidate]:
    """One fix_technical_issue per check failing in the audit at error or warning (not per
    URL); `traffic` is (clicks, impressions) of the pages each check found, over 28 days."""
    found = []
    for issue in issues:
        if issue.severity not in ("error", "warning") or issue.affected_urls <= 0:
            continue
        check = CHECKS.get(issue.check_id)
        clicks, impressions = traffic.get(issue.check_id, (0, 0))
        found.append(
            Candidate(
                type="fix_technical_issue",
                source="audit",
                subject=issue.check_id,
                title=_short(f"Fix: {check.title if check else issue.check_id}"),
                description=(
                    (f"{check.how_to_fix} " if check else "")
                    + f"The audit found it on {issue.affected_urls} URL(s)."
                ),
                impact=impact(
                    severity=issue.severity,
                    clicks=clicks,
                    impressions=impressions,
                    urls=issue.affected_urls,
                ),
                evidence={
                    "subject": issue.check_id,
                    "audit_id": str(audit_id),
                    "check_id": issue.check_id,
                    "category": issue.category,
                    "severity": issue.severity,
                    "affected_urls": issue.affected_urls,
                    "sample_urls": list(issue.sample_urls),
                    "change": issue.change,
                    "clicks_28d": clicks,
                    "impressions_28d": impressions,
                },
                target_urls=list(issue.sample_urls),
                audit_id=audit_id,
                check_id=issue.check_id,
            )
        )
    return found


# --- URL inspections ------------------------------------------------------------------------


def from_inspection(
    inspection: SeoUrlInspection, traffic: tuple[int, int] | None
) -> Candidate | None:
    """fix_indexing for a URL whose newest inspection's verdict is FAIL, or whose canonical
    Google chose differs from the one the page declares; `traffic` is the page's (clicks,
    impressions) over 28 days."""
    google = inspection.google_canonical
    declared = inspection.user_canonical
    mismatch = bool(google and declared and subject_url(google) != subject_url(declared))
    if inspection.verdict != "FAIL" and not mismatch:
        return None
    url = subject_url(inspection.url)
    clicks, impressions = traffic or (0, 0)
    failing = inspection.verdict == "FAIL"
    title = f"Get {url} indexed" if failing else f"Fix the canonical of {url}"
    why = (
        f"URL Inspection: {inspection.coverage_state or 'not indexed'} (verdict FAIL)."
        if failing
        else f"Google chose {google} as canonical; the page declares {declared}."
    )
    return Candidate(
        type="fix_indexing",
        source="url_inspection",
        subject=url,
        title=_short(title),
        description=why,
        impact=impact(
            severity="error" if failing else "warning", clicks=clicks, impressions=impressions
        ),
        evidence={
            "subject": url,
            "inspection_id": str(inspection.id),
            "verdict": inspection.verdict,
            "coverage_state": inspection.coverage_state,
            "google_canonical": google,
            "user_canonical": declared,
            "canonical_mismatch": mismatch,
            "clicks": clicks,
            "impressions": impressions,
        },
        target_urls=[url],
    )


# --- Search Console insights ------------------------------------------------------------------


def from_insight(insight: SearchInsight) -> Candidate:
    """improve_snippet per low_ctr row, target_striking_distance per striking-distance row (a
    query on a page), refresh_content per decaying page, resolve_cannibalization per query."""
    page = subject_url(insight.page_url)
    query = insight.query or ""
    evidence: dict[str, Any] = {
        "insight": insight.type,
        "query": insight.query,
        "page_url": page,
        "clicks": insight.clicks,
        "impressions": insight.impressions,
        "ctr": round(insight.ctr, 4),
        "expected_ctr": None if insight.expected_ctr is None else round(insight.expected_ctr, 4),
        "position": None if insight.position is None else round(insight.position, 1),
        "opportunity_clicks": insight.opportunity_clicks,
    }
    urls = [page]
    if insight.type == "low_ctr":
        kind, subject = "improve_snippet", f"{query}\n{page}"
        title = f"Improve the title and description of {page} for “{query}”"
    elif insight.type == "striking_distance":
        kind, subject = "target_striking_distance", f"{query}\n{page}"
        title = f"Move {page} up for “{query}” (position {insight.position or 0:.1f})"
    elif insight.type == "decaying_page":
        kind, subject = "refresh_content", page
        title = f"Refresh {page}: its clicks fell {abs(insight.change_pct or 0):.0f}%"
        evidence.update(
            previous_clicks=insight.previous_clicks,
            year_ago_clicks=insight.year_ago_clicks,
            change_pct=None if insight.change_pct is None else round(insight.change_pct, 1),
        )
    else:
        kind, subject = "resolve_cannibalization", query
        title = f"Resolve the cannibalization of “{query}”"
        urls = [subject_url(competing.url) for competing in insight.competing_pages]
        evidence["competing_urls"] = urls
    evidence["subject"] = subject
    return Candidate(
        type=kind,
        source="search_console",
        subject=subject,
        title=_short(title),
        description=insight.explanation,
        impact=impact(
            clicks=max(insight.opportunity_clicks, insight.clicks),
            impressions=insight.impressions,
        ),
        evidence=evidence,
        target_urls=urls,
        keywords=[query[:100]] if query else [],
    )


# --- rank -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankSeries:
    """A tracked keyword and its last completed positions, oldest first (None: not ranking)."""

    keyword_id: uuid.UUID
    keyword: str
    device: str
    location_code: int
    search_volume: int | None
    url: str | None
    target_url: str | None
    positions: list[int | None]


def from_rank(series: RankSeries) -> Candidate | None:
    """recover_ranking when the keyword was in the top 20 at the first of its last three checks
    and the newest is 5 or more places worse (not ranking counted as 100); two checks suffice
    while it has only two."""
    window = series.positions[-RANK_CHECKS:]
    if len(window) < 2 or window[0] is None or window[0] > RANK_TOP:
        return None
    before, now = window[0], window[-1] if window[-1] is not None else NOT_RANKING
    lost = now - before
    if lost < RANK_DROP:
        return None
    url = series.url or series.target_url
    shown = "not ranking" if window[-1] is None else f"position {now}"
    return Candidate(
        type="recover_ranking",
        source="rank",
        subject=str(series.keyword_id),
        title=_short(f"Recover “{series.keyword}” ({series.device}): {before} → {shown}"),
        description=(
            f"The keyword fell from position {before} to {shown} over its last "
            f"{len(window)} checks."
        ),
        impact=impact(severity="warning", volume=series.search_volume or 0, positions_lost=lost),
        evidence={
            "subject": str(series.keyword_id),
            "keyword_id": str(series.keyword_id),
            "keyword": series.keyword,
            "device": series.device,
            "location_code": series.location_code,
            "positions": window,
            "positions_lost": lost,
            "search_volume": series.search_volume,
            "url": series.url,
        },
        target_urls=[url] if url else [],
        keywords=[series.keyword],
    )


# --- AI visibility ----------------------------------------------------------------------------


def from_ai_gap(gap: dict[str, Any]) -> Candidate:
    """close_ai_gap for a tracked prompt whose newest run's answers named competitors and never
    the brand (seo.listAiAnswers with the competitor and mentioned=false shows them)."""
    named = ", ".join(gap["competitors"])
    return Candidate(
        type="close_ai_gap",
        source="ai_visibility",
        subject=str(gap["prompt_id"]),
        title=_short(f"Get named in AI answers to “{gap['text']}”"),
        description=(
            f"Asked “{gap['text']}”, the answer engines named {named} and not the brand "
            f"({gap['answers']} answers in the latest run). Publish content that answers it."
        ),
        impact=impact(severity="warning", urls=len(gap["competitors"])),
        evidence={
            "subject": str(gap["prompt_id"]),
            "prompt_id": str(gap["prompt_id"]),
            "prompt": gap["text"],
            "competitors": list(gap["competitors"]),
            "answers": gap["answers"],
            "run_id": gap["run_id"],
        },
        keywords=[gap["topic"]] if gap.get("topic") else [],
    )


# --- GEO --------------------------------------------------------------------------------------


def from_geo(readiness: GeoReadiness) -> list[Candidate]:
    """improve_geo per AI search or user agent robots.txt blocks (the site cannot appear in that
    engine's answers), and one for a missing or invalid llms.txt."""
    found = []
    for agent in readiness.crawler_access:
        if agent.effect != "blocked_from_answers":
            continue
        subject = f"crawler:{agent.bot}"
        found.append(
            Candidate(
                type="improve_geo",
                source="geo",
                subject=subject,
                title=_short(f"Let {agent.bot} ({agent.operator}) crawl the site"),
                description=(
                    f"robots.txt blocks {agent.bot}, {agent.operator}'s {agent.purpose} agent "
                    f"({agent.matched_rule}): the site cannot appear in that engine's answers."
                ),
                impact=impact(severity="error"),
                evidence={
                    "subject": subject,
                    "snapshot_id": str(readiness.snapshot_id),
                    "bot": agent.bot,
                    "operator": agent.operator,
                    "purpose": agent.purpose,
                    "matched_rule": agent.matched_rule,
                },
            )
        )
    live = readiness.llms_txt
    if not live.present or live.valid is False:
        found.append(
            Candidate(
                type="improve_geo",
                source="geo",
                subject="llms.txt",
                title="Publish an llms.txt" if not live.present else "Fix the site's llms.txt",
                description=(
                    "The site serves no /llms.txt: generate one (seo.generateLlmsTxt) and "
                    "publish it at the site's root."
                    if not live.present
                    else "The site's /llms.txt does not follow llmstxt.org's format: "
                    + "; ".join(live.problems[:3])
                ),
                impact=impact(severity="warning"),
                evidence={
                    "subject": "llms.txt",
                    "snapshot_id": str(readiness.snapshot_id),
                    "present": live.present,
                    "valid": live.valid,
                    "problems": live.problems[:10],
                },
                target_urls=[live.url] if live.url else [],
            )
        )
    return found
