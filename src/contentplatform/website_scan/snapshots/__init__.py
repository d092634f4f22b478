"""Snapshots: what a crawl found, its pages and their content, the diff of two, the broken links."""
