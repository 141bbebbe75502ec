"""The role pages' pure parts: an export written as ``assay export`` writes it, an
upload's rows and the service's positions named by line, agreement in honest words."""

from __future__ import annotations

import pytest

from assay.console.pages import charts, uploads
from assay.errors import FieldViolation
from assay.v1 import adjudication_service_pb2 as adj


def records() -> list[adj.CorpusRecord]:
    """One record with reviews of two rounds: a label, a decline, an earlier round."""
    record = adj.CorpusRecord()
    record.revision.case_id, record.revision.round = "case-1", 2
    for reviewer, round_, outcome, key in (
        ("alice", 2, adj.REVIEW_OUTCOME_LABEL, '"key"'),
        ("bob", 2, adj.REVIEW_OUTCOME_NOT_EVALUABLE, ""),
        ("carol", 1, adj.REVIEW_OUTCOME_LABEL, '"none"'),
    ):
        review = record.reviews.add(reviewer_id=reviewer, round=round_, outcome=outcome)
        review.label_key = key
    return [record, adj.CorpusRecord()]


class TestUploads:
    def test_the_services_positions_become_the_files_rows_and_lines(self) -> None:
        """``cases[1].subject`` is the second case read, on the line it came from."""
        text = '{"tenant": "acme"}\n\n{"tenant": "acme"}\n'
        found = uploads.read_upload("cases.jsonl", text.encode())
        assert found.lines == [1, 3]
        named = uploads.named(
            found,
            (FieldViolation("cases[1].subject", "required"), FieldViolation("cases", "bad")),
        )
        assert [(p.row, p.line, p.where) for p in named] == [(2, 3, "subject"), (0, 0, "cases")]

    def test_too_many_rows_are_refused_before_any_is_sent(self) -> None:
        """A file over the row bound is one problem about the file."""
        text = '{"tenant": "acme"}\n' * (uploads.MAX_ROWS + 1)
        found = uploads.read_upload("cases.jsonl", text.encode())
        assert [p.what for p in found.problems] == [f"more than {uploads.MAX_ROWS} rows"]


class TestAgreementWords:
    @pytest.mark.parametrize(
        ("figure", "words"),
        [
            (
                adj.AgreementFigure(
                    status=adj.AGREEMENT_STATUS_INSUFFICIENT, case_count=12, min_cases=20
                ),
                "insufficient: 12 of 20 double-reviewed cases",
            ),
            (
                adj.AgreementFigure(
                    status=adj.AGREEMENT_STATUS_UNDEFINED,
                    undefined_reason=adj.AGREEMENT_UNDEFINED_REASON_DEGENERATE_MARGINALS,
                ),
                "undefined: every answer falls in one category",
            ),
            (
                adj.AgreementFigure(
                    status=adj.AGREEMENT_STATUS_COMPUTED, value=0.5, ci_lower=0.25, ci_upper=0.75
                ),
                "0.50 (95% interval 0.25 to 0.75)",
            ),
            (adj.AgreementFigure(status=adj.AGREEMENT_STATUS_COMPUTED, value=0.5), "0.50"),
            (
                adj.AgreementFigure(
                    status=adj.AGREEMENT_STATUS_UNDEFINED,
                    undefined_reason=adj.AGREEMENT_UNDEFINED_REASON_LABELS_NOT_ORDERED,
                ),
                "undefined: some answers are not numbers to order",
            ),
        ],
    )
    def test_a_number_only_when_computed(self, figure: adj.AgreementFigure, words: str) -> None:
        """The service's honesty rules, said as the page says them."""
        assert charts.said(figure) == words

    def test_the_page_says_every_figure_and_each_reviewer(self) -> None:
        """Percent agreement, AC1, AC2 and each reviewer's agreement with gold (counted in
        frozen rounds) are on the page beside the kappas."""
        computed = adj.AgreementFigure(
            status=adj.AGREEMENT_STATUS_COMPUTED, value=0.9, ci_lower=0.8, ci_upper=0.95
        )
        reply = adj.ComputeAgreementResponse(
            percent_agreement=computed,
            gwet_ac1=adj.AgreementFigure(status=adj.AGREEMENT_STATUS_COMPUTED, value=0.7),
            gwet_ac2=adj.AgreementFigure(
                status=adj.AGREEMENT_STATUS_UNDEFINED,
                undefined_reason=adj.AGREEMENT_UNDEFINED_REASON_LABELS_NOT_ORDERED,
            ),
            reviewers=[
                adj.ReviewerAgreement(reviewer_id="amy", gold_agreement=computed),
                adj.ReviewerAgreement(
                    reviewer_id="bob",
                    gold_agreement=adj.AgreementFigure(
                        status=adj.AGREEMENT_STATUS_INSUFFICIENT, case_count=3, min_cases=20
                    ),
                ),
            ],
        )
        view = charts.agreement_view(reply)
        assert view["percent"] == "0.90 (95% interval 0.80 to 0.95)"
        assert view["ac1"] == "0.70"
        assert view["ac2"] == "undefined: some answers are not numbers to order"
        assert view["reviewers"] == [
            ("amy", "0.90 (95% interval 0.80 to 0.95)"),
            ("bob", "insufficient: 3 of 20 frozen rounds"),
        ]
