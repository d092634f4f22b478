"""The SEO control center (seo.overview): one read over the other SEO parts."""
