"""Work that crosses domains, in one home: each module is one flow, and the operations whose
rule spans domains are declared in flows/procedures.py.

- publishing: drafts.publish (may this draft go, and to which connection).
- drafting: drafts.createDraft (a draft written by hand names a job and instance of its own).
- job_runs: running a job's instance (trigger, by hand, by the scheduler), following its
  generation run, settling the job and auto-publishing what it wrote.
- scheduler: the tick that starts every due job once; workflows.py runs it under DBOS.

Flows may use every domain's service; no domain imports a flow.
"""
