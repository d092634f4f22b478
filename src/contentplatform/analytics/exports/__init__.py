"""Exports: a report written to object storage as CSV or JSON Lines by durable work, downloaded
through a signed URL (analytics.*Export*)."""
