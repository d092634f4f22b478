"""Work that crosses domains, in one home: each module is one flow, and the operations whose
rule spans domains are declared in flows/procedures.py.

- publishing: drafts.publish (may this draft go, and to which connection).
- drafting: drafts.createDraft (a draft written by hand names a job and instance of its own).
- job_runs: starting a job instance's run (asked for, or by the scheduler), following its
  generation run, settling the job and auto-publishing what it wrote.
- job_actions: what a person asks of jobs and instances (trigger, bulk, plan an instance,
  generate one now).
- scheduler: the tick that starts every due job once; durable.py runs it under DBOS.

Flows may use every domain's service; no domain imports a flow.
"""
