"""The `repro run` job: one isolated child process per case, the child protocol, harness, watchdog, progress."""
