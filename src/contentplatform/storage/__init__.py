"""Object storage: tenant-scoped paths, a local or S3-compatible store, signed uploads, sniffing."""
