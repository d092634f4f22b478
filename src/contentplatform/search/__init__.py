"""The chunk index: documents' text in chunks, full-text searchable per tenant.

One interface (`service`) for ingestion, generation and chat: SQLite FTS5 or PostgreSQL full
text underneath, chosen by the database in use.
"""
