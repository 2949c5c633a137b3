"""The prompt-injection screen of texts a judge reads (findings only; scoring decides)."""
