"""`python -m silva.tracking RUN_DIR TRACKING_JSON`: the follower process of a live run
(silva/tracking/process.py)."""

import sys

from silva.tracking.send import main

sys.exit(main(sys.argv[1:]))
