"""Server-made request ids: 32 hex digits, never repeated, and fresh in a forked child."""

from __future__ import annotations

import os
import re

import pytest

from assay.runtime import handlers


def test_ids_are_32_hex_digits_and_never_repeat() -> None:
    ids = [handlers.new_request_id() for _ in range(10_000)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_a_reseed_draws_a_new_prefix() -> None:
    """What a forked child runs: a new random prefix, so parent and child never collide."""
    ids = handlers._RequestIds()
    before = {ids.next() for _ in range(100)}
    prefix = ids.prefix
    ids.reseed()
    after = {ids.next() for _ in range(100)}
    assert ids.prefix != prefix
    assert before.isdisjoint(after)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_a_forked_child_makes_ids_the_parent_does_not() -> None:
    parent = handlers.new_request_id()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send one id back, then leave at once
        os.close(read)
        os.write(write, handlers.new_request_id().encode())
        os._exit(0)
    os.close(write)
    try:
        child = os.read(read, 64).decode()
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    assert re.fullmatch(r"[0-9a-f]{32}", child)
    assert child[:16] != parent[:16]
    assert child != handlers.new_request_id()
