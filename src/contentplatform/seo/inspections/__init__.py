"""SEO: inspections."""
