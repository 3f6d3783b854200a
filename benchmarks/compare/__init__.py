"""The comparison against the peers on real sessions (issue 6); run `python -m benchmarks`.

Modules: `sessions` (what is replayed, at which budgets), `contenders` and the `*_peer`
adapters (who is compared), `runner` (the replay, timed and traced), `facts` and
`sdk_types` (what a request holds, and whether it is valid), `stats` and `report`
(figures and tables), `compaction` (Claude Code's compaction against ours), `plots`,
`legacy` (the earlier benchmark sections) and `page` (docs/benchmarks.md).
"""
