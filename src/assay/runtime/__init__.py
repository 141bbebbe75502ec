"""Plumbing shared by every Assay service: server start-up, health, reflection, logging,
error mapping and graceful shutdown. Written once, used unchanged by all three services."""
