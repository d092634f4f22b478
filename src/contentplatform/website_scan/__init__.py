"""Website scan: crawl configurations and schedules, the polite durable crawler, snapshots."""
