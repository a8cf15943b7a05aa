"""Installing C-level wrappers on torch (the only instrumentation work done in Python)."""
