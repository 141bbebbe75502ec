"""The gRPC adapter: the servicer reads each request through ``wire``, calls a use case, and
writes the answer back. (``storage`` is the other adapter, the database's.)"""
