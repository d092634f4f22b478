"""Domain-free machinery shared by every domain package."""
