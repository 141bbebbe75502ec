"""The ``assay`` command: serve the services and call every RPC from the shell."""
