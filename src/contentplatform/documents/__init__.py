"""Knowledge documents: uploads, ingestion into the chunk index, knowledge metadata."""
