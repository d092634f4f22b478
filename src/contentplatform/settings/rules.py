"""The editorial lint: content rules checked against a title and HTML content.

Pure and synchronous (the service runs it in a worker thread, so a slow check never blocks the
event loop). What is checked is text: the title, a blank line, then the content's plain text
(drafts/html.py); a violation's `start`/`end` are offsets into that text. Length, disclaimer
and structure rules read the content alone (its text, headings and links).

Regex rules run on the maintained `regex` library with a match timeout
(REGEX_TIMEOUT_SECONDS each, REGEX_BUDGET_SECONDS for all of one check), and release the GIL
while matching (`concurrent=True`): a pattern that backtracks catastrophically is cut off and
reported as skipped, never hangs the worker. Other rules use phrases escaped into `re`
patterns, which cannot backtrack badly.

`llm_check` rules need a language model to judge the text: they are skipped, with the reason.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import regex
from pydantic import TypeAdapter

from contentplatform.drafts import html
from contentplatform.settings import rule_schemas
from contentplatform.settings.rule_schemas import CheckResult, Skipped, Violation

# The library checks its timeout now and then, not at every step: a pattern it cuts off has run
# a few times longer (about 0.5 s for 0.1 s, measured on 5,000 characters). The budget is
# real time: once spent, the check's remaining regex rules are skipped too.
REGEX_TIMEOUT_SECONDS = 0.1
REGEX_BUDGET_SECONDS = 2.0
# Violations one rule reports at most (a banned word used 500 times is one problem).
MAX_PER_RULE = 20
EXCERPT_CONTEXT = 40
MAX_EXCERPT = 200
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")

CONFIGS: TypeAdapter[Any] = TypeAdapter(rule_schemas.RuleConfig)


def parse_config(rule_type: str, config: dict[str, Any]) -> Any:
    """The config as its type's model (pydantic.ValidationError when it does not fit)."""
    return CONFIGS.validate_python({**config, "type": rule_type})


def stored_config(model: Any) -> dict[str, Any]:
    """What is stored of a validated config: its fields, snake_case, without the type."""
    dumped: dict[str, Any] = model.model_dump(mode="json", exclude={"type"})
    return dumped


@dataclass(frozen=True)
class Rule:
    """A rule as the lint reads it (a snapshot of the row, safe to hand to a thread)."""

    id: uuid.UUID
    name: str
    type: str
    config: dict[str, Any]
    severity: str


@dataclass(frozen=True)
class _Text:
    checked: str  # title, blank line, body
    body: str  # the content's text
    body_start: int  # where the body begins in `checked`
    content: str  # the HTML


def lint(rules: Sequence[Rule], title: str | None, content: str, *, offline: bool) -> CheckResult:
    body = html.plain_text(content)
    head = f"{title.strip()}\n\n" if title and title.strip() else ""
    text = _Text(head + body, body, len(head), content)
    violations: list[Violation] = []
    skipped: list[Skipped] = []
    deadline = time.monotonic() + REGEX_BUDGET_SECONDS
    for rule in rules:
        config = parse_config(rule.type, rule.config)
        if isinstance(config, rule_schemas.LlmCheckConfig):
            reason = (
                "llm_check rules need a language model; the offline writer cannot judge them."
                if offline
                else "llm_check rules are not run by this version: judge them in review."
            )
            skipped.append(Skipped(rule_id=rule.id, rule_name=rule.name, reason=reason))
            continue
        try:
            found = list(_limited(_check(config, text, deadline)))
        except TimeoutError:
            reason = (
                f"The pattern took longer than its {REGEX_TIMEOUT_SECONDS} s match timeout (or "
                f"the check's {REGEX_BUDGET_SECONDS} s for patterns ran out) and was cut off."
            )
            skipped.append(Skipped(rule_id=rule.id, rule_name=rule.name, reason=reason))
            continue
        violations.extend(
            Violation(
                rule_id=rule.id,
                rule_name=rule.name,
                severity=rule.severity,
                message=message,
                excerpt=excerpt,
                start=start,
                end=end,
            )
            for message, excerpt, start, end in found
        )
    return CheckResult(
        passed=not any(v.severity == "error" for v in violations),
        violations=violations,
        checked=len(rules) - len(skipped),
        skipped=skipped,
    )


Found = tuple[str, str, int | None, int | None]  # message, excerpt, start, end


def _limited(found: Iterator[Found]) -> Iterator[Found]:
    for index, item in enumerate(found):
        if index == MAX_PER_RULE:
            return
        yield item


def _excerpt(text: str, start: int, end: int) -> str:
    left = max(0, start - EXCERPT_CONTEXT)
    piece = " ".join(text[left : end + EXCERPT_CONTEXT].split())
    return piece[:MAX_EXCERPT]


def _at(text: str, start: int, end: int, message: str) -> Found:
    return message, _excerpt(text, start, end), start, end


def _phrase_pattern(phrase: str, case_sensitive: bool) -> re.Pattern[str]:
    """The phrase as a whole word or words (where it begins and ends with a word character),
    whitespace inside it matching any run of whitespace."""
    body = r"\s+".join(re.escape(word) for word in phrase.split())
    left = r"\b" if re.match(r"\w", phrase) else ""
    right = r"\b" if re.search(r"\w$", phrase) else ""
    return re.compile(left + body + right, 0 if case_sensitive else re.IGNORECASE)


def _check(config: Any, text: _Text, deadline: float) -> Iterator[Found]:
    checked = text.checked
    if isinstance(config, rule_schemas.BannedPhraseConfig):
        for phrase in config.phrases:
            for match in _phrase_pattern(phrase, config.case_sensitive).finditer(checked):
                yield _at(
                    checked, match.start(), match.end(), f"Banned phrase \u201c{phrase}\u201d."
                )
    elif isinstance(config, rule_schemas.RequiredPhraseConfig):
        missing = [
            phrase
            for phrase in config.phrases
            if not _phrase_pattern(phrase, config.case_sensitive).search(checked)
        ]
        if config.match == "all":
            for phrase in missing:
                yield f"Required phrase \u201c{phrase}\u201d is missing.", "", None, None
        elif len(missing) == len(config.phrases):
            listed = ", ".join(f"\u201c{phrase}\u201d" for phrase in config.phrases)
            yield f"None of the required phrases is there: {listed}.", "", None, None
    elif isinstance(config, rule_schemas.RegexConfig):
        yield from _regex(config, checked, deadline)
    elif isinstance(config, rule_schemas.MaxSentenceWordsConfig):
        for match in _SENTENCE.finditer(checked):
            words = html.count_words(match.group())
            if words > config.max_words:
                message = f"A sentence of {words} words (at most {config.max_words})."
                yield _at(checked, match.start(), match.end(), message)
    elif isinstance(config, rule_schemas.WordCountConfig):
        words = html.count_words(text.body)
        if config.min_words is not None and words < config.min_words:
            yield f"{words} words, fewer than {config.min_words}.", "", None, None
        if config.max_words is not None and words > config.max_words:
            yield f"{words} words, more than {config.max_words}.", "", None, None
    elif isinstance(config, rule_schemas.HeadingStructureConfig):
        yield from _headings(config, text)
    elif isinstance(config, rule_schemas.LinkPolicyConfig):
        yield from _links(config, text.content)
    elif isinstance(config, rule_schemas.DisclaimerConfig):
        yield from _disclaimer(config, text.body)


@lru_cache(maxsize=256)
def _compiled(pattern: str, flags: int) -> Any:
    return regex.compile(pattern, flags)


def _regex(config: rule_schemas.RegexConfig, checked: str, deadline: float) -> Iterator[Found]:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    pattern = _compiled(config.pattern, rule_schemas.flags(config))
    timeout = min(REGEX_TIMEOUT_SECONDS, left)
    if config.mode == "require":
        if pattern.search(checked, timeout=timeout, concurrent=True) is None:
            message = config.message or f"Nothing matches the required pattern {config.pattern!r}."
            yield message, "", None, None
        return
    # Matched in one call under the timeout (a lazy finditer would pause between matches).
    spans = [
        match.span()
        for match in pattern.finditer(checked, timeout=timeout, concurrent=True)
        if match.end() > match.start()
    ]
    for start, end in spans:
        yield _at(checked, start, end, config.message or f"Matches {config.pattern!r}.")


def _headings(config: rule_schemas.HeadingStructureConfig, text: _Text) -> Iterator[Found]:
    found = html.headings(text.content)

    def where(heading: str) -> tuple[int | None, int | None]:
        at = text.checked.find(heading, text.body_start)
        return (at, at + len(heading)) if at >= 0 else (None, None)

    if not config.allow_h1:
        for level, heading in found:
            if level == 1:
                start, end = where(heading)
                yield (
                    f"A level-1 heading \u201c{heading}\u201d (the title is the h1).",
                    heading,
                    start,
                    end,
                )
    h2 = sum(1 for level, _ in found if level == 2)
    if h2 < config.min_h2:
        yield f"{h2} level-2 headings, fewer than {config.min_h2}.", "", None, None
    if config.no_skipped_levels:
        previous = 1  # the title
        for level, heading in found:
            if level > previous + 1:
                start, end = where(heading)
                message = f"The heading \u201c{heading}\u201d skips from h{previous} to h{level}."
                yield message, heading, start, end
            previous = level


def _host_in(host: str, domains: Sequence[str]) -> bool:
    return any(host == d.lower() or host.endswith("." + d.lower()) for d in domains)


def _links(config: rule_schemas.LinkPolicyConfig, content: str) -> Iterator[Found]:
    hrefs = html.links(content)
    if config.max_links is not None and len(hrefs) > config.max_links:
        yield f"{len(hrefs)} links, more than {config.max_links}.", "", None, None
    for href in hrefs:
        parts = urlsplit(href)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            continue  # relative, mailto:, anchors: not the web
        host = parts.hostname.lower()
        if config.require_https and parts.scheme == "http":
            yield f"A link over http: {href}.", href[:MAX_EXCERPT], None, None
        if _host_in(host, config.blocked_domains):
            yield f"A link to a blocked domain: {href}.", href[:MAX_EXCERPT], None, None
        elif config.allowed_domains is not None and not _host_in(host, config.allowed_domains):
            yield f"A link outside the allowed domains: {href}.", href[:MAX_EXCERPT], None, None


def _folded(value: str) -> str:
    return " ".join(value.casefold().split())


def _disclaimer(config: rule_schemas.DisclaimerConfig, body: str) -> Iterator[Found]:
    paragraphs = [p for p in body.split("\n\n") if p.strip()]
    wanted = _folded(config.text)
    if config.position == "start":
        where = paragraphs[:1]
    elif config.position == "end":
        where = paragraphs[-1:]
    else:
        where = [body]
    if not any(wanted in _folded(p) for p in where):
        place = {"start": " in the first paragraph", "end": " in the last paragraph"}
        message = f"The disclaimer is missing{place.get(config.position, '')}."
        yield message, config.text[:MAX_EXCERPT], None, None


def banned_terms_in(terms: Sequence[str], title: str, content: str) -> list[str]:
    """The brand voice's banned terms the article uses (for its provenance)."""
    checked = f"{title}\n\n{html.plain_text(content)}"
    return [term for term in terms if _phrase_pattern(term, False).search(checked)]
