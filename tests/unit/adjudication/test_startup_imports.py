"""What an adjudication server loads before anyone asks for agreement figures, and Fleiss'
kappa held equal to the reference library's (statsmodels, a test dependency only)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as reference_kappa

from assay.services.adjudication.domain import multirater
from tests.unit.adjudication.test_agreement_breadth import FLEISS_EXAMPLE

# Each probe runs in a fresh interpreter: this test process has imported statsmodels.
_SERVING = """
import json, sys
import assay.cli.serve_cmds
import assay.services.adjudication.service
print(json.dumps(sorted(m for m in ("statsmodels", "pandas", "scipy") if m in sys.modules)))
"""


def _run(code: str) -> Any:
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(found.stdout)


class TestStartupImports:
    def test_serving_code_imports_neither_statsmodels_nor_pandas_nor_scipy(self) -> None:
        """The service and `assay serve` import none of them at start: SciPy (the t and Beta
        quantiles) is imported at the first figure that needs it."""
        assert _run(_SERVING) == []


class TestFleissKappaMatchesTheLibrary:
    @pytest.mark.parametrize("seed", range(20))
    def test_random_tables(self, seed: int) -> None:
        """Random tables of 20-60 rounds, 2-6 ratings each, 2-5 categories: equal to
        statsmodels' ``fleiss_kappa(method="fleiss")`` to 1e-12."""
        rng = np.random.default_rng(seed)
        rounds, raters, categories = rng.integers(20, 61), rng.integers(2, 7), rng.integers(2, 6)
        picks = rng.integers(0, categories, size=(rounds, raters))
        table = np.stack([(picks == c).sum(axis=1) for c in range(categories)], axis=1)
        expected = float(reference_kappa(table.astype(float), method="fleiss"))
        assert multirater.fleiss_kappa_of(table.astype(float)) == pytest.approx(expected, abs=1e-12)

    def test_the_published_example(self) -> None:
        """Fleiss (1971), as in Wikipedia's worked example: 10 subjects, 14 raters, 5
        categories, kappa 0.210."""
        table = np.array(FLEISS_EXAMPLE, dtype=float)
        assert multirater.fleiss_kappa_of(table) == pytest.approx(0.2099, abs=5e-5)
