"""Benchmarks: `make bench`, or `python -m bench` / `python -m bench.operator` (repo root)."""
