"""From a finished run to a PDF (LaTeX writer, citations, compile loop). Not built yet: see README."""
