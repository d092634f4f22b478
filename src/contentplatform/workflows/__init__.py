"""Workflows: article pipelines as ordered typed steps, with immutable published versions."""
