"""comparing: see docs/architecture.md."""
