"""Site profiles: what a site says about the business behind it, read from one of its snapshots."""
