"""Merging results into the matrix: model, merge, history, markdown, html, plot, compare."""
