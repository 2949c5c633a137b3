"""judging: see docs/architecture.md."""
