"""System operations: health, version, whoami."""
