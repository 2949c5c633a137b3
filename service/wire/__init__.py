"""wire: see docs/architecture.md."""
