"""Reproducible benchmarks; run `python -m benchmarks.ingest` (see docs/benchmarks.md)."""
