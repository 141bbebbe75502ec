"""The columnar resolver's input: an Arrow IPC stream measured from its headers and held to
the server's limits (``ipc_headers``, ``bounds``), read (``stream``), then factorized and
validated into integer-coded columns (``decode``; ``checks`` explains bad rows, ``texts``
keys the values, ``distinct`` finds repeated ids, ``columns`` holds the array types)."""
