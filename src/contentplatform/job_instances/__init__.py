"""Job instances: one occurrence of a job, planned, run, skipped or failed."""
