"""Published compatibility facts, arch rules and per-cell predictions."""
