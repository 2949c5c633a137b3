"""The judge-answer cache: Redis with an in-process fallback, and single-flight per key."""
