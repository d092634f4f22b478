"""Discovery: the URLs a site says it has (robots.txt and its sitemaps), read without
crawling it."""
