"""The blocking clients, generated from ``assay.client._async`` (do not edit).

tools/gen_sync_client.py writes every module here; a contract test fails when they
differ from what it would write. Import the clients from ``assay.client``.
"""
