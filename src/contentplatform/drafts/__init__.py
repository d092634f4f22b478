"""Drafts: generated or written articles, their review, revisions and provenance."""
