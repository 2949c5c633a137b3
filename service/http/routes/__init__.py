"""routes: see docs/architecture.md."""
