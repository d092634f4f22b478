"""SEO actions: the prioritized SEO to-do list. Rules turn the signals of the other SEO parts
(audits, Search Console insights, URL inspections, rank checks, GEO) into fingerprinted tasks
ranked by impact; people add their own, move them through their states, and turn content ones
into jobs, whose published draft completes them."""
