"""AI visibility (SEO part 4, issue 45): how AI answer engines speak of the tenant's brand.
Tracked prompts, runs asking each engine each prompt several times (durable work inside sync
runs of kind `ai_visibility`), the answers kept as evidence with what was read from them, and
the metrics over them."""
