"""The columnar resolver: bulk evidence as an Arrow table in, resolutions as Arrow tables out.

The same rules as the per-claim path (``fusion``, ``active``, ``validation``), applied
column-wise with NumPy, in three folders by job: ``input`` measures, reads and validates
the Arrow IPC stream into integer-coded columns, ``engine`` resolves every semantic at
once, ``output`` encodes the response tables and frames the response; ``pipeline`` runs
those steps in order for the RPC. Each folder imports only the ones before it. A
differential property test holds the result equal to ResolveEvidence's.
"""

from assay.services.resolver.columnar.engine.vectorized import Resolved, resolve_table
from assay.services.resolver.columnar.output.response import Answer
from assay.services.resolver.columnar.pipeline import resolve_stream

__all__ = ["Answer", "Resolved", "resolve_stream", "resolve_table"]
