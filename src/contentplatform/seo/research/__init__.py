"""Keyword research (seo.researchKeywords): ideas and metrics through the keyword provider
(DataForSEO Labs, over the `dataforseo` connection), kept 30 days, or from the organization's
own Search Console queries when no provider is connected; de-duplicated, with search intent,
and joined to our rank tracking."""
