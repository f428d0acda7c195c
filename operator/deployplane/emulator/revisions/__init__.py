"""The revision pipeline: the spec's states, and each stage's work."""
