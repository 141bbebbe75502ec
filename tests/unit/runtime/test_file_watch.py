"""The one rule for a watched file (assay.runtime.file_watch): looked at at most once per
interval, read again when its signature changed, the last good content kept otherwise."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from assay.runtime.file_watch import CHECK_SECONDS, FileWatch, Version

START = 1000.0


class Counting(FileWatch):
    """A watch that counts how often it stats the files."""

    stats = 0

    def version(self) -> Version:
        self.stats += 1
        return super().version()


class Reader:
    """A caller as the services are: reads JSON when the watch says so, keeps the last good
    content, and may refuse a version for a reason outside the file (a mode it distrusts)."""

    def __init__(self, path: Path, **options: Any) -> None:
        self.path = path
        self.value = json.loads(path.read_text())
        self.watch = FileWatch(path, now=START, **options)
        self.reads = 0
        self.refusing = False

    def current(self, now: float) -> object:
        version = self.watch.look(now)
        if version is None or self.refusing:
            return self.value
        self.reads += 1
        try:
            value = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return self.value
        self.value = value
        self.watch.took(version)
        return self.value


def write(path: Path, text: str) -> None:
    """Replace the file by a rename, as an operator should."""
    fresh = path.with_name(path.name + ".tmp")
    fresh.write_text(text)
    os.replace(fresh, path)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    found = tmp_path / "watched.json"
    write(found, '{"v": 1}')
    return found


class TestInterval:
    def test_not_looked_at_before_the_interval(self, path: Path) -> None:
        """A change is not seen, nor the file stat-ed, until the interval has passed."""
        watch = Counting(path, now=START)
        watch.stats = 0
        write(path, '{"v": 2}')
        assert not watch.due(START + CHECK_SECONDS / 2)
        assert watch.look(START + CHECK_SECONDS / 2) is None
        assert watch.stats == 0
        assert watch.due(START + CHECK_SECONDS)
        assert watch.look(START + CHECK_SECONDS) is not None
        assert watch.stats == 1

    def test_a_look_starts_the_next_interval(self, path: Path) -> None:
        """After a look that found nothing, a change waits for the next interval."""
        watch = Counting(path, now=START, interval=2.0)
        assert watch.look(START + 2.0) is None
        write(path, '{"v": 2}')
        assert watch.look(START + 3.5) is None
        assert watch.look(START + 4.0) is not None
        assert watch.stats == 1 + 2

    def test_a_zero_interval_looks_every_time(self, path: Path) -> None:
        """With no interval, every call stats the file."""
        watch = Counting(path, now=START, interval=0.0)
        for _ in range(3):
            assert watch.look(START) is None
        assert watch.stats == 1 + 3


class TestChanges:
    def test_a_changed_file_is_read_again_once(self, path: Path) -> None:
        """The new content at the next look; the version read is not offered again."""
        reader = Reader(path)
        write(path, '{"v": 2}')
        assert reader.current(START + CHECK_SECONDS) == {"v": 2}
        for step in range(2, 5):
            assert reader.current(START + step * CHECK_SECONDS) == {"v": 2}
        assert reader.reads == 1

    def test_an_unchanged_file_is_not_read_again(self, path: Path) -> None:
        """Looks that find the same signature read nothing."""
        reader = Reader(path)
        for step in range(1, 5):
            assert reader.current(START + step * CHECK_SECONDS) == {"v": 1}
        assert reader.reads == 0

    def test_a_rename_keeping_size_and_mtime(self, path: Path) -> None:
        """Another file of the same size and modification time renamed over the old one is
        a change by its inode (a key or table file replaced by rename is noticed)."""
        watch = FileWatch(path, now=START)
        old = path.stat().st_mtime_ns
        fresh = path.with_name("fresh.json")
        fresh.write_text('{"v": 9}')
        os.utime(fresh, ns=(old, old))
        os.replace(fresh, path)
        assert watch.look(START + CHECK_SECONDS) is not None

    def test_each_watched_path_counts(self, path: Path) -> None:
        """With several paths, one that appears is a change."""
        rotated = path.with_name(path.name + ".1")
        watch = FileWatch(rotated, path, now=START)
        rotated.write_text("{}")
        version = watch.look(START + CHECK_SECONDS)
        assert version is not None
        assert [part is not None for part in version] == [True, True]


class TestBadVersions:
    @pytest.mark.parametrize("damage", ["deleted", "not JSON", "a directory"])
    @pytest.mark.parametrize(("retry", "reads"), [(True, 3), (False, 1)])
    def test_a_version_that_cannot_be_read_keeps_the_content(
        self, path: Path, damage: str, retry: bool, reads: int
    ) -> None:
        """Vanished, half-written or unreadable: the last good content stays; the version
        is tried again at every look with ``retry``, once without."""
        reader = Reader(path, retry=retry)
        if damage == "deleted":
            path.unlink()
        elif damage == "not JSON":
            write(path, "{")
        else:
            path.unlink()
            path.mkdir()
        for step in range(1, 4):
            assert reader.current(START + step * CHECK_SECONDS) == {"v": 1}
        assert reader.reads == reads

    @pytest.mark.parametrize("retry", [True, False])
    def test_a_good_version_after_a_bad_one_is_read(self, path: Path, retry: bool) -> None:
        """Either way, a file that changes again is read again."""
        reader = Reader(path, retry=retry)
        path.unlink()
        assert reader.current(START + CHECK_SECONDS) == {"v": 1}
        write(path, '{"v": 3}')
        assert reader.current(START + 2 * CHECK_SECONDS) == {"v": 3}

    @pytest.mark.parametrize(("retry", "after"), [(True, {"v": 2}), (False, {"v": 1})])
    def test_a_refusal_lifted_without_a_change(
        self, path: Path, retry: bool, after: object
    ) -> None:
        """A version refused for a reason outside its signature (a mode fixed by chmod) is
        read once the refusal goes only with ``retry``."""
        reader = Reader(path, retry=retry)
        reader.refusing = True
        write(path, '{"v": 2}')
        assert reader.current(START + CHECK_SECONDS) == {"v": 1}
        reader.refusing = False
        assert reader.current(START + 2 * CHECK_SECONDS) == after
