"""The original's `traincheck.developer`: annotations a training script may call (see annotations.py)."""

from traincheck.developer import annotations  # noqa: F401
