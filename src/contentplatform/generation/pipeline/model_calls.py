"""A model call of a step: its fingerprint (for reuse by a retry), the call itself (outside any
transaction), recording it on the run, and taking the retried run's output instead."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from contentplatform.ai.base import Completion, CompletionRequest
from contentplatform.core import runtime
from contentplatform.generation import prompts, repository
from contentplatform.generation.pipeline import run_steps
from contentplatform.generation.pipeline.run import UNFINISHED, Reused


def fingerprint(step: str, *inputs: Any) -> str:
    """The fingerprint of a model call: its step, the prompt version, the model, its inputs."""
    model = runtime.current().model
    text = json.dumps(
        [step, prompts.PROMPT_VERSION, model.provider, model.model, *inputs],
        sort_keys=True,
        default=str,
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode()).hexdigest()


async def complete(request: CompletionRequest) -> Completion:
    """One model call, outside any transaction."""
    return await runtime.current().model.complete(request)


def usage_of(completion: Completion) -> list[int]:
    return [completion.usage.input_tokens, completion.usage.output_tokens]


async def record_call(
    tenant_id: uuid.UUID, run_id: uuid.UUID, key: str, step: str, usage: list[int], words: int
) -> None:
    """Record a model call on the run (under its fingerprint: once, however often the step
    runs), while the run is still going: a cancelled run was charged what it had made."""
    async with runtime.current().db.unit_of_work() as session:
        run = await repository.get(session, tenant_id, run_id, for_update=True)
        if run is None or run.status not in UNFINISHED:
            return
        call = {
            "step": step,
            "step_key": run_steps.running_key(run.steps),
            "model": runtime.current().model.model,
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "words": words,
        }
        run.usage = {**(run.usage or {}), key: call}


async def take_reused(
    tenant_id: uuid.UUID, run_id: uuid.UUID, key: str, step: str, reused: Reused
) -> dict[str, Any]:
    """The output of the retried run's call with the same inputs, recorded on this run when
    that run did not pay for it."""
    output = reused["output"]
    if not reused["paid"]:
        usage = output.get("usage") or [0, 0]
        await record_call(tenant_id, run_id, key, step, usage, int(output.get("words", 0)))
    return output


def model_of(completion: Completion) -> dict[str, str]:
    return {"provider": runtime.current().model.provider, "model": completion.model}
