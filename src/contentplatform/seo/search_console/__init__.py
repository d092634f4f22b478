"""SEO: search_console."""
