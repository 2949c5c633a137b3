"""config: see docs/architecture.md."""
