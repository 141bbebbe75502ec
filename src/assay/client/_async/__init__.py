"""The asyncio clients: the one hand-written source of both clients.

``assay.client._sync`` is generated from these modules by tools/gen_sync_client.py
(unasync: ``async``/``await`` dropped, ``Async`` names mapped to their blocking
twins), so a method is written once. Import the clients from ``assay.client``.
"""
