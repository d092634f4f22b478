"""Automation analytics: how the organization's job runs fared (analytics.automation*,
analytics.failureBreakdown, analytics.jobPerformance)."""
