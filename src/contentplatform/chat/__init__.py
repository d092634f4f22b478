"""Chat: conversations over the tenant's knowledge, answers streamed over SSE."""
