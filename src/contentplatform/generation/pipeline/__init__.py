"""The article pipeline: retrieve -> outline -> write -> optimize -> score -> finalize.

One module per step (start, research, outline, write, optimize, internal_links, fact_check,
images, review_gate, finalize; endings for a run that fails or is abandoned), the sequence they
run in (runner.py), and its DBOS registration: the workflow, its queue and recovery
(durable.py). What every step shares: the run (run.py, run_steps.py), its model calls
(model_calls.py), its price (charges.py) and why it stops (errors.py).

A DBOS workflow whose every model call is a checkpointed step (each section is its own step), so
a crash resumes after the last finished call and never pays for it twice. The run's
`{status, step, percent}` is written as each step begins (and announced on the run's event
stream once written: events.py). No transaction is open while a model is called.

Each step first checks that the run still owns its draft: a deleted draft or a cancelled run
(generation.cancelRun) stops the pipeline at that step boundary. A failure of any step fails
the run visibly: the run is `failed` with `{code, message, retryable}`, the draft `rejected`
with the reason, the hold released and `generation.run_failed` written to the outbox. Whichever
way it ends, the workflow's last step appends the run's terminal event (`generation.announce`).

Two kinds of run: `blog` writes an article; `regenerate` writes a draft again, whole (as `blog`,
keeping its title when asked) or only the chosen sections (retrieve -> retrieve each section ->
write each -> score -> finalize; the rest of the article, its title, excerpt and SEO metadata
kept).

Retrieval per section (grounding.py has the decisions): `retrieve` finds the passages the article
is planned from (topic and keywords); after the outline, `retrieve_sections` finds each section's
own (its heading and the topic), all in one read-only transaction, both with the search's
relative cut. Both are checkpointed steps, and what is made of them (which part is written from
which passages, the one numbered list of sources) is computed in the workflow from their outputs,
so a recovered run, which replays them, writes the same article.

Reuse (generation.retryRun): every model call's output carries the fingerprint of its inputs
(`input`: the step, prompt version, model and everything the call was given). A retry reads the
outputs of the run it retries from DBOS's own checkpoints (`generation.reusable`, reading
`DBOS.list_workflow_steps` of that run's workflow) and, for a call whose fingerprint is among
them, takes that output instead of calling the model. Retrieval runs again (it costs nothing):
when the knowledge changed, the sources change, and with them every later call's inputs (a
part's sources, with their numbers in the article's one list, are in its fingerprint; the
scores and queries, which only the provenance shows, are not: the model never sees them).

Pricing: the calls a run makes are recorded on it as they finish (`usage`, by fingerprint, so a
step run again after a crash counts once). An article costs 1 credit per started 1,000 model
tokens (prompts and answers of every call); a regeneration 1 credit per started
`generation_regenerate_words_per_credit` words it wrote; at least 1 and never more than the hold,
committed when the draft is written. A cancelled run is charged the calls it had made (0: the
hold released); a failed one nothing. A reused output is paid once: not again when the run it
came from was charged for it, else by the run that reuses it.
"""
