"""Getting a cluster: Ray cluster configs and offline-built container images."""
