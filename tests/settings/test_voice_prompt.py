"""The brand voice in what the model is asked, on a real service process writing with an
OpenAI-compatible model (tests/generation/stand_in.py: the stand-in records every request):
every call's system prompt carries the voice and the generation-stage rules, bounded however
long the style guide, and the draft's provenance records the voice version it was written
with."""

from __future__ import annotations

from contentplatform.generation import prompts
from tests.generation.stand_in import KEYWORDS, TOPIC, Api, StandIn, writing
from tests.support.llm import ChatServer
from tests.support.processes import Services, Stack


def test_the_model_is_asked_to_write_in_the_brand_voice(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    service, editor = writing(services, llm, StandIn(), "voice")
    admin = Api(service, services.token(editor.org, "admin"), editor.org)
    voice = {
        "tone": ["calm", "encouraging"],
        "formality": "casual",
        "person": "first_plural",
        "readingGrade": 7,
        "audiences": [{"name": "Beginner paddlers", "description": "First season on the water"}],
        "styleGuide": "Short sentences. " * 580,  # far past what a prompt carries
        "vocabulary": {"preferred": [{"term": "paddle", "insteadOf": "oar"}], "banned": ["epic"]},
        "examples": [{"title": "Launching", "content": "We push off gently and look ahead."}],
    }
    admin.request("PUT", "/v1/settings/brand-voice", json=voice)
    admin.request("PUT", "/v1/settings/brand-voice", json={**voice, "expectedVersion": 1})
    rule = {"name": "No jargon", "type": "banned_phrase", "config": {"phrases": ["leverage"]}}
    admin.request("POST", "/v1/settings/content-rules", json={**rule, "stages": ["generation"]})

    started = editor.blog(topic=TOPIC, keywords=KEYWORDS, idempotencyKey="voice-1")
    run = editor.finished(started["run"]["id"])

    assert run["status"] == "succeeded", run
    draft = editor.draft(started["id"])
    assert draft["provenance"]["brand_voice_version"] == 2
    assert draft["provenance"]["banned_terms_found"] == []
    assert llm.requests
    for request in llm.requests:
        system = request.json["messages"][0]
        assert system["role"] == "system"
        text = system["content"]
        assert text.startswith(prompts.SYSTEM)
        assert "Tone: calm, encouraging." in text
        assert 'first person plural ("we")' in text
        assert "grade 7" in text
        assert "Beginner paddlers (First season on the water)" in text
        assert 'Say "paddle", not "oar".' in text
        assert "Never use: 'epic'." in text
        assert "We push off gently" in text
        assert 'Never use these phrases: "leverage".' in text
        assert len(text) <= len(prompts.SYSTEM) + 2 + prompts.MAX_VOICE
