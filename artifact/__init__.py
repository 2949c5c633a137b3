"""The artifact layer: the contract between offline (writes) and service (reads); see docs/architecture.md."""
