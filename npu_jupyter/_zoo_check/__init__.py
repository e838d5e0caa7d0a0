"""The zoo check: many training scripts × precision modes and option sets, one process per task."""
