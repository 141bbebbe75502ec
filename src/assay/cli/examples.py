"""The example at the foot of every ``assay`` command's ``--help``, kept in one table.

One table rather than an ``epilog=`` at each ``add_parser`` call: a test walks the parser
and fails for any command without an example here, so a new command cannot ship without
one, and the examples read as one consistent set (the README's own walkthrough).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

# Command path -> example lines (a ``# comment`` after a command says what it shows).
EXAMPLES: dict[str, tuple[str, ...]] = {
    "serve": ("assay serve adjudication --db assay.db --port 50053",),
    "up": ("assay up                          # all three services, dev mode on loopback",),
    "dev-credentials": ("assay dev-credentials ./creds && assay up --credentials ./creds",),
    "resolve": (
        "assay resolve examples/evidence/safety-conflict.json",
        "cat evidence.json | assay resolve - -o jsonl   # one resolution per line",
    ),
    "policy": ("assay policy -o json",),
    "plan": ("assay plan examples/plan/capability-gap.json",),
    "probes": (
        "assay probes -o wide",
        "assay probes --judgement   # predicted discrimination against observed decision changes",
    ),
    "reviewer": ("assay reviewer list",),
    "reviewer add": (
        "assay reviewer add alice --kind human --attested-by 'hr ticket 42'   # dev mode",
        "assay reviewer add alice --kind human --attested-by operator "
        "--token-file creds/tokens/operator.jwt   # authentication on: yourself",
    ),
    "reviewer list": ("assay reviewer list -o jsonl",),
    "case": ("assay case show case_1d6fc0a8b7c94e0e",),
    "case enqueue": (
        "assay case enqueue examples/adjudication/cases-batch.json --json",
        "jq '.cases' big.json | assay case enqueue - --jsonl",
    ),
    "case assign": (
        "assay case assign case_1d6fc0a8b7c94e0e case_7a2e --to h-ann,h-bob   # both, each",
        "assay case assign $(cat ids) --to h-ann,h-bob,h-cy --rule least-loaded --per-case 2",
    ),
    "case unassign": (
        "assay case unassign case_1d6fc0a8b7c94e0e --reviewer h-bob --to h-cy   # reassign",
    ),
    "case list": (
        "assay case list --state disagreed --since 7d   # last week's splits",
        "assay case list --predicate idempotency.mode --newest --all -o jsonl",
    ),
    "case show": ("assay case show case_1d6fc0a8b7c94e0e",),
    "case state": ("assay case state case_1d6fc0a8b7c94e0e",),
    "case resolve": (
        "assay case resolve case_1d6fc0a8b7c94e0e --basis adjudicator --label none "
        "--adjudicator cy",
    ),
    "case freeze": ("assay case freeze case_1d6fc0a8b7c94e0e",),
    "case revisions": ("assay case revisions -o wide    # whole digests",),
    "queue": (
        "assay queue --reviewer ann",
        "assay queue --adjudicator cy -o jsonl | jq -r .case.caseId",
    ),
    "logout": ("assay logout --name work",),
    "calibrate": (
        "assay calibrate --tenant acme   # against the resolver's table in use",
        "assay calibrate --declared table.json --propose proposed.json -o json",
    ),
    "calibrate request": (
        "assay calibrate request proposed.json --tenant acme --reason 'spot-checks: ci_status "
        "is right 70% of the time'   # prints the approval id",
    ),
    "calibrate apply": (
        "assay calibrate apply proposed.json --approval approval_5f1c2e9a0b7d4c3e "
        "--table /etc/assay/table.json   # once two approvers approved",
    ),
    "review": (
        "assay review case_1d6fc0a8b7c94e0e --reviewer ann --label key "
        "--rationale 'the changelog says so'",
    ),
    "amend": ("assay amend rev_5b2c90e4a1d37f68 --label none --rationale 'misread the doc'",),
    "withdraw": ("assay withdraw rev_5b2c90e4a1d37f68 --reason 'wrong case'",),
    "export": (
        "assay export --out corpus.jsonl   # and corpus.jsonl.manifest.json",
        "assay export --out - --format csv > reviews.csv",
    ),
    "agreement": ("assay agreement --tenant acme",),
    "db": (
        "assay db migrate --from sqlite:////var/lib/assay/assay.db --to postgresql://assay@db/assay",
    ),
    "db migrate": (
        "assay db migrate --from assay.db --to postgresql://assay@db:5432/assay",
        "assay db migrate --from sqlite:////srv/assay.db --to 'host=db dbname=assay' --json",
    ),
    "audit": ("assay audit verify",),
    "audit verify": (
        "assay audit verify                # exit 3 when the chain is broken",
        "assay audit verify --since saved.note --public-key ledger.pub.pem",
    ),
    "audit public-key": ("assay audit public-key > ledger.pub.pem",),
    "audit checkpoint": ("assay audit checkpoint --out saved.note",),
    "audit verify-export": ("assay audit verify-export corpus.jsonl --public-key ledger.pub.pem",),
    "audit events": (
        "assay audit events --limit 20 -o jsonl",
        "assay audit events --case case_1d6fc0a8b7c94e0e --newest",
        "assay audit events --type review-submitted --actor alice --since 24h --all",
    ),
    "tenant": ("assay tenant delete acme --yes",),
    "tenant delete": ("assay tenant delete acme --yes",),
    "sweep": ("assay sweep",),
    "approval": ("assay approval list --state pending",),
    "approval list": (
        "assay approval list --state pending          # what waits for a decision",
        "assay approval list --tenant acme -o jsonl | jq -r .approvalId",
    ),
    "approval show": ("assay approval show approval_5f1c2e9a0b7d4c3e",),
    "approval approve": (
        "assay approval approve approval_5f1c2e9a0b7d4c3e --reason 'CI query is read-only' "
        "--token-file creds/tokens/dave.jwt --ca creds/ca.pem",
    ),
    "approval deny": (
        "assay approval deny approval_5f1c2e9a0b7d4c3e --reason 'not during the freeze'",
    ),
    "approval revoke": ("assay approval revoke approval_5f1c2e9a0b7d4c3e --reason 'plan changed'",),
    "approval watch": (
        "assay approval watch approval_5f1c2e9a0b7d4c3e   # one line per change, until final",
        "assay approval watch approval_5f1c2e9a0b7d4c3e -o jsonl | jq -r .state",
    ),
    "executor": (
        "assay executor run examples/executor/idempotency-conflict.json "
        "--subject api:payments.create --predicate idempotency.mode --grant FILESYSTEM_READ",
    ),
    "executor run": (
        "assay executor run examples/executor/idempotency-conflict.json "
        "--subject api:payments.create --predicate idempotency.mode --grant FILESYSTEM_READ",
    ),
    "demo": ("assay demo",),
    "completion": (
        "assay completion bash > ~/.local/share/bash-completion/completions/assay",
        "assay completion fish > ~/.config/fish/completions/assay.fish",
    ),
    "login": (
        "assay login --issuer https://idp.example.com --client-id assay-cli --name work",
        "assay login                       # again, with what it remembered",
    ),
    "whoami": ("assay whoami -o json",),
    "context": ("assay context list",),
    "context add": (
        "assay context add prod --adjudication adj.example.com:443 --ca ca.pem "
        "--identity work --use",
    ),
    "context use": ("assay context use prod",),
    "context list": ("assay context list -o json",),
}


def subcommands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every subcommand below ``parser`` with its path (``("case", "enqueue")``), depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from subcommands(sub, (*path, name))


def add_examples(parser: argparse.ArgumentParser) -> None:
    """Put each command's examples in its ``--help`` epilog (after what is already there)."""
    for path, sub in subcommands(parser):
        lines = EXAMPLES.get(" ".join(path))
        if not lines:
            continue
        block = "Example:\n" + "\n".join(f"  {line}" for line in lines)
        sub.epilog = f"{sub.epilog}\n\n{block}" if sub.epilog else block
        # Keep the example's line breaks; argparse would refill them as prose.
        sub.formatter_class = argparse.RawDescriptionHelpFormatter
