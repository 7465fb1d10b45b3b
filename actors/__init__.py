"""Everything that touches Ray: the Ray executor, node tasks, the LLM gateway actor."""
