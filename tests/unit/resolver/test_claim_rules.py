"""The columnar masks agree with the claim rules' scalar checks, row by row and rule by rule.

``decode.MASKS`` states each rule of ``claim_rules`` once more, vectorized; generated
tables (each cell drawn from valid and invalid values) hold every mask equal to its rule's
``broken`` on the facts ``checks`` reads of each row, and the repeated-id mask equal to
the rows whose id an earlier row has.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.services.resolver.columnar.input import checks
from assay.services.resolver.columnar.input.decode import MASKS, read_raw
from assay.services.resolver.domain.claim_rules import CLAIM_RULES, ID_UNIQUE
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from tests.unit.resolver.columnar_support import to_table

RELIABILITY = dict(DEFAULT_POLICY.reliability)

row_strategy = st.fixed_dictionaries(
    {
        "id": st.sampled_from([None, "", "c1", "c2", "c3"]),
        "subject": st.sampled_from(["", "s", "t"]),
        "predicate": st.sampled_from(["", "p"]),
        "value": st.sampled_from([None, '"v"', "1", '{"a": NaN}', "[1, Infinity]", "null"]),
        "source": st.sampled_from(["", "test_result", "oracle"]),
        "confidence": st.sampled_from([None, 0.0, 0.5, 1.0, -0.1, 1.5, float("nan")]),
        "reliability": st.sampled_from([None, 0.3, 2.0, float("nan")]),
        "observe_time": st.sampled_from([None, 0, 1_700_000_000, 10**12, -(10**12)]),
        "review_status": st.sampled_from([None, 0, 1, 3, 4, -1]),
        "relation_kind": st.sampled_from([None, 0, 1, 3, 4]),
        "relation_target": st.sampled_from([None, "", "c1", "x"]),
    }
)


class TestMasks:
    def test_every_rule_has_a_mask(self) -> None:
        """The columnar path computes a mask for every rule of the table, and only those."""
        assert set(MASKS) == set(CLAIM_RULES)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(row_strategy, min_size=1, max_size=12))
    def test_masks_agree_with_the_scalar_checks(self, rows: list[dict[str, Any]]) -> None:
        """Each row is flagged by a rule's mask exactly when the rule's scalar check says so."""
        raw = read_raw(to_table(rows), RELIABILITY)
        for rule, mask in MASKS.items():
            flagged = mask(raw).tolist()
            if rule is ID_UNIQUE:
                ids = [row["id"] for row in rows]
                expected = [bool(i) and i in ids[:n] for n, i in enumerate(ids)]
            else:
                broken = rule.broken
                assert broken is not None
                expected = [broken(checks.facts(raw, n), RELIABILITY) for n in range(len(rows))]
            assert flagged == expected, rule.name
