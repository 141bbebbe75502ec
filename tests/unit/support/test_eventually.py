"""The tests' one wait helper: returns what it waited for, fails naming what it awaited."""

from __future__ import annotations

import pytest

from tests.support.eventually import eventually, eventually_async

# Generous: every condition below turns true after a few calls, so only a hung machine
# could reach this; the failing cases use a short bound and cannot pass by waiting.
GENEROUS = 30.0
SHORT = 0.05


class Countdown:
    """A condition that is falsy for ``calls`` calls, then returns ``value``."""

    def __init__(self, calls: int, value: object = "ready") -> None:
        self.remaining = calls
        self.calls = 0
        self.value = value

    def __call__(self) -> object:
        self.calls += 1
        if self.remaining > 0:
            self.remaining -= 1
            return 0
        return self.value

    async def coroutine(self) -> object:
        return self()


class Flaky:
    """A condition that raises ``error`` for ``calls`` calls, then returns True."""

    def __init__(self, calls: int, error: Exception) -> None:
        self.remaining = calls
        self.error = error

    def __call__(self) -> bool:
        if self.remaining > 0:
            self.remaining -= 1
            raise self.error
        return True


class TestEventually:
    def test_returns_once_the_condition_holds(self) -> None:
        """A condition falsy three times is called four times and its value returned."""
        condition = Countdown(3, value={"state": "expired"})
        got = eventually(condition, message="the state", timeout=GENEROUS, interval=0)
        assert got == {"state": "expired"}
        assert condition.calls == 4

    def test_a_condition_already_true_is_called_once(self) -> None:
        """No waiting when the state is already there."""
        condition = Countdown(0)
        assert eventually(condition, message="x", timeout=0, interval=0) == "ready"
        assert condition.calls == 1

    def test_fails_at_the_deadline_naming_what_and_the_last_value(self) -> None:
        """A condition that never holds fails with the message and the last value seen."""
        with pytest.raises(AssertionError, match=r"the gauge to read 1: .*last value \[\]"):
            eventually(list, message="the gauge to read 1", timeout=SHORT, interval=0.01)

    def test_ignored_errors_are_retried(self) -> None:
        """An error listed in ``ignoring`` means "not yet"."""
        condition = Flaky(2, ConnectionError("refused"))
        assert eventually(
            condition, message="x", timeout=GENEROUS, interval=0, ignoring=(ConnectionError,)
        )

    def test_the_last_ignored_error_is_named_and_chained(self) -> None:
        """At the deadline the last ignored error is in the message and is the cause."""
        condition = Flaky(10**9, ConnectionError("refused"))
        with pytest.raises(AssertionError, match=r"serving: .*refused") as failed:
            eventually(condition, message="serving", timeout=SHORT, ignoring=(ConnectionError,))
        assert isinstance(failed.value.__cause__, ConnectionError)

    def test_other_errors_end_the_wait_at_once(self) -> None:
        """An error not listed propagates on the first call, not at the deadline."""
        condition = Flaky(1, RuntimeError("the server exited"))
        with pytest.raises(RuntimeError, match="exited"):
            eventually(condition, message="x", timeout=GENEROUS, ignoring=(ConnectionError,))


class TestEventuallyAsync:
    @pytest.mark.parametrize("kind", ["plain", "coroutine"])
    async def test_returns_once_the_condition_holds(self, kind: str) -> None:
        """Plain and coroutine conditions alike: polled until truthy, the value returned."""
        condition = Countdown(3, value=42)
        poll = condition if kind == "plain" else condition.coroutine
        got = await eventually_async(poll, message="x", timeout=GENEROUS, interval=0)
        assert got == 42
        assert condition.calls == 4

    async def test_fails_at_the_deadline_naming_what_and_the_last_value(self) -> None:
        """A coroutine condition that never holds fails with the message and last value."""
        condition = Countdown(10**9)
        with pytest.raises(AssertionError, match=r"the case to expire: .*last value 0"):
            await eventually_async(condition.coroutine, message="the case to expire", timeout=SHORT)

    async def test_ignored_errors_are_retried_and_named(self) -> None:
        """Ignored errors mean "not yet"; at the deadline the last one is named."""
        assert await eventually_async(
            Flaky(2, KeyError("gone")),
            message="x",
            timeout=GENEROUS,
            interval=0,
            ignoring=(KeyError,),
        )
        with pytest.raises(AssertionError, match="gone"):
            await eventually_async(
                Flaky(10**9, KeyError("gone")), message="x", timeout=SHORT, ignoring=(KeyError,)
            )

    async def test_other_errors_end_the_wait_at_once(self) -> None:
        """An error not listed propagates on the first call."""
        with pytest.raises(ValueError, match="bad"):
            await eventually_async(Flaky(1, ValueError("bad")), message="x", timeout=GENEROUS)
