"""Crawl runs: started by hand or on schedule, cancelled, read; the crawl as durable work."""
