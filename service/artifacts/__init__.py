"""calibrations: see docs/architecture.md."""
