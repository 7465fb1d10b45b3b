"""LLM operators: each is one LLM -> sandbox -> evaluate cycle recorded as one node."""
