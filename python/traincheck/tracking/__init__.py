"""Model-state tracking: state_change records for the parameters of tracked models
(docs/collection.md §Model tracking, docs/formats.md §Variable state records)."""
