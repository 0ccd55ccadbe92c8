"""`python -m repro` is the same as the `repro` console script."""

from repro.cli.main import main

raise SystemExit(main())
