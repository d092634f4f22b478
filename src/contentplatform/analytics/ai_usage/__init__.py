"""AI usage analytics: model calls, their tokens, credits and cost (analytics.aiUsage*)."""
