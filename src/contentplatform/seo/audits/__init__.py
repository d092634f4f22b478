"""Technical SEO audits over completed website-scan snapshots (issue 41)."""
