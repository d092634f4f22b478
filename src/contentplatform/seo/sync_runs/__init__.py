"""SEO: sync_runs."""
