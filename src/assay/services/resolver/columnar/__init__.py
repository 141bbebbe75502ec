"""The columnar resolver: bulk evidence as an Arrow table in, resolutions as Arrow tables out.

The same rules as the per-claim path (``fusion``, ``active``, ``validation``), applied
column-wise with NumPy: ``stream`` reads and checks the Arrow IPC stream, ``decode``
factorizes and validates the columns (``checks`` explains bad rows, ``texts`` keys the
values), ``engine`` resolves every semantic at once (``relations`` handles the rare
relation and capped rows on their own, ``refs`` the content references of id-less rows
that tie), ``arrow_out`` encodes the response tables, and ``resolve`` runs those steps
in order for the RPC. A differential property test holds the result equal to
ResolveEvidence's.
"""

from assay.services.resolver.columnar.engine import Resolved, resolve_table
from assay.services.resolver.columnar.resolve import Answer, resolve_stream

__all__ = ["Answer", "Resolved", "resolve_stream", "resolve_table"]
