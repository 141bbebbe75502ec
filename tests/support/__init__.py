"""Helpers shared by the test tiers: free ports and real ``assay`` subprocesses."""
