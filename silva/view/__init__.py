"""The HTML view of a run: `silva view RUN_DIR` writes RUN_DIR/view/index.html (build.py) from
the run's journal and ledger (data.py, through the node adapter in adapter.py); `--serve`
serves it on 127.0.0.1 and rebuilds it while the run goes on (serve.py)."""
