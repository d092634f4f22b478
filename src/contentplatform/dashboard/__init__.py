"""The Dashboard: the home screen's reads of every domain's tables, cached per organization."""
