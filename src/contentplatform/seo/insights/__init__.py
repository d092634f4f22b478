"""SEO: insights."""
