"""External reporting: logs a checker output folder to W&B and MLflow (docs/differences.md §Checking).

The native checkers run `python -m traincheck.reporting.export` as a child process; nothing here checks
anything, it reads the files the C++ checker wrote."""
