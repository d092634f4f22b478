"""Publisher connections, publish attempts and one strategy per target."""
