"""The article pipeline against an OpenAI-compatible model, end to end on a real service process.

Each test runs `contentplatform serve` in a child process (tests.support.processes: a data
directory, databases and DBOS system database of its own; PostgreSQL and Redis when
CONTENTPLATFORM_TEST_DATABASE_URL / CONTENTPLATFORM_TEST_REDIS_URL are set) with
`LLM_PROVIDER=openai` pointed at `ChatServer` (tests.support.llm), a loopback stand-in that speaks
the real chat-completions protocol to the real `openai` client inside the service. The model
behind it is `StandIn`: it reads only the prompt it is sent, as a real model would, tells the
task from it (outline, introduction, section, conclusion, SEO metadata) and answers in the shape
the prompt asks for (JSON for the outline and the metadata, HTML citing the prompt's numbered
sources as [n] for the parts). A document goes in through the HTTP API
(createUploadUrl -> PUT -> confirmUpload) and is ingested by the service first; the article is
asked for with `generation.blog` and followed with `generation.getRun`, as a client does; what
the API does not show (the credit hold and the ledger) is read from the database directly.

What is proven: the draft reaches `reviewing` written from the model's answers, with provenance
naming provider, model and prompt version; every request the model saw (credentials, model,
sources in the prompt, never the tenant's file names, JSON mode where the pipeline parses JSON);
citations of the tenant's file are kept in the provenance (each passage with the sources it
cites) and leave no mark in the text, a citation of a source that does not exist is dropped;
hostile HTML in the model's answer is sanitized before it is stored; answers wrapped in Markdown
code fences, as chat models often send them, are unwrapped; the credits committed are what the
calls cost.
And every way the model can fail: a 429 is retried (honouring retry-after-ms) and the run
succeeds; 429s beyond the retries fail it as PROVIDER_UNAVAILABLE; a 401 fails it as
PROVIDER_ERROR without the key in any message; an outline that is not JSON fails it as
MODEL_OUTPUT_INVALID. A failed run rejects its draft with the reason and releases its hold.

The model stand-in, the client and the database readers are in stand_in.py.
"""

from __future__ import annotations

import json
import math
import re

from bs4 import BeautifulSoup

from contentplatform.generation import prompts
from tests.generation.stand_in import (
    GUIDE_SENTENCE,
    HOLD,
    KEY,
    KEYWORDS,
    MODEL,
    TOPIC,
    StandIn,
    assert_charged_once,
    assert_failed_visibly,
    part_of,
    prompt_of,
    usage_of,
    writing,
)
from tests.support.llm import ChatServer, Failure
from tests.support.processes import Services, Stack

# --- the tests ----------------------------------------------------------------------------------


def test_an_article_is_written_by_the_model_cited_sanitized_and_charged_what_it_cost(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    model = StandIn(hostile=True)
    service, api = writing(services, llm, model, "openai")

    started = api.blog(topic=TOPIC, keywords=KEYWORDS, idempotencyKey="kayak-1")
    assert started["status"] == "generating"
    run = api.finished(started["run"]["id"])

    assert run["status"] == "succeeded", run
    assert (run["step"], run["percent"], run["error"]) == ("finalize", 100, None)
    draft = api.draft(started["id"])
    assert draft["status"] == "reviewing"
    assert draft["version"] == 1
    assert draft["rejection_reason"] is None

    # What the model was asked, as the server saw it.
    seen = llm.requests
    parts = [part_of(request.json) for request in seen]
    outline = model.outline_json
    assert outline is not None
    sections = len(outline["sections"])
    assert sections >= 2  # a section per subject of the guide that was retrieved
    assert parts == ["outline", "intro", *["section"] * sections, "conclusion", "seo"]
    for request in seen:
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert request.json["model"] == MODEL
        assert request.json["messages"][0] == {"role": "system", "content": prompts.SYSTEM}
        assert request.headers["x-stainless-retry-count"] == "0"
    json_mode = [request.json.get("response_format") for request in seen]
    assert json_mode == [
        {"type": "json_object"},
        *[None] * (sections + 2),
        {"type": "json_object"},
    ]
    outline_prompt = prompt_of(seen[0].json)
    assert GUIDE_SENTENCE in outline_prompt  # the sources' own text
    assert f"Topic: {TOPIC}" in outline_prompt
    assert json.dumps(prompts.OUTLINE_FORMAT) in outline_prompt
    for request, section in zip(seen[2 : 2 + sections], outline["sections"], strict=True):
        assert f'Write the section "{section["heading"]}"' in prompt_of(request.json)
    seo_prompt = prompt_of(seen[-1].json)
    assert f"Title: {outline['title']}" in seo_prompt
    intro = BeautifulSoup(model.answered[1][1], "html.parser").p
    assert intro is not None
    # The article as written, without the markers citing the tenant's file.
    written = re.sub(r" ?\[\d+\]", "", intro.get_text())
    assert f"Article:\n{written}" in seo_prompt

    # The model is never told the tenant's file names, only numbered passages.
    for request in seen:
        assert "kayaking-guide" not in json.dumps(request.json)

    # The article is the model's, its hostile markup gone, and its citations of the tenant's
    # file in the provenance, not in the text.
    assert draft["title"] == outline["title"]
    content = draft["content"]
    page = BeautifulSoup(content, "html.parser")
    assert [h.get_text() for h in page.find_all("h2")] == [
        *(section["heading"] for section in outline["sections"]),
        "Key takeaways",
    ]
    # Every sentence the model wrote is in the article, once (a later part's repeat is dropped).
    for _, answer in model.answered:
        for sentence in re.findall(r"<(?:p|li)>([^<\[]+?) \[\d+\]</(?:p|li)>", answer):
            assert content.count(sentence) == 1, sentence
    assert "<script" not in content and "alert(" not in content
    assert "onclick" not in content and "steal()" not in content
    assert "javascript:" not in content
    assert "Paddle with a friend, as the guide advises" in content  # the text itself stays
    assert "[99]" not in page.get_text()  # cited a source that does not exist: dropped
    assert not re.search(r"\[\d+\]", page.get_text())  # no marker is left in the text
    assert page.select("sup, [id^=source-], #sources") == []
    assert "kayaking-guide" not in content

    provenance = draft["provenance"]
    assert provenance["provider"] == "openai"
    assert provenance["writer"] == "openai"
    assert provenance["model"] == MODEL
    assert provenance["prompt_version"] == prompts.PROMPT_VERSION
    assert provenance["run_id"] == run["id"]
    assert "note" not in provenance  # the offline writer's note
    # Every citation, in order of first use: the source, and the passage that cites it.
    numbers = [s["number"] for s in provenance["sources"]]
    assert numbers == list(range(1, len(numbers) + 1)) and numbers
    assert {s["document_name"] for s in provenance["sources"]} == {"kayaking-guide.md"}
    assert all(s["url"] is None and s["published_as"] is None for s in provenance["sources"])
    citations = provenance["citations"]
    cited = [n for citation in citations for n in citation["sources"]]
    assert list(dict.fromkeys(cited)) == numbers
    text = " ".join(page.get_text().split())
    for citation in citations:
        assert citation["text"] in text, citation
    assert [s["heading"] for s in provenance["sections"]] == [
        "Introduction",
        *(section["heading"] for section in outline["sections"]),
        "Key takeaways",
    ]
    assert all(section["chunk_ids"] for section in provenance["sections"])
    versions = api.request("GET", f"/v1/drafts/{started['id']}/versions")["data"]
    assert [(v["version"], v["author_type"]) for v in versions] == [(1, "ai")]

    # The metadata is the model's, held to the bounds; the caller's first keyword leads.
    seo_json = model.seo_json
    assert seo_json is not None
    assert draft["seo_meta"]["seo_title"] == seo_json["seo_title"]
    assert draft["seo_meta"]["meta_description"] == seo_json["meta_description"]
    assert draft["seo_meta"]["slug"] == seo_json["slug"]
    assert draft["seo_meta"]["focus_keywords"] == [
        "sea kayaking",
        "beginner kayaking",
        "kayak safety",
    ]
    assert draft["excerpt"] == seo_json["excerpt"]
    assert draft["seo_score"] is not None

    # Charged what the calls cost, as the server reported their usage: once.
    input_tokens, output_tokens = usage_of(model.answered)
    assert provenance["usage"] == {"input_tokens": input_tokens, "output_tokens": output_tokens}
    assert run["credits_committed"] == min(HOLD, math.ceil((input_tokens + output_tokens) / 1000))
    assert_charged_once(stack, api.tenant_id, run)
    assert stack.ended_workflow_status(f"generation:{run['id']}") == "SUCCESS"
    assert KEY not in service.tail(1_000_000)
    assert "Traceback" not in service.tail(1_000_000)


def test_a_rate_limited_call_is_retried_after_the_servers_delay_and_the_run_succeeds(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    model = StandIn()
    _, api = writing(services, llm, model, "ratelimited")
    llm.script(Failure(429, "Rate limit reached", "rate_limit_error", {"retry-after-ms": "10"}))

    started = api.blog(topic=TOPIC, keywords=KEYWORDS)
    run = api.finished(started["run"]["id"])

    assert run["status"] == "succeeded", run
    assert api.draft(started["id"])["status"] == "reviewing"
    seen = llm.requests
    # The first outline call was refused, the client tried again; nothing else was repeated.
    assert [part_of(r.json) for r in seen[:2]] == ["outline", "outline"]
    assert [r.headers["x-stainless-retry-count"] for r in seen[:2]] == ["0", "1"]
    assert seen[0].json == seen[1].json
    assert [part_of(r.json) for r in seen[1:]] == model.parts_answered()
    assert all(r.headers["x-stainless-retry-count"] == "0" for r in seen[2:])
    # Only answered calls are paid for.
    input_tokens, output_tokens = usage_of(model.answered)
    provenance = api.draft(started["id"])["provenance"]
    assert provenance["usage"] == {"input_tokens": input_tokens, "output_tokens": output_tokens}
    assert_charged_once(stack, api.tenant_id, run)


def test_rate_limits_beyond_the_retries_fail_the_run_as_provider_unavailable(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    _, api = writing(services, llm, StandIn(), "limited")
    limited = Failure(429, "Rate limit reached", "rate_limit_error", {"retry-after": "0"})
    llm.script(limited, limited, limited)

    started = api.blog(topic=TOPIC, keywords=KEYWORDS)
    run = assert_failed_visibly(stack, api, started, "PROVIDER_UNAVAILABLE", retryable=True)

    assert "rate limiting us (429, after 2 retries)" in run["error"]["message"]
    assert MODEL in run["error"]["message"]
    # One call and its two retries, then nothing more.
    assert [r.headers["x-stainless-retry-count"] for r in llm.requests] == ["0", "1", "2"]


def test_a_refused_key_fails_the_run_as_provider_error_without_the_key_anywhere(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    service, api = writing(services, llm, StandIn(), "badkey")
    # As OpenAI answers a wrong key: its message quotes the key.
    llm.script(
        Failure(
            401,
            f"Incorrect API key provided: {KEY}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
        )
    )

    started = api.blog(topic=TOPIC, keywords=KEYWORDS)
    run = assert_failed_visibly(stack, api, started, "PROVIDER_ERROR", retryable=False)

    assert "refused our credentials (401)" in run["error"]["message"]
    assert "CONTENTPLATFORM_LLM_API_KEY" in run["error"]["message"]
    assert len(llm.requests) == 1  # a refusal is not retried
    assert KEY not in json.dumps(run)
    assert KEY not in json.dumps(api.draft(started["id"]))
    assert KEY not in service.tail(1_000_000)


def test_an_outline_that_is_not_json_fails_the_run_as_model_output_invalid(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    model = StandIn(outline="Sure! Here is an outline.\n\n1. Choosing a kayak\n2. Weather")
    _, api = writing(services, llm, model, "notjson")

    started = api.blog(topic=TOPIC, keywords=KEYWORDS)
    run = assert_failed_visibly(stack, api, started, "MODEL_OUTPUT_INVALID", retryable=True)

    assert run["error"]["message"] == "The model's outline was not valid JSON."
    assert model.parts_answered() == ["outline"]  # nothing is written from no plan
    assert llm.requests[0].json["response_format"] == {"type": "json_object"}


# --- regressions ------------------------------------------------------------------------------


def test_answers_fenced_as_markdown_code_blocks_are_unwrapped(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    """Chat models often wrap what they are asked for in a code fence (```html ... ```) even when
    told to answer with HTML only: the fence is not part of the article.

    Was: only JSON answers were unwrapped; each part's fence was stored in the article as text
    ("```html" before its first paragraph, "```" after its last)."""
    model = StandIn(fenced=True)
    _, api = writing(services, llm, model, "fenced")

    started = api.blog(topic=TOPIC, keywords=KEYWORDS)
    run = api.finished(started["run"]["id"])

    assert run["status"] == "succeeded", run
    draft = api.draft(started["id"])
    assert "```" not in draft["content"]
    assert not draft["content"].startswith("html") and "\nhtml" not in draft["content"]
    page = BeautifulSoup(draft["content"], "html.parser")
    assert not re.search(r"\[\d+\]", page.get_text())  # the fences' markers were read
    assert draft["provenance"]["citations"]  # as citations, kept in the provenance
    assert draft["seo_meta"]["slug"] == "sea-kayaking-for-beginners"  # the fenced JSON was read
    assert draft["excerpt"] and "```" not in draft["excerpt"]
