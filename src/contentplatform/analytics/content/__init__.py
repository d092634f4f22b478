"""Content analytics: the traffic each published article earned, synced from GA4, Plausible and
Umami, and read from SEO's Search Console facts."""
