"""Reproducible benchmarks; run `python -m benchmarks` for all of them (docs/benchmarks.md).

`python -m benchmarks.ingest`, `.render`, `.processors` and `.distill_retention` run one
benchmark each; `benchmarks.compare` is the comparison against the peers.
"""
