"""GEO (Generative Engine Optimization): AI crawlers' access, llms.txt and each page's
citability, computed from the newest complete website scan of the site."""
