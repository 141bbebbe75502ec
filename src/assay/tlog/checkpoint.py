"""Signed checkpoints: the log's (size, root) commitment in the C2SP formats.

A Merkle root is only worth something if the log cannot show different roots
to different people, so the service signs each one. We use the formats the
transparency ecosystem already reads: the C2SP tlog-checkpoint body wrapped in
a C2SP signed note with an Ed25519 signature, so a checkpoint can be checked by
any signed-note tool (Go's ``golang.org/x/mod/sumdb/note``, witnesses) as well
as by ``parse_signed_checkpoint`` here.

https://github.com/C2SP/C2SP/blob/main/tlog-checkpoint.md
https://github.com/C2SP/C2SP/blob/main/signed-note.md
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

ROOT_SIZE = 32
KEY_ID_SIZE = 4
SIGNATURE_SIZE = 64
# signed-note: the algorithm identifier byte for Ed25519 keys.
ED25519_ALGORITHM = b"\x01"
SIGNATURE_PREFIX = "\u2014 "  # EM DASH, space
# Decimal without leading zeros; a size has one spelling so a body has one signature.
_SIZE = re.compile(r"0|[1-9][0-9]{0,19}")
# A note is small; refuse megabytes of "signatures" before looking at them.
MAX_NOTE_LENGTH = 64 * 1024


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    """Strict standard base64: padded, no stray characters, one spelling only."""
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as error:
        raise ValueError(f"not base64: {text!r}") from error
    if _b64(data) != text:
        raise ValueError(f"not canonical base64: {text!r}")
    return data


def _check_name(name: str) -> None:
    # signed-note: a key name is non-empty UTF-8 without Unicode spaces or "+".
    if not name or "+" in name or any(ch.isspace() for ch in name):
        raise ValueError(f"invalid key name {name!r}: non-empty, no spaces, no '+'")


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(name: str, public_key: Ed25519PublicKey) -> bytes:
    """signed-note key ID: SHA-256(name || "\\n" || 0x01 || public key)[:4]."""
    _check_name(name)
    material = name.encode("utf-8") + b"\n" + ED25519_ALGORITHM + _raw_public(public_key)
    return hashlib.sha256(material).digest()[:KEY_ID_SIZE]


@dataclass(frozen=True)
class Checkpoint:
    """A log's commitment: its origin (the log's name), tree size and RFC 6962 root."""

    origin: str
    size: int
    root: bytes

    def __post_init__(self) -> None:
        if not self.origin or "\n" in self.origin:
            raise ValueError("checkpoint origin must be one non-empty line")
        if self.size < 0:
            raise ValueError(f"checkpoint size {self.size} is negative")
        if len(self.root) != ROOT_SIZE:
            raise ValueError(f"checkpoint root must be {ROOT_SIZE} bytes")

    def body(self) -> str:
        """The C2SP tlog-checkpoint note text: origin, size, base64 root, one per line."""
        return f"{self.origin}\n{self.size}\n{_b64(self.root)}\n"


class NoteSigner:
    """Signs checkpoints as C2SP signed notes with one named Ed25519 key."""

    def __init__(self, key: Ed25519PrivateKey, name: str) -> None:
        _check_name(name)
        self._key = key
        self.name = name
        self._key_id = key_id(name, key.public_key())

    @property
    def key_id(self) -> bytes:
        """The 4-byte signed-note key ID that prefixes every signature."""
        return self._key_id

    def sign(self, checkpoint: Checkpoint) -> str:
        """The signed note: body, a blank line, and one signature line."""
        return self.sign_text(checkpoint.body())

    def sign_text(self, text: str) -> str:
        """Any note text (newline-terminated) signed as a C2SP signed note."""
        if not text.endswith("\n") or "\n\n" in text:
            raise ValueError("note text must end with a newline and contain no blank line")
        signature = self._key.sign(text.encode("utf-8"))
        return f"{text}\n{SIGNATURE_PREFIX}{self.name} {_b64(self._key_id + signature)}\n"

    def public_key_pem(self) -> str:
        """The verification key as SubjectPublicKeyInfo PEM, for clients to pin."""
        return (
            self._key.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode("ascii")
        )

    def verifier_key(self) -> str:
        """The signed-note verifier key string: name+hex(key ID)+base64(0x01 || public key)."""
        raw = _raw_public(self._key.public_key())
        return f"{self.name}+{self._key_id.hex()}+{_b64(ED25519_ALGORITHM + raw)}"


def _split_note(text: str) -> tuple[str, list[str]]:
    """Split a signed note into its text (ending in newline) and its signature lines."""
    if len(text) > MAX_NOTE_LENGTH:
        raise ValueError("signed note is too long")
    if not text.endswith("\n"):
        raise ValueError("signed note must end with a newline")
    cut = text.rfind("\n\n")
    if cut < 0:
        raise ValueError("signed note has no signature block")
    body, block = text[: cut + 1], text[cut + 2 :]
    lines = block[:-1].split("\n")
    if any(not line.startswith(SIGNATURE_PREFIX) for line in lines):
        raise ValueError("malformed signature line in signed note")
    return body, lines


def _parse_body(body: str) -> Checkpoint:
    # Extension lines after the root are allowed by tlog-checkpoint; we emit
    # none and ignore any (they are still covered by the signature).
    lines = body[:-1].split("\n")
    if len(lines) < 3 or any(not line for line in lines):
        raise ValueError("checkpoint body needs origin, size and root lines")
    origin, size, root = lines[0], lines[1], lines[2]
    if not _SIZE.fullmatch(size):
        raise ValueError(f"checkpoint size {size!r} is not a decimal number")
    return Checkpoint(origin=origin, size=int(size), root=_unb64(root))


def open_note(text: str, public_key: Ed25519PublicKey, name: str) -> str:
    """The note text of ``text`` if ``name``'s key ``public_key`` signed it; else ValueError.

    Signatures by other keys are skipped, as signed-note prescribes (witnesses
    add cosignatures); a signature that claims our key but fails is refused.
    """
    expected_id = key_id(name, public_key)
    body, lines = _split_note(text)
    if any(ord(ch) < 0x20 and ch != "\n" for ch in body):
        raise ValueError("signed note text contains control characters")
    verified = False
    for line in lines:
        signer, _, encoded = line[len(SIGNATURE_PREFIX) :].partition(" ")
        if not signer or not encoded:
            raise ValueError("malformed signature line in signed note")
        blob = _unb64(encoded)
        if len(blob) <= KEY_ID_SIZE:
            raise ValueError("signature line carries no signature")
        if signer != name or blob[:KEY_ID_SIZE] != expected_id:
            continue
        signature = blob[KEY_ID_SIZE:]
        if len(signature) != SIGNATURE_SIZE:
            raise ValueError("Ed25519 signature has the wrong length")
        try:
            public_key.verify(signature, body.encode("utf-8"))
        except InvalidSignature as error:
            raise ValueError(f"signature by {name} does not verify") from error
        verified = True
    if not verified:
        raise ValueError(f"signed note carries no signature by {name} with this key")
    return body


def parse_signed_checkpoint(text: str, public_key: Ed25519PublicKey, name: str) -> Checkpoint:
    """The checkpoint in ``text``, if ``name``'s key ``public_key`` signed it; else ValueError."""
    return _parse_body(open_note(text, public_key, name))


def load_or_create_signing_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 key in ``path`` (PKCS#8 PEM), created with mode 0600 if missing.

    A new key is written to a private temporary file and hard-linked into
    place, so no reader ever sees a half-written key, and of two processes
    starting together one wins and both use its key. An existing key file the
    caller owns is refused (``ValueError``) while group or others may read or
    write it (``read_private_key``).
    """
    if path.exists():
        return _load(path)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd, temporary = tempfile.mkstemp(prefix=".key-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            os.fchmod(file.fileno(), 0o600)
            file.write(pem)
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            return _load(path)
    finally:
        os.unlink(temporary)
    return key


def read_private_key(path: Path) -> bytes:
    """The bytes of the private key file ``path``; ``ValueError`` when the file belongs to
    this process's user and its mode grants group or others anything.

    The rule is OpenSSH's for private keys (``sshkey_perm_ok``: a key the user owns with any
    of the 077 bits set is refused, "permissions are too open"): whoever else can read the
    key can sign checkpoints of any history. A file owned by someone else (root, as a
    Kubernetes secret volume mounts it) is the owner's to protect and is not judged here.
    The mode is read from the open file (``fstat``), so it is the file's whose bytes are
    used."""
    with path.open("rb") as file:
        found = os.fstat(file.fileno())
        mode = found.st_mode & 0o777
        if found.st_uid == os.getuid() and mode & 0o077:
            raise ValueError(
                f"permissions {mode:04o} are too open: a private key must not be readable or "
                f"writable by group or others; run chmod 600 {path}"
            )
        return file.read()


def _load(path: Path) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key(read_private_key(path), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path} does not hold an Ed25519 private key")
    return key
