"""observability: see docs/architecture.md."""
