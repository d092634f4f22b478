"""Analytics on the platform's own data (issue 38): the period every report reads (here), and its
parts, each a sub-package with the same rooms: automation (job runs, their failures and
durations), ai_usage (model calls, tokens, credits and their cost), exports (reports written to
object storage by durable work). Time is cut by kit/series."""
