"""Stand-ins for the publishing targets (WordPress, Ghost, ...), on loopback."""
