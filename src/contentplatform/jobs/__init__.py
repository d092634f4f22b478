"""Jobs: scheduled content generation: what to write and when."""
