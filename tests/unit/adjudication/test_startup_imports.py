"""What an adjudication server loads before anyone asks for agreement figures."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
from statsmodels.stats.inter_rater import fleiss_kappa as reference_kappa

# Each probe runs in a fresh interpreter: this test process may have imported statsmodels.
_SERVING = """
import json, sys
import assay.cli.serve_cmds
import assay.services.adjudication.service
print(json.dumps(sorted(m for m in ("statsmodels", "pandas", "scipy") if m in sys.modules)))
"""
_KAPPA = """
import json, sys
from assay.services.adjudication.domain import multirater
from assay.services.adjudication.domain.agreement import Rating, RatedRound
pairs = [("x", "x"), ("y", "y"), ("x", "y"), ("y", "y")] * 6
units = [RatedRound((Rating("a", p, False), Rating("b", q, False))) for p, q in pairs]
before = "statsmodels" in sys.modules
figure = multirater.fleiss_kappa(units)
print(json.dumps([before, figure.status.name, figure.value, "statsmodels" in sys.modules]))
"""
# The table the probe's units make: rounds by categories (x, y).
_TABLE = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 1.0], [0.0, 2.0]] * 6)


def _run(code: str) -> Any:
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(found.stdout)


class TestStartupImports:
    def test_serving_code_does_not_import_statsmodels(self) -> None:
        """The service and `assay serve` import neither statsmodels nor what it brings (pandas,
        SciPy): they would multiply an idle server's resident memory."""
        assert _run(_SERVING) == []

    def test_first_kappa_imports_statsmodels_and_matches_it(self) -> None:
        """The first Fleiss' kappa imports statsmodels then, and is the library's figure."""
        before, status, value, after = _run(_KAPPA)
        assert (before, status, after) == (False, "COMPUTED", True)
        assert value == float(reference_kappa(_TABLE, method="fleiss"))
