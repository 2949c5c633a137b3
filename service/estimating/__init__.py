"""estimating: system-level estimates and model rankings from a few human labels plus many judge verdicts."""
