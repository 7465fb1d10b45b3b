"""Silva's vocabulary and run lifecycle: config, nodes, the journal, budgets, dispatch, CLI."""
