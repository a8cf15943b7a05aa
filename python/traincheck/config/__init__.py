"""The original's `traincheck.config` package, for scripts written for it (see `config.config`)."""

from traincheck.config import config  # noqa: F401 - loaded with the package, as the original's tracer loads it
