"""Data-driven discovery: hypotheses as code, statistical gates, DiscoPER and ExperiGen.

Importable building blocks (documented in docs/discovery.md; StatefulDiscovery builds on them):
- `search.discovery.silva_stats`: the statistical tools hypothesis code calls in the sandbox
- `search.discovery.gates`: two-split, Bonferroni-in-chain, Benjamini-Hochberg, held-out confirmation
- `search.discovery.claims`: `Claim`, `ClaimStore` (Parquet + JSON), the findings report
- `search.discovery.evidence`: `Hypothesis`, `TestOutcome`
- `search.discovery.bank`: embeddings, novelty, greedy max-min pruning
- `search.discovery.strategy`: `DiscoveryStrategy`, `build_discovery_strategy`
"""
