"""The shared collector of bad request fields (``assay.errors.Violations``)."""

from __future__ import annotations

import pytest

from assay.errors import (
    MAX_VIOLATIONS,
    InvalidArgument,
    PermissionDenied,
    Reason,
    Violations,
    invalid_field,
)


def _raises(path: str, reason: Reason = Reason.INVALID_FIELD) -> None:
    raise invalid_field(reason, path, "is wrong")


class TestViolations:
    def test_nothing_found_raises_nothing(self) -> None:
        """A clean request passes, and ``check`` hands back the check's value."""
        found = Violations()
        assert found.check(int, "5") == 5
        found.raise_if_any()
        assert not found

    def test_every_violation_is_listed_in_order(self) -> None:
        """Raising checks and direct additions are all listed, the first in the message."""
        found = Violations()
        found.check(_raises, "a")
        found.add("b", "is missing")
        with found.catching():
            _raises("c")
        with pytest.raises(InvalidArgument) as raised:
            found.raise_if_any()
        assert [v.field for v in raised.value.violations] == ["a", "b", "c"]
        assert raised.value.message == "a: is wrong (and 2 more)"

    def test_a_single_raised_error_is_passed_on_unchanged(self) -> None:
        """One error from a raising check is raised as it was, with its own reason."""
        found = Violations()
        found.check(_raises, "request_id", Reason.REQUEST_ID_REUSED)
        with pytest.raises(InvalidArgument) as raised:
            found.raise_if_any()
        assert raised.value.reason is Reason.REQUEST_ID_REUSED
        assert raised.value.message == "request_id: is wrong"

    def test_violations_are_capped_and_the_rest_counted(self) -> None:
        """The first MAX_VIOLATIONS are kept; the rest only counted."""
        found = Violations()
        for i in range(MAX_VIOLATIONS + 7):
            found.add(f"items[{i}]", "is wrong")
        error = found.error()
        assert len(error.violations) == MAX_VIOLATIONS
        assert error.more_violations == 7
        assert error.message.endswith(f"(and {MAX_VIOLATIONS + 6} more)")

    def test_another_kind_of_error(self) -> None:
        """A check of permissions lists its denials the same way."""
        found = Violations()
        found.add("cases[0].tenant", "not granted")
        with pytest.raises(PermissionDenied) as raised:
            found.raise_if_any(PermissionDenied, Reason.TENANT_NOT_PERMITTED, {"tenant": "t"})
        assert raised.value.reason is Reason.TENANT_NOT_PERMITTED
        assert raised.value.metadata == {"tenant": "t"}


class _Big:
    """Stands for a large request: weakly referable, so its release can be observed."""


def test_a_rejected_request_is_freed_without_the_cyclic_collector() -> None:
    """The error keeps no cycle through the collector back to the checked request: with the
    cyclic GC off (as a server tunes it), the request goes as soon as the error is handled."""
    import gc
    import weakref

    from assay.errors import InvalidArgument, Reason, Violations, invalid_field

    def check(value: _Big) -> None:
        raise invalid_field(Reason.INVALID_FIELD, "reason", "too long")

    def validate(request: _Big) -> None:
        found = Violations()
        found.check(check, request)
        found.raise_if_any()

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        request = _Big()
        alive = weakref.ref(request)
        with pytest.raises(InvalidArgument):
            validate(request)
        del request
        assert alive() is None, "the rejected request is kept alive by a reference cycle"
    finally:
        if was_enabled:
            gc.enable()
