"""The planner: value-of-information evidence acquisition planning that never executes."""
