"""What a run costs: its recorded model calls priced by the credits' table (see the package)."""

from __future__ import annotations

from contentplatform.credits import service as credits
from contentplatform.generation.models import GenerationRun


def charge_of(run: GenerationRun) -> int:
    """Credits for the model calls recorded on the run, by the credits' price table (0 for
    none; see the module)."""
    calls = [call for call in (run.usage or {}).values() if isinstance(call, dict)]
    if run.kind == "regenerate":
        return credits.words_charge(sum(int(call.get("words", 0)) for call in calls))
    return credits.tokens_charge(sum(tokens_of(run)))


def spent_of(run: GenerationRun) -> credits.Spent:
    """What the run's debit records: its tokens and the model(s) its calls used, the run, its
    workflow and job instance, and the job it ran for, else its draft."""
    input_tokens, output_tokens = tokens_of(run)
    resource = ("job", run.job_id) if run.job_id is not None else ("draft", run.draft_id)
    calls = [call for call in (run.usage or {}).values() if isinstance(call, dict)]
    return credits.Spent(
        input_tokens,
        output_tokens,
        resource[0],
        str(resource[1]),
        model=credits.model_name([str(call.get("model") or "") for call in calls]),
        workflow_id=run.workflow_id,
        workflow_run_id=run.id,
        job_instance_id=run.instance_id,
    )


def tokens_of(run: GenerationRun) -> list[int]:
    """[input tokens, output tokens] of the model calls recorded on the run."""
    calls = [call for call in (run.usage or {}).values() if isinstance(call, dict)]
    return [
        sum(int(call.get("input_tokens", 0)) for call in calls),
        sum(int(call.get("output_tokens", 0)) for call in calls),
    ]
