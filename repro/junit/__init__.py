"""JUnit XML: property names, the writer, the untrusted reader and the run.json sidecar."""
