"""SEO: connections."""
