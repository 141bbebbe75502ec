"""What each resolver RPC does (``calls``), on request messages, without the transport;
and the ``Stop`` its work checks (``stop``).
"""
