"""From a PDF to reviews (reviewer ensemble, area-chair meta-review). Not built yet: see README."""
