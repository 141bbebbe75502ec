"""Signed checkpoints: C2SP formats, checked by an independent path and Go's vectors.

The Go vectors are golang.org/x/mod ``sumdb/note/note_test.go``: a known
Ed25519 seed, its verifier key (which fixes the key-ID rule) and the exact
signed note Go produces (Ed25519 is deterministic, so ours must match byte
for byte).
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import (
    SECP256R1,
    EllipticCurvePrivateKey,
    generate_private_key,
)
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from assay.tlog.checkpoint import (
    Checkpoint,
    NoteSigner,
    load_or_create_signing_key,
    open_note,
    parse_signed_checkpoint,
)

GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
PETER_SIG = (
    "\u2014 PeterNeumann "
    "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "\u2014 EnochRoot "
    "rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n"
)

ORIGIN = "assay.example/adjudication-log"
ROOT = hashlib.sha256(b"some root").digest()


def _go_private() -> Ed25519PrivateKey:
    # "PRIVATE+KEY+<name>+<hex id>+<base64(0x01 || seed)>"; the base64 may hold '+'.
    encoded = GO_SKEY.split("+", 4)[4]
    raw = base64.b64decode(encoded)
    assert raw[0] == 1
    return Ed25519PrivateKey.from_private_bytes(raw[1:])


def _public_from_vkey(vkey: str) -> tuple[str, Ed25519PublicKey]:
    name, _, encoded = vkey.split("+", 2)
    raw = base64.b64decode(encoded)
    assert raw[0] == 1
    return name, Ed25519PublicKey.from_public_bytes(raw[1:])


@pytest.fixture(scope="module")
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


@pytest.fixture(scope="module")
def signer(key: Ed25519PrivateKey) -> NoteSigner:
    return NoteSigner(key, ORIGIN)


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


class TestGoVectors:
    def test_key_id_and_verifier_key_match_go(self) -> None:
        """The C2SP key-ID rule reproduces Go's c74f20a3 and its verifier key string."""
        signer = NoteSigner(_go_private(), "PeterNeumann")
        assert signer.key_id == bytes.fromhex("c74f20a3")
        assert signer.verifier_key() == GO_VKEY

    def test_signed_note_is_byte_identical_to_go(self) -> None:
        """Signing Go's example text gives Go's example note exactly."""
        signer = NoteSigner(_go_private(), "PeterNeumann")
        assert signer.sign_text(GO_TEXT) == GO_TEXT + "\n" + PETER_SIG

    def test_go_note_opens_and_cosignatures_are_skipped(self) -> None:
        """A note carrying Peter's and Enoch's signatures opens for either key."""
        note = GO_TEXT + "\n" + PETER_SIG + ENOCH_SIG
        for vkey in (GO_VKEY, ENOCH_VKEY):
            name, public = _public_from_vkey(vkey)
            assert open_note(note, public, name) == GO_TEXT

    def test_altered_go_note_is_refused(self) -> None:
        """One changed letter in the text breaks Go's signature for us too."""
        name, public = _public_from_vkey(GO_VKEY)
        note = (GO_TEXT + "\n" + PETER_SIG).replace("cryptography", "cryptographY")
        with pytest.raises(ValueError, match="does not verify"):
            open_note(note, public, name)


class TestBody:
    def test_body_is_the_tlog_checkpoint_format(self) -> None:
        """Origin, decimal size and standard base64 root, each on its own line."""
        body = Checkpoint(ORIGIN, 1234, ROOT).body()
        assert body == f"{ORIGIN}\n1234\n{base64.b64encode(ROOT).decode()}\n"

    @pytest.mark.parametrize(
        ("origin", "size", "root"),
        [("", 1, ROOT), ("a\nb", 1, ROOT), (ORIGIN, -1, ROOT), (ORIGIN, 1, ROOT[:31])],
    )
    def test_invalid_checkpoints_are_refused(self, origin: str, size: int, root: bytes) -> None:
        """Empty or multi-line origins, negative sizes and short roots cannot be built."""
        with pytest.raises(ValueError, match="checkpoint"):
            Checkpoint(origin, size, root)


class TestIndependentVerification:
    def test_signature_verifies_with_cryptography_directly(
        self, signer: NoteSigner, key: Ed25519PrivateKey
    ) -> None:
        """Decoding the signature line by hand, the key ID and Ed25519 signature check out."""
        checkpoint = Checkpoint(ORIGIN, 42, ROOT)
        note = signer.sign(checkpoint)
        body, _, signature_block = note.partition("\n\n")
        body += "\n"
        assert body == checkpoint.body()
        assert signature_block.endswith("\n")
        line = signature_block[:-1]
        assert "\n" not in line
        dash, name, encoded = line.split(" ")
        assert dash == "\u2014"
        assert name == ORIGIN
        blob = base64.b64decode(encoded, validate=True)
        public = key.public_key()
        expected_id = hashlib.sha256(ORIGIN.encode() + b"\n\x01" + _raw(public)).digest()[:4]
        assert blob[:4] == expected_id == signer.key_id
        public.verify(blob[4:], body.encode())  # raises InvalidSignature if wrong

    def test_round_trip(self, signer: NoteSigner, key: Ed25519PrivateKey) -> None:
        """What we sign we parse back to the same checkpoint."""
        for size, root in [(0, hashlib.sha256(b"").digest()), (1, ROOT), (10**12, ROOT)]:
            checkpoint = Checkpoint(ORIGIN, size, root)
            note = signer.sign(checkpoint)
            assert parse_signed_checkpoint(note, key.public_key(), ORIGIN) == checkpoint

    def test_public_key_pem_is_the_signing_key(
        self, signer: NoteSigner, key: Ed25519PrivateKey
    ) -> None:
        """The published PEM loads to the same raw public key."""
        loaded = serialization.load_pem_public_key(signer.public_key_pem().encode())
        assert isinstance(loaded, Ed25519PublicKey)
        assert _raw(loaded) == _raw(key.public_key())


def _swap_letter(text: str, index: int) -> str:
    char = text[index]
    replacement = "B" if char == "A" else "A"
    return text[:index] + replacement + text[index + 1 :]


class TestRefusals:
    def test_wrong_key(self, signer: NoteSigner) -> None:
        """Another key under the same name is not our signer."""
        note = signer.sign(Checkpoint(ORIGIN, 5, ROOT))
        other = Ed25519PrivateKey.generate().public_key()
        with pytest.raises(ValueError, match="no signature"):
            parse_signed_checkpoint(note, other, ORIGIN)

    def test_wrong_name(self, signer: NoteSigner, key: Ed25519PrivateKey) -> None:
        """The right key expected under another name is refused (the name is in the key ID)."""
        note = signer.sign(Checkpoint(ORIGIN, 5, ROOT))
        with pytest.raises(ValueError, match="no signature"):
            parse_signed_checkpoint(note, key.public_key(), "other.example/log")

    def test_renamed_signature_line(self, signer: NoteSigner, key: Ed25519PrivateKey) -> None:
        """Relabelling the signature line with another name does not make it that signer's."""
        note = signer.sign(Checkpoint(ORIGIN, 5, ROOT)).replace(
            f"\u2014 {ORIGIN} ", "\u2014 other.example/log "
        )
        with pytest.raises(ValueError, match="no signature"):
            parse_signed_checkpoint(note, key.public_key(), "other.example/log")

    @pytest.mark.parametrize(
        ("old", "new"),
        [("\n5\n", "\n6\n"), (ORIGIN + "\n", ORIGIN + "x\n"), ("\n5\n", "\n05\n")],
    )
    def test_altered_body(
        self, signer: NoteSigner, key: Ed25519PrivateKey, old: str, new: str
    ) -> None:
        """A changed size, origin or spelling of the size fails the signature."""
        note = signer.sign(Checkpoint(ORIGIN, 5, ROOT)).replace(old, new, 1)
        with pytest.raises(ValueError, match="does not verify"):
            parse_signed_checkpoint(note, key.public_key(), ORIGIN)

    def test_altered_root(self, signer: NoteSigner, key: Ed25519PrivateKey) -> None:
        """A changed root line fails the signature."""
        note = signer.sign(Checkpoint(ORIGIN, 5, ROOT))
        root_at = note.index(base64.b64encode(ROOT).decode())
        with pytest.raises(ValueError, match="does not verify"):
            parse_signed_checkpoint(_swap_letter(note, root_at + 3), key.public_key(), ORIGIN)

    @pytest.mark.parametrize("offset", [6, 20, 40, 60, 80, -4])
    def test_altered_signature(
        self, signer: NoteSigner, key: Ed25519PrivateKey, offset: int
    ) -> None:
        """Any changed character of the signature's base64 is refused."""
        note = signer.sign(Checkpoint(ORIGIN, 5, ROOT))
        start = note.index(f"\u2014 {ORIGIN} ") + len(f"\u2014 {ORIGIN} ")
        end = len(note) - 1
        position = start + offset if offset >= 0 else end + offset
        with pytest.raises(ValueError, match=r"verify|signature|base64"):
            parse_signed_checkpoint(_swap_letter(note, position), key.public_key(), ORIGIN)

    @pytest.mark.parametrize(
        "mangle",
        [
            lambda n: n.rstrip("\n"),  # no final newline
            lambda n: n.split("\n\n")[0] + "\n",  # no signatures
            lambda n: n.replace("\u2014 ", "- "),  # not an em dash
            lambda n: n + "trailing\n",  # junk after the signatures
            lambda n: n.replace("\n\n", "\n\n\n"),  # blank signature line
        ],
    )
    def test_malformed_notes(
        self, signer: NoteSigner, key: Ed25519PrivateKey, mangle: Callable[[str], str]
    ) -> None:
        """Structurally broken notes are ValueErrors, not crashes or acceptances."""
        note = signer.sign(Checkpoint(ORIGIN, 5, ROOT))
        with pytest.raises(ValueError):  # noqa: PT011 - each mangling has its own message
            parse_signed_checkpoint(mangle(note), key.public_key(), ORIGIN)

    @pytest.mark.parametrize(
        "body",
        [
            f"{ORIGIN}\n05\n{base64.b64encode(ROOT).decode()}\n",  # leading zero
            f"{ORIGIN}\n-5\n{base64.b64encode(ROOT).decode()}\n",
            f"{ORIGIN}\n5\n{base64.b64encode(ROOT[:31]).decode()}\n",  # short root
            f"{ORIGIN}\n5\n{base64.b64encode(ROOT).decode().rstrip('=')}\n",  # unpadded
            f"{ORIGIN}\n5\n",  # no root
        ],
    )
    def test_signed_but_malformed_bodies(
        self, signer: NoteSigner, key: Ed25519PrivateKey, body: str
    ) -> None:
        """A validly signed text that is not a well-formed checkpoint is still refused."""
        note = signer.sign_text(body)
        with pytest.raises(ValueError):  # noqa: PT011 - each body fails differently
            parse_signed_checkpoint(note, key.public_key(), ORIGIN)

    def test_cosignature_from_another_key_is_ignored(
        self, signer: NoteSigner, key: Ed25519PrivateKey
    ) -> None:
        """A witness's extra signature line does not stop our signature from verifying."""
        checkpoint = Checkpoint(ORIGIN, 5, ROOT)
        witness = NoteSigner(Ed25519PrivateKey.generate(), "witness.example")
        cosigned = signer.sign(checkpoint) + witness.sign(checkpoint).split("\n\n")[1]
        assert parse_signed_checkpoint(cosigned, key.public_key(), ORIGIN) == checkpoint

    @pytest.mark.parametrize("name", ["", "has space", "plus+sign", "tab\tname"])
    def test_invalid_key_names(self, key: Ed25519PrivateKey, name: str) -> None:
        """signed-note key names are non-empty, without spaces or '+'."""
        with pytest.raises(ValueError, match="invalid key name"):
            NoteSigner(key, name)


def _key_file(path: Path, key: Ed25519PrivateKey | EllipticCurvePrivateKey, mode: int) -> Path:
    """``key`` as PKCS#8 PEM in ``path``, with ``mode``."""
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(mode)
    return path


class TestSigningKeyFile:
    def test_creates_private_pkcs8_pem_and_reloads_it(self, tmp_path: Path) -> None:
        """A missing key file is created 0600 as PKCS#8 PEM, and the same key comes back."""
        path = tmp_path / "checkpoint.key"
        created = load_or_create_signing_key(path)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        pem = path.read_bytes()
        assert pem.startswith(b"-----BEGIN PRIVATE KEY-----\n")  # PKCS#8, unencrypted
        reloaded = load_or_create_signing_key(path)
        assert _raw(reloaded.public_key()) == _raw(created.public_key())
        assert path.read_bytes() == pem
        assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.key"]

    @pytest.mark.parametrize("mode", [0o600, 0o400])
    def test_existing_key_is_used(self, tmp_path: Path, mode: int) -> None:
        """A key placed by an operator, owner-only, is loaded, not replaced."""
        key = Ed25519PrivateKey.generate()
        path = _key_file(tmp_path / "operator.pem", key, mode)
        assert _raw(load_or_create_signing_key(path).public_key()) == _raw(key.public_key())

    @pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o602, 0o610, 0o666])
    def test_a_key_others_may_touch_is_refused(self, tmp_path: Path, mode: int) -> None:
        """As ssh does for private keys: any group or other bit on the owner's key file is a
        ValueError naming the mode and the fix, and the file is left as it was."""
        path = _key_file(tmp_path / "operator.pem", Ed25519PrivateKey.generate(), mode)
        before = path.read_bytes()
        expected = f"permissions {mode:04o} are too open.*run chmod 600 {path}"
        with pytest.raises(ValueError, match=expected):
            load_or_create_signing_key(path)
        assert (stat.S_IMODE(path.stat().st_mode), path.read_bytes()) == (mode, before)

    def test_non_ed25519_key_is_refused(self, tmp_path: Path) -> None:
        """An ECDSA key in the file is a ValueError, not a silent different algorithm."""
        path = _key_file(tmp_path / "ec.pem", generate_private_key(SECP256R1()), 0o600)
        with pytest.raises(ValueError, match="Ed25519"):
            load_or_create_signing_key(path)
