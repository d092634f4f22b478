"""Tenant settings, brand voice, content strategy and content rules (settings.*)."""
