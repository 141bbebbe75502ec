"""The approval hub: a watcher never misses a change between its read and its wait, and the
hub keeps nothing for approvals no one watches (other replicas' notices included)."""

from __future__ import annotations

import asyncio

from assay.services.adjudication.use_cases.approval_hub import ApprovalHub
from tests.support.eventually import eventually_async


async def test_a_change_before_the_wait_is_not_missed() -> None:
    hub = ApprovalHub()
    with hub.watching("a"):
        seen = hub.version("a")
        hub.changed("a")  # lands between the watcher's read and its wait
        assert await hub.wait("a", seen, 0.0)


async def test_a_waiter_is_woken_by_the_change_and_times_out_without_one() -> None:
    hub = ApprovalHub()
    with hub.watching("a"):
        seen = hub.version("a")
        assert not await hub.wait("a", seen, 0.0)
        waiter = asyncio.create_task(hub.wait("a", seen, None))
        # The waiter sleeps on its event before the change: the wake path, not the early one.
        await eventually_async(lambda: "a" in hub._waiting, message="the waiter waits")
        hub.changed("a")
        assert await asyncio.wait_for(waiter, 5)


def test_nothing_is_kept_for_approvals_no_one_watches() -> None:
    hub = ApprovalHub()
    for n in range(1_000):
        hub.changed(f"elsewhere-{n}")
    assert hub.version("elsewhere-1") == 0
    with hub.watching("a"), hub.watching("a"):
        hub.changed("a")
        assert hub.version("a") == 1
    assert hub.version("a") == 0
    assert not hub._versions
    assert not hub._watchers
