"""Jobs: scheduled content generation, their instances and the scheduler."""
