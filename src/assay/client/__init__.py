"""Client-side helpers for calling Assay from Python."""
