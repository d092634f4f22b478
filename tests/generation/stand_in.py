"""The model behind the OpenAI-compatible tests, a client of one service process, and readers of
the records the API does not show (credit holds and debits). Shared by test_openai_pipeline.py
and test_recovery.py.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from typing import Any, cast

from sqlalchemy import Table, select

from contentplatform.ai.tokens import count_tokens
from contentplatform.credits.models import CreditLedgerEntry, CreditReservation
from tests.support.llm import ChatServer, Failure, Reply
from tests.support.processes import TIMEOUT, Service, ServiceClient, Services, Stack, wait_for

KEY = "sk-test"
MODEL = "test-model"
HOLD = 40  # generation_credit_hold, the default
BLOG_KIND = "generation.blog"
FINISHED = ("succeeded", "failed", "cancelled")

RESERVATIONS = cast(Table, CreditReservation.__table__)
LEDGER = cast(Table, CreditLedgerEntry.__table__)

# A knowledge document with a few sections on distinct subjects, as a content team would have.
GUIDE = """# Harbour Sea Kayaking Guide

## Choosing a kayak

A sit-on-top kayak is the easiest boat for a beginner because it cannot fill with water and \
climbing back on after a capsize takes seconds. Touring kayaks are longer and narrower, so they \
track straight and cover distance with less effort once a paddler has found their balance. Rent \
before you buy: most harbour outfitters let you try three boat shapes in one afternoon for the \
price of a single hire.

## Reading the weather

Check the marine forecast on the morning of every trip and again at the launch site. An offshore \
wind is the most dangerous condition for a beginner, because it pushes a tired paddler away from \
the beach. Plan the first half of every trip into the wind, so the wind helps you home when your \
arms are tired. Fog can roll in within minutes on summer afternoons, so carry a compass even on \
short trips.

## Safety equipment

Every paddler wears a buoyancy aid, zipped and fitted, from the moment they step into the boat. \
A whistle clipped to the buoyancy aid carries much further over water than a shout. Pack a dry \
bag with a warm layer, a snack and a phone in a waterproof case. Cold water is the hidden danger \
of sea kayaking: a wetsuit or drysuit is needed whenever the water is colder than fifteen \
degrees.

## Rescue skills

Practise the assisted rescue in calm water before you paddle in open sea. The rescuer holds the \
empty kayak steady while the swimmer climbs on from the side, keeping their weight low. A paddle \
float turns the spare paddle into an outrigger for a self-rescue when nobody is near.
"""
# A sentence of the guide, to find in the prompts.
GUIDE_SENTENCE = "An offshore wind is the most dangerous condition for a beginner"

TOPIC = "Sea kayaking for beginners"
KEYWORDS = ["sea kayaking", "kayak safety"]
HOSTILE = (
    '<p onclick="steal()">Paddle with a friend, as the guide advises [1] and as no source '
    "says [99].</p><script>alert('owned')</script>"
    '<p><a href="javascript:alert(2)">Read more</a></p>'
)


def openai_settings(llm: ChatServer, **more: str) -> dict[str, str]:
    """The service's settings for a model behind `llm` (small chunks: a source per section)."""
    return {
        "llm_provider": "openai",
        "llm_base_url": llm.base_url,
        "llm_model": MODEL,
        "llm_api_key": KEY,
        "llm_max_retries": "2",
        "llm_timeout_seconds": "10",
        "chunk_tokens": "120",
        "chunk_overlap_tokens": "16",
        **more,
    }


# --- the model ----------------------------------------------------------------------------------

_SOURCE = re.compile(r"^\[(\d+)\](?: \((.*)\))?$", re.M)
_SECTION_TASK = re.compile(r'Write the section "(.*)" \(no heading\)')
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def prompt_of(request: dict[str, Any]) -> str:
    """The user message of a chat-completions request (the pipeline sends system + user)."""
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")


def part_of(request: dict[str, Any]) -> str:
    """Which task of the pipeline a request is, told from its prompt as a model reads it."""
    prompt = prompt_of(request)
    if "Plan an article on the topic" in prompt:
        return "outline"
    if "Write its search metadata" in prompt:
        return "seo"
    if "Write the introduction" in prompt:
        return "intro"
    if "a <ul> of 3 to 5" in prompt:
        return "conclusion"
    if _SECTION_TASK.search(prompt):
        return "section"
    return "unknown"


def sources_in(prompt: str, nth: int = 0) -> list[tuple[int, str, str]]:
    """The numbered sources of a prompt: (number, heading, the `nth` sentence worth quoting,
    counting round)."""
    found = []
    matches = list(_SOURCE.finditer(prompt))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(prompt)
        body = prompt[match.end() : end]
        sentences = [
            s.strip()
            for line in body.splitlines()
            if line.strip() and not line.lstrip().startswith(("#", "|"))
            for s in _SENTENCE.split(line)
        ]
        worth = [s for s in sentences if len(s.split()) >= 6]
        sentence = worth[nth % len(worth)] if worth else ""
        heading = (match.group(2) or "Notes").split(" > ")[-1]
        found.append((int(match.group(1)), heading, sentence))
    return found


class StandIn:
    """A chat model doing each task of the article pipeline the way a real one does, from the
    prompt alone: an outline as JSON in the shape the prompt shows (a section per subject of the
    sources, each naming its source numbers), each part as HTML quoting the prompt's sources and
    citing them as [n] (each part a sentence of its own place in the article, as a model asked
    not to repeat the sections before would), the metadata as JSON. Thread-safe (the stub serves
    requests in threads).

    `hostile`: the first section also carries an `onclick`, a `<script>`, a `javascript:` link
    and a citation of a source that does not exist. `fenced`: every answer comes in a Markdown
    code fence (```html, ```json), as chat models often answer. `outline`: answer the outline
    with this text instead. `hold`: block the first answer to this part (e.g. "section") until
    `release` is set (`holding` is set while it waits), as a model that hangs.
    """

    def __init__(
        self,
        *,
        hostile: bool = False,
        fenced: bool = False,
        outline: str | None = None,
        hold: str | None = None,
    ) -> None:
        self.hostile = hostile
        self.fenced = fenced
        self.outline_text = outline
        self.hold = hold
        self.holding = threading.Event()
        self.release = threading.Event()
        # (request, answer) of every answer given, in the order they were given.
        self.answered: list[tuple[dict[str, Any], str]] = []
        self.outline_json: dict[str, Any] | None = None
        self.seo_json: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._sections = 0

    def __call__(self, request: dict[str, Any]) -> str | Reply | Failure:
        part = part_of(request)
        prompt = prompt_of(request)
        if part == "unknown":
            return Failure(400, f"the stand-in cannot tell the task of: {prompt[:300]}")
        with self._lock:
            hold = part == self.hold and not self.holding.is_set()
            if hold:
                self.holding.set()
        if hold:
            self.release.wait(TIMEOUT)
        answer: str = getattr(self, f"_{part}")(prompt)
        if self.fenced:
            answer = f"```{'json' if part in ('outline', 'seo') else 'html'}\n{answer}\n```"
        with self._lock:
            self.answered.append((request, answer))
        return answer

    def parts_answered(self) -> list[str]:
        with self._lock:
            return [part_of(request) for request, _ in self.answered]

    def _outline(self, prompt: str) -> str:
        if self.outline_text is not None:
            return self.outline_text
        sources = sources_in(prompt)
        by_heading: dict[str, list[int]] = {}
        for ref, heading, _ in sources:
            by_heading.setdefault(heading, []).append(ref)
        sections = [
            {"heading": heading, "sources": refs, "points": [f"What the guide says on {heading}"]}
            for heading, refs in list(by_heading.items())[:3]
        ]
        outline = {
            "title": f"{TOPIC}: a practical guide",
            "intro": {"sources": [sources[0][0]], "points": ["Why beginners love the sea"]},
            "sections": sections,
            "conclusion": {"heading": "Key takeaways", "points": ["Prepare, then paddle"]},
        }
        with self._lock:
            self.outline_json = outline
        return json.dumps(outline)

    def _paragraphs(self, prompt: str) -> list[str]:
        return [
            f"<p>{sentence} [{ref}]</p>"
            for ref, _, sentence in sources_in(prompt, _place(prompt))[:2]
            if sentence
        ]

    def _intro(self, prompt: str) -> str:
        return "".join(self._paragraphs(prompt))

    def _section(self, prompt: str) -> str:
        with self._lock:
            self._sections += 1
            first = self._sections == 1
        text = "".join(self._paragraphs(prompt))
        return text + HOSTILE if self.hostile and first else text

    def _conclusion(self, prompt: str) -> str:
        points = [
            f"<li>{sentence} [{ref}]</li>"
            for ref, _, sentence in sources_in(prompt, _place(prompt))[:3]
        ]
        return f"<ul>{''.join(points)}</ul>"

    def _seo(self, prompt: str) -> str:
        metadata = {
            "seo_title": "Sea kayaking for beginners: safety, weather and gear",
            "meta_description": (
                "Sea kayaking for beginners: how to choose a kayak, read the marine forecast, "
                "pack the right safety equipment and practise rescues."
            ),
            "slug": "sea-kayaking-for-beginners",
            "focus_keywords": ["sea kayaking", "beginner kayaking"],
            "excerpt": "How a beginner chooses a kayak, reads the weather and paddles safely.",
        }
        with self._lock:
            self.seo_json = metadata
        return json.dumps(metadata)


_BEFORE = re.compile(r"^Sections before this one: (.*)$", re.M)


def _place(prompt: str) -> int:
    """Which part of the article a prompt asks for (0: the introduction, then 1, 2, ...), told
    from the sections it says come before. A part quotes its sources' sentence of that place, as
    a model asked not to repeat the sections before says something else."""
    before = _BEFORE.search(prompt)
    if before is None or "Write the introduction" in prompt:
        return 0
    return 1 + (0 if before.group(1) == "none" else len(before.group(1).split(", ")))


def usage_of(answered: list[tuple[dict[str, Any], str]]) -> tuple[int, int]:
    """What the stub reported for these answers (usage "auto": counted like count_tokens)."""
    prompt = sum(
        count_tokens(str(m.get("content") or ""))
        for request, _ in answered
        for m in request["messages"]
    )
    return prompt, sum(count_tokens(answer) for _, answer in answered)


# --- the API, as a client uses it ---------------------------------------------------------------


class Api(ServiceClient):
    """A tenant's editor generating articles."""

    @property
    def tenant_id(self) -> uuid.UUID:
        return uuid.UUID(self.request("GET", "/v1/system/whoami")["tenant_id"])

    def ingest(self, filename: str, text: str) -> str:
        """createUploadUrl -> PUT -> confirmUpload, then wait until it is ready; its id."""
        file_type = filename.rsplit(".", 1)[-1]
        document_id: str = self.upload(filename, file_type, text.encode())["id"]
        document = wait_for(
            f"document {document_id} to be ingested",
            lambda: (
                (d := self.request("GET", f"/v1/documents/{document_id}"))["status"]
                in ("ready", "error")
                and d
            ),
            self.service,
            interval=0.1,
        )
        assert document["status"] == "ready", document
        return document_id

    def blog(self, **data: Any) -> dict[str, Any]:
        """generation.blog: the draft in `generating`, with its run."""
        return self.request("POST", "/v1/generation/blog", json=data)

    def run(self, run_id: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/generation/runs/{run_id}")

    def draft(self, draft_id: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/drafts/{draft_id}")

    def finished(self, run_id: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The run once it has ended, either way."""
        return wait_for(
            f"run {run_id} to finish",
            lambda: (run := self.run(run_id))["status"] in FINISHED and run,
            self.service,
            timeout=timeout,
            interval=0.1,
        )


# --- the records behind the API -----------------------------------------------------------------


def blog_holds(stack: Stack, tenant_id: uuid.UUID) -> list[Any]:
    """The tenant's generation.blog credit holds, oldest first."""
    return stack.rows(
        select(RESERVATIONS)
        .where(RESERVATIONS.c.tenant_id == tenant_id, RESERVATIONS.c.kind == BLOG_KIND)
        .order_by(RESERVATIONS.c.created_at)
    )


def blog_debits(stack: Stack, tenant_id: uuid.UUID) -> list[Any]:
    """The tenant's generation.blog debits in the ledger, oldest first."""
    return stack.rows(
        select(LEDGER)
        .where(
            LEDGER.c.tenant_id == tenant_id,
            LEDGER.c.entry_type == "debit",
            LEDGER.c.kind == BLOG_KIND,
        )
        .order_by(LEDGER.c.created_at)
    )


def assert_charged_once(stack: Stack, tenant_id: uuid.UUID, run: dict[str, Any]) -> Any:
    """The run's hold committed at what the run says it cost, with exactly one debit of that
    amount; the hold."""
    (hold,) = blog_holds(stack, tenant_id)
    assert str(hold.id) == run["reservation_id"]
    assert hold.status == "committed"
    assert hold.amount == HOLD
    assert hold.committed_amount == run["credits_committed"]
    assert [(row.amount, row.reservation_id) for row in blog_debits(stack, tenant_id)] == [
        (-run["credits_committed"], hold.id)
    ]
    return hold


def assert_failed_visibly(
    stack: Stack, api: Api, started: dict[str, Any], code: str, retryable: bool
) -> dict[str, Any]:
    """The run failed with `code`, its draft rejected with the reason, its hold released and
    nothing charged; the run."""
    run = api.finished(started["run"]["id"])
    assert run["status"] == "failed", run
    assert run["error"]["code"] == code, run
    assert run["error"]["retryable"] is retryable
    assert run["finished_at"] is not None
    assert run["credits_committed"] is None
    draft = api.draft(started["id"])
    assert draft["status"] == "rejected"
    assert draft["rejection_reason"] == f"Generation failed: {run['error']['message']}"
    assert draft["version"] == 0  # nothing was written
    (hold,) = blog_holds(stack, api.tenant_id)
    assert str(hold.id) == run["reservation_id"]
    assert hold.status == "released"
    assert hold.committed_amount is None
    assert blog_debits(stack, api.tenant_id) == []
    # The workflow ended (by failing the run).
    assert stack.ended_workflow_status(f"generation:{run['id']}") == "SUCCESS"
    return run


# --- fixtures -----------------------------------------------------------------------------------


def writer(services: Services, service: Service, name: str) -> Api:
    """An editor of a new organization whose knowledge base holds GUIDE."""
    api = Api.of_new_org(services, service, name)
    api.ingest("kayaking-guide.md", GUIDE)
    return api


def writing(
    services: Services, llm: ChatServer, model: StandIn, name: str, **settings: str
) -> tuple[Service, Api]:
    """A service writing with `model` behind `llm` (openai_settings, and `settings`), and on it
    an editor of a new organization whose knowledge base holds GUIDE (`writer`)."""
    llm.responder = model
    service = services.start(**openai_settings(llm, **settings))
    return service, writer(services, service, name)
