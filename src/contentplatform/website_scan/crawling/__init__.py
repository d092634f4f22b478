"""The crawl engine: one site fetched politely in memory (robots.txt, sitemaps, the frontier,
the pages); no database."""
