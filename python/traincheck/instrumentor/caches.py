"""`META_VARS` where the original keeps it (`meta_vars` is its name in releases before 0.2.0)."""

from traincheck.meta_vars import META_VARS

meta_vars = META_VARS

__all__ = ["META_VARS", "meta_vars"]
