"""The auth policy file: what it grants whom, and how it says what is wrong with it.

Pure functions (``parse_policy``, ``AuthPolicy.principal``) and files on disk
(``load_policy``, ``Gate.from_files``); no server.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from assay.runtime.auth import Principal, Role
from assay.runtime.auth.dev_credentials import write_dev_credentials
from assay.runtime.auth.gate import DEV_GATE, Gate
from assay.runtime.auth.policy import X509_ISSUER, AuthPolicy, load_policy, parse_policy

IDP = "https://idp.example.com/"
OTHER_IDP = "https://other.example.com/"
TOKENS = {"issuers": [IDP], "audience": "assay", "jwks": "jwks.json"}


def policy(*principals: dict[str, Any], tokens: dict[str, Any] | None = None) -> AuthPolicy:
    data: dict[str, Any] = {"principals": list(principals)}
    if tokens is not None:
        data["tokens"] = tokens
    return parse_policy(data, Path("/etc/assay"))


def ok(**entry: Any) -> dict[str, Any]:
    return {"subject": "alice", "roles": ["reader"], **entry}


class TestParseErrorsNameTheField:
    @pytest.mark.parametrize(
        ("data", "message"),
        [
            ({"principal": []}, "unknown top-level keys ['principal']"),
            ({"principals": {"subject": "a"}}, "principals: expected an array of tables"),
            ({"principals": ["alice"]}, "principals[0]: expected a table"),
            (
                {"principals": [ok(), ok(colour="red")]},
                "principals[1]: unknown keys ['colour']",
            ),
            ({"principals": [{"subject": "a"}]}, "principals[0].roles: expected a list"),
            ({"principals": [ok(roles="reader")]}, "principals[0].roles: expected a list"),
            ({"principals": [ok(roles=[""])]}, "principals[0].roles: expected a list"),
            (
                {"principals": [ok(), ok(roles=["reader", "wizard"])]},
                "principals[1].roles: unknown role 'wizard' (known: reader, reviewer,",
            ),
            ({"principals": [ok(tenants="acme")]}, "principals[0].tenants: expected a list"),
            ({"principals": [ok(tenants=[1])]}, "principals[0].tenants: expected a list"),
            ({"principals": [ok(subject=7)]}, "principals[0].subject: expected a"),
            ({"principals": [ok(issuer=["x"])]}, "principals[0].issuer: expected a"),
            (
                {"principals": [{"roles": ["reader"]}]},
                "principals[0]: give either subject or claim",
            ),
            (
                {"principals": [ok(claim="groups", value="ops")]},
                "principals[0]: give either subject or claim",
            ),
            (
                {"principals": [{"claim": "groups", "roles": ["reader"]}]},
                "principals[0]: claim needs a value",
            ),
            ({"tokens": "yes"}, "tokens: expected a table"),
            ({"tokens": {"audience": "assay"}}, "tokens.issuers: expected a list"),
            ({"tokens": {**TOKENS, "issuers": []}}, "tokens.issuers: expected at least one"),
            (
                {"tokens": {**TOKENS, "issuers": [IDP, "x509"]}, "principals": []},
                "tokens.issuers: 'x509' is reserved for client certificates",
            ),
            ({"tokens": {**TOKENS, "audience": ""}}, "tokens.audience: expected a non-empty"),
            ({"tokens": {"issuers": [IDP]}}, "tokens.audience: expected a non-empty"),
            ({"tokens": {**TOKENS, "jwks": 3}}, "tokens.jwks: expected a"),
            ({"tokens": {**TOKENS, "leeway_seconds": 301}}, "tokens.leeway_seconds"),
            ({"tokens": {**TOKENS, "leeway_seconds": -1}}, "tokens.leeway_seconds"),
            ({"tokens": {**TOKENS, "leeway_seconds": "30"}}, "tokens.leeway_seconds"),
            ({"tokens": {**TOKENS, "leeway_seconds": True}}, "tokens.leeway_seconds"),
            (
                {"tokens": {**TOKENS, "issuers": [IDP, OTHER_IDP]}},
                "tokens.reviewer_issuer is required with several issuers",
            ),
            (
                {"tokens": {**TOKENS, "reviewer_issuer": OTHER_IDP}},
                "tokens.reviewer_issuer must be one of tokens.issuers",
            ),
        ],
    )
    def test_error(self, data: dict[str, Any], message: str) -> None:
        """The ValueError names the offending field (and says it once)."""
        with pytest.raises(ValueError, match=re.escape(message)) as caught:
            parse_policy(data, Path("."))
        text = str(caught.value)
        assert text.startswith(message), text
        field = message.split(":")[0]
        assert text.count(field) == 1, text


class TestWhatEntriesGrant:
    def test_subject_grant(self) -> None:
        """A subject entry without an issuer matches that subject from any token issuer, but
        never a client certificate with that CN (those need issuer "x509")."""
        granted = policy(ok(roles=["reviewer", "ROLE_READER"], tenants=["acme"]))
        assert granted.principal(IDP, "alice", {}) == Principal(
            IDP, "alice", frozenset({Role.REVIEWER, Role.READER}), frozenset({"acme"})
        )
        assert granted.principal(OTHER_IDP, "alice", {}).roles == {Role.REVIEWER, Role.READER}
        assert granted.principal(X509_ISSUER, "alice", {}).roles == frozenset()
        pinned = policy(ok(issuer=X509_ISSUER))
        assert pinned.principal(X509_ISSUER, "alice", {}).roles == {Role.READER}
        assert pinned.principal(IDP, "alice", {}).roles == frozenset()

    def test_issuer_pins_a_subject_grant(self) -> None:
        """With an issuer, the same subject from another issuer is granted nothing."""
        granted = policy(ok(issuer=IDP))
        assert granted.principal(IDP, "alice", {}).roles == {Role.READER}
        assert granted.principal(OTHER_IDP, "alice", {}).roles == frozenset()
        assert granted.principal(X509_ISSUER, "alice", {}).roles == frozenset()

    @pytest.mark.parametrize(
        ("claims", "matched"),
        [
            ({"groups": ["staff", "assay-operators"]}, True),
            ({"groups": ["staff"]}, False),
            ({"groups": []}, False),
            ({"groups": "assay-operators"}, True),
            ({"groups": "assay-operators-2"}, False),
            ({"groups": 1}, False),
            ({}, False),
            ({"roles": ["assay-operators"]}, False),
        ],
    )
    def test_claim_grant_list_and_scalar(self, claims: dict[str, Any], matched: bool) -> None:
        """A claim entry matches when the claim is the value, or a list holding it."""
        granted = policy(
            {
                "claim": "groups",
                "value": "assay-operators",
                "roles": ["operator"],
                "tenants": ["*"],
            }
        )
        who = granted.principal(IDP, "someone", claims)
        assert (who.roles == {Role.OPERATOR}) is matched
        assert who.all_tenants is matched

    def test_issuer_pins_a_claim_grant(self) -> None:
        """A claim entry with an issuer ignores the same claim from another issuer."""
        granted = policy({"issuer": IDP, "claim": "groups", "value": "ops", "roles": ["operator"]})
        assert granted.principal(IDP, "x", {"groups": ["ops"]}).roles == {Role.OPERATOR}
        assert granted.principal(OTHER_IDP, "x", {"groups": ["ops"]}).roles == frozenset()

    def test_roles_and_tenants_are_the_union_of_every_match(self) -> None:
        """Every matching entry adds its roles and tenants; others add nothing."""
        granted = policy(
            ok(roles=["reviewer"], tenants=["acme"]),
            {"claim": "groups", "value": "auditors", "roles": ["auditor"], "tenants": ["globex"]},
            {"claim": "groups", "value": "readers", "roles": ["reader"], "tenants": ["initech"]},
            {"subject": "bob", "roles": ["operator"], "tenants": ["*"]},
        )
        who = granted.principal(IDP, "alice", {"groups": ["auditors"]})
        assert who.roles == {Role.REVIEWER, Role.AUDITOR}
        assert who.tenants == {"acme", "globex"}
        assert who.may_access("acme")
        assert not who.may_access("initech")

    def test_nobody_matched_is_authenticated_with_nothing(self) -> None:
        """An identity no entry names holds no role and no tenant (every RPC refuses it)."""
        who = policy(ok()).principal(IDP, "mallory", {"groups": ["x"]})
        assert who == Principal(IDP, "mallory", frozenset(), frozenset())
        assert who.authenticated
        assert not who.may_access("acme")


class TestReviewerIssuer:
    def test_defaults_to_the_only_issuer(self) -> None:
        assert policy(tokens=TOKENS).reviewer_issuer == IDP

    def test_named_among_several(self) -> None:
        tokens = {**TOKENS, "issuers": [IDP, OTHER_IDP], "reviewer_issuer": OTHER_IDP}
        assert policy(tokens=tokens).reviewer_issuer == OTHER_IDP

    def test_client_certificates_only(self) -> None:
        """Without a [tokens] table, reviewers are bound to certificate CNs."""
        assert policy(ok()).reviewer_issuer == X509_ISSUER

    def test_dev_gate_binds_nothing(self) -> None:
        assert DEV_GATE.reviewer_issuer == ""
        assert not DEV_GATE.enabled


class TestTokenSettings:
    def test_defaults_and_relative_jwks(self) -> None:
        """The JWKS path is relative to the policy file; the leeway defaults to 30 s."""
        settings = policy(tokens=TOKENS).tokens
        assert settings is not None
        assert settings.jwks == Path("/etc/assay/jwks.json")
        assert settings.issuers == {IDP}
        assert settings.audience == "assay"
        assert settings.leeway_seconds == 30.0

    def test_no_jwks_in_the_file(self) -> None:
        """Leaving ``jwks`` out is allowed: ``--jwks`` then names it."""
        settings = policy(tokens={"issuers": [IDP], "audience": "assay"}).tokens
        assert settings is not None
        assert settings.jwks is None

    def test_jwks_url(self) -> None:
        """The provider's JWKS by URL: https, or http on loopback (tests)."""
        for url in ("https://idp.example.com/jwks", "http://127.0.0.1:9400/jwks"):
            settings = policy(tokens={"issuers": [IDP], "audience": "a", "jwks_url": url}).tokens
            assert settings is not None
            assert (settings.jwks, settings.jwks_url) == (None, url)

    @pytest.mark.parametrize(
        ("extra", "message"),
        [
            ({"jwks_url": "http://idp.example.com/jwks"}, "tokens.jwks_url: JWKS URL"),
            ({"jwks_url": "file:///etc/passwd"}, "tokens.jwks_url: JWKS URL"),
            ({"jwks": "j.json", "jwks_url": "https://idp/jwks"}, "not both"),
        ],
    )
    def test_jwks_url_refused(self, extra: dict[str, str], message: str) -> None:
        with pytest.raises(ValueError, match=re.escape(message)):
            policy(tokens={"issuers": [IDP], "audience": "a", **extra})


class TestReviewerIdBinding:
    SUBJECT = "auth0|5f0c3e"

    def test_a_subject_reviews_as_its_bound_id(self) -> None:
        """The entry's reviewer_id is the principal's, and the policy's binding both ways."""
        granted = policy(ok(subject=self.SUBJECT, reviewer_id="alice"), ok(), tokens=TOKENS)
        who = granted.principal(IDP, self.SUBJECT, {})
        assert (who.reviewer_id, who.acts_as) == ("alice", "alice")
        assert granted.principal(IDP, "alice", {}).acts_as == "alice"
        assert granted.reviewer_subjects == {"alice": self.SUBJECT}

    @pytest.mark.parametrize(
        ("entries", "message"),
        [
            (
                [{"claim": "groups", "value": "g", "roles": ["reader"], "reviewer_id": "a"}],
                "principals[0]: reviewer_id binds one subject",
            ),
            (
                [ok(subject="x", reviewer_id="alice"), ok(subject="y", reviewer_id="alice")],
                "principals[1].reviewer_id: 'alice' is bound to another subject",
            ),
            (
                [ok(subject="x", reviewer_id="alice"), ok(subject="x", reviewer_id="bob")],
                "principals[1].reviewer_id: 'x' is bound to another reviewer id",
            ),
            (
                [ok(subject="x", issuer=OTHER_IDP, reviewer_id="alice")],
                "principals[0].reviewer_id: reviewers are bound under issuer",
            ),
        ],
    )
    def test_refused(self, entries: list[dict[str, Any]], message: str) -> None:
        with pytest.raises(ValueError, match=re.escape(message)):
            policy(*entries, tokens=TOKENS)


TOML_POLICY = f"""
[tokens]
jwks = "keys/jwks.json"
issuers = ["{IDP}", "{OTHER_IDP}"]
audience = "assay"
leeway_seconds = 10
reviewer_issuer = "{IDP}"

[[principals]]
issuer = "{IDP}"
subject = "alice"
roles = ["reviewer", "reader"]
tenants = ["acme"]

[[principals]]
claim = "groups"
value = "assay-operators"
roles = ["operator", "auditor", "reader"]
tenants = ["*"]

[[principals]]
issuer = "x509"
subject = "planner"
roles = ["service"]
"""

JSON_POLICY = {
    "tokens": {
        "jwks": "keys/jwks.json",
        "issuers": [IDP, OTHER_IDP],
        "audience": "assay",
        "leeway_seconds": 10,
        "reviewer_issuer": IDP,
    },
    "principals": [
        {"issuer": IDP, "subject": "alice", "roles": ["reviewer", "reader"], "tenants": ["acme"]},
        {
            "claim": "groups",
            "value": "assay-operators",
            "roles": ["operator", "auditor", "reader"],
            "tenants": ["*"],
        },
        {"issuer": "x509", "subject": "planner", "roles": ["service"]},
    ],
}


class TestLoadPolicy:
    def test_toml_and_json_say_the_same(self, tmp_path: Path) -> None:
        """The same policy as TOML and as JSON loads to equal values."""
        toml_path = tmp_path / "policy.toml"
        toml_path.write_text(TOML_POLICY)
        json_path = tmp_path / "policy.json"
        json_path.write_text(json.dumps(JSON_POLICY))
        from_toml, from_json = load_policy(toml_path), load_policy(json_path)
        assert from_toml == from_json
        assert from_toml.tokens is not None
        assert from_toml.tokens.jwks == tmp_path / "keys" / "jwks.json"
        assert from_toml.tokens.leeway_seconds == 10.0
        planner = from_toml.principal(X509_ISSUER, "planner", {})
        assert planner.roles == {Role.SERVICE}
        assert planner.tenants == frozenset()

    def test_the_policy_dev_credentials_writes_loads(self, tmp_path: Path) -> None:
        """``assay dev-credentials``' policy grants its example principals what it says."""
        creds = write_dev_credentials(tmp_path / "creds")
        loaded = load_policy(creds.policy)
        assert loaded.tokens is not None
        carol = loaded.principal(next(iter(loaded.tokens.issuers)), "carol", {})
        assert carol.roles == {Role.ADJUDICATOR, Role.REVIEWER, Role.READER}
        assert carol.tenants == {"acme"}

    @pytest.mark.parametrize(
        ("name", "text", "message"),
        [
            ("bad.toml", "[[principals]\nsubject=", "cannot read auth policy"),
            ("bad.json", "{not json", "cannot read auth policy"),
            ("list.json", "[1, 2]", "expected a table at the top"),
            ("wrong.toml", '[[principals]]\nsubject = "a"\n', "principals[0].roles"),
        ],
    )
    def test_errors_name_the_file(self, tmp_path: Path, name: str, text: str, message: str) -> None:
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ValueError, match=re.escape(message)) as caught:
            load_policy(path)
        assert str(path) in str(caught.value)

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="cannot read auth policy"):
            load_policy(tmp_path / "absent.toml")


class TestGateFromFiles:
    def test_nothing_configured_is_dev_mode(self) -> None:
        assert Gate.from_files(None, None, client_certificates=False) is DEV_GATE

    @pytest.mark.parametrize(("jwks", "client_ca"), [(True, False), (False, True)])
    def test_credentials_without_a_policy_refuse(self, jwks: bool, client_ca: bool) -> None:
        """A JWKS or a client CA without a policy is a start-up error, not dev mode."""
        with pytest.raises(ValueError, match="need --auth-policy"):
            Gate.from_files(None, Path("jwks.json") if jwks else None, client_ca)

    def test_tokens_without_a_jwks_refuse(self, tmp_path: Path) -> None:
        path = tmp_path / "policy.json"
        path.write_text(json.dumps({"tokens": {"issuers": [IDP], "audience": "assay"}}))
        with pytest.raises(ValueError, match=r"no JWKS is given \(--jwks\)"):
            Gate.from_files(path, None, client_certificates=False)

    def test_no_way_to_authenticate_refuses(self, tmp_path: Path) -> None:
        path = tmp_path / "policy.toml"
        path.write_text('[[principals]]\nsubject = "a"\nroles = ["reader"]\n')
        with pytest.raises(ValueError, match="no caller could authenticate"):
            Gate.from_files(path, None, client_certificates=False)

    def test_jwks_flag_overrides_the_file(self, tmp_path: Path) -> None:
        """``--jwks`` wins over the policy's ``jwks``."""
        creds = write_dev_credentials(tmp_path / "creds")
        moved = tmp_path / "elsewhere.json"
        moved.write_bytes(creds.jwks.read_bytes())
        creds.jwks.unlink()
        gate = Gate.from_files(creds.policy, moved, client_certificates=False)
        assert gate.verifier is not None
        assert gate.verifier.jwks_path == moved
