"""Tracker backends: one module each, exposing `open_backend(settings) -> Backend`
(silva/tracking/base.py). Imported only when a run sends to that tracker."""
