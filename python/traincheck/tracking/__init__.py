"""Model-state tracking: state_change records for the parameters of tracked models (compat §4.6, §5.3)."""
