"""The one page-token scheme every list RPC uses (assay.runtime.paging)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assay import errors
from assay.runtime.paging import decode_token, encode_token, fitting, page


def reason_and_fields(call: object) -> tuple[errors.Reason, list[str]]:
    with pytest.raises(errors.InvalidArgument) as caught:
        call()  # type: ignore[operator]
    return caught.value.reason, [v.field for v in caught.value.violations]


class TestInMemoryPages:
    @pytest.mark.parametrize("size", [1, 2, 4, 6, 7])
    def test_following_tokens_visits_every_item_once_in_order(self, size: int) -> None:
        items, token, seen = list(range(6)), "", []
        while True:
            chunk, token = page(items, size, token, "probes")
            seen.extend(chunk)
            if not token:
                break
        assert seen == items

    def test_zero_means_the_rest_and_no_next_token(self) -> None:
        assert page([1, 2, 3], 0, "", "probes") == ([1, 2, 3], "")
        _, token = page([1, 2, 3], 1, "", "probes")
        assert page([1, 2, 3], 0, token, "probes") == ([2, 3], "")

    def test_a_token_of_another_listing_is_refused(self) -> None:
        _, token = page([1, 2, 3], 1, "", "reviewers")
        reason, fields = reason_and_fields(lambda: page([1, 2, 3], 1, token, "probes"))
        assert (reason, fields) == (errors.Reason.INVALID_PAGE_TOKEN, ["page_token"])

    @pytest.mark.parametrize(
        "token",
        ["nope", "cHJvYmVzL3YxL3g=", encode_token("probes", "x"), encode_token("probes", "99")],
    )
    def test_foreign_edited_or_out_of_range_tokens_are_refused(self, token: str) -> None:
        reason, fields = reason_and_fields(lambda: page([1, 2, 3], 1, token, "probes"))
        assert (reason, fields) == (errors.Reason.INVALID_PAGE_TOKEN, ["page_token"])

    def test_a_negative_size_is_an_invalid_field(self) -> None:
        reason, fields = reason_and_fields(lambda: page([1], -1, "", "probes"))
        assert (reason, fields) == (errors.Reason.INVALID_FIELD, ["page_size"])


def test_keys_round_trip_through_their_query() -> None:
    token = encode_token("cases", "case_1")
    assert decode_token("cases", token) == "case_1"
    assert encode_token("cases", "") == ""


class TestFitting:
    @pytest.mark.parametrize(
        ("sizes", "budget", "kept"),
        [
            ([10, 10, 10], 100, 3),
            ([10, 10, 10], 20, 2),
            ([10, 10, 10], 19, 1),
            ([500, 1], 100, 1),
            ([], 100, 0),
        ],
        ids=["all fit", "exactly two", "one short of two", "one over the budget alone", "none"],
    )
    def test_leading_items_within_the_budget_and_never_none(
        self, sizes: list[int], budget: int, kept: int
    ) -> None:
        """As many leading items as fit, but always one when there is one."""
        assert fitting(iter(sizes), budget) == kept

    def test_only_the_items_needed_are_measured(self) -> None:
        """The sizes are read lazily: nothing past the first item left out."""
        read: list[int] = []

        def sizes() -> Iterator[int]:
            for size in (10, 10, 10, 10):
                read.append(size)
                yield size

        assert fitting(sizes(), 15) == 1
        assert len(read) == 2
