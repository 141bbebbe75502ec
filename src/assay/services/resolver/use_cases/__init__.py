"""What each resolver RPC does (``resolve``), on domain values, without the transport or
the messages; and the ``Stop`` its work checks (``stop``).
"""
