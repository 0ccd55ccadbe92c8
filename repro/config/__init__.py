"""matrix.yaml to a typed model: validation, selection, canonical ids, overrides."""
