"""Failure signatures: the table of known failures (with public sources) and the matching engine."""
