"""The columnar resolver's output: the resolved table as Arrow IPC tables (``arrow_out``)
and the ResolveColumns response framed in wire form around them (``response``)."""
