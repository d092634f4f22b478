"""The SEO page inventory: one row per normalized URL of the site (seo.listPages, seo.getPage)."""
