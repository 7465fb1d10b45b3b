"""Silva in the experiment trackers researchers use (MLflow, Weights & Biases): a journal
subscriber in its own process sends every run, idea and node as the events land, from a cursor
kept in the run directory (docs/tracking.md). A backend is one module of `backends/`."""
