"""SEO plans: a month's content plan made from the tenant's own signals, reviewed item by item
and approved into one job whose instances write it (issue 44)."""
