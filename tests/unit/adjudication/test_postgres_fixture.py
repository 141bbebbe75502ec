"""The PostgreSQL test fixture's rule for a machine without PostgreSQL: skip, but fail in CI."""

from __future__ import annotations

import pytest

from tests.support import postgres


class TestMissingServer:
    @pytest.mark.parametrize(
        ("ci", "outcome"),
        [
            ("", pytest.skip.Exception),
            ("false", pytest.skip.Exception),
            ("true", pytest.fail.Exception),
        ],
    )
    def test_a_missing_server_skips_outside_ci_and_fails_in_ci(
        self, monkeypatch: pytest.MonkeyPatch, ci: str, outcome: type[BaseException]
    ) -> None:
        """No binaries: the tier is skipped with its reason, except under CI=true."""
        monkeypatch.setattr(postgres, "binaries", lambda: None)
        monkeypatch.setenv("CI", ci)
        with pytest.raises(outcome, match="PostgreSQL tier NOT RUN"), postgres.running_server():
            pass
