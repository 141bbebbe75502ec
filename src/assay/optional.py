"""Optional parts of a server install, and the one error a call gets without them.

The server install leaves its two heaviest packages to named extras: pyarrow (the
`columnar` extra: ResolveColumns) and SciPy (the `stats` extra: ComputeAgreement's and
CalibrateReliability's intervals). The container image and the test lock have every extra. A
call needing one that is absent is FAILED_PRECONDITION ``FEATURE_NOT_INSTALLED`` naming the
extra and the install command, never an ImportError turned INTERNAL; the server starts and
serves everything else either way.
"""

from __future__ import annotations

import importlib

from assay.errors import FailedPrecondition, Reason

# The extra that provides each optional package.
EXTRAS = {"pyarrow": "columnar", "scipy": "stats"}


def installed(package: str) -> bool:
    """Whether ``package`` imports here (it is imported: the call that asks needs it next)."""
    try:
        importlib.import_module(package)
    except ImportError:
        return False
    return True


def require(package: str, feature: str) -> None:
    """Nothing when ``package`` is installed; else FEATURE_NOT_INSTALLED naming its extra."""
    if installed(package):
        return
    extra = EXTRAS[package]
    raise FailedPrecondition(
        Reason.FEATURE_NOT_INSTALLED,
        f"{feature} needs the '{extra}' extra ({package}), which this server was installed "
        f"without: pip install 'assay[server,{extra}]'",
        metadata={"extra": extra},
    )
