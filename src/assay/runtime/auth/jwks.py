"""Where the token verifier's keys come from: a JWKS file, or the identity provider's URL.

Both give the usable signing keys by ``kid``, read by one rule (``parse_jwks``: keys for
signing, of an accepted algorithm, with unique ids). A file is re-read when it changes
(looked at at most once a second). A URL (https, or http on loopback) is fetched with
PyJWT's ``PyJWKClient`` at start and kept for ``URL_LIFESPAN_SECONDS``: from
``URL_REFRESH_AHEAD`` of it on, a background thread fetches the set again while calls go on
with the keys they have, so verifying never waits for the provider in the usual case (only
when that refresh has not landed by the end of the lifespan is the set fetched on the
calling thread). It is fetched again at once when a token names a key id the set lacks (a
provider rotating its keys), but never more often than once per ``URL_COOLDOWN_SECONDS``
(likewise when a provider that names no key id signs with a key the set's only key does not
verify): a stream of made-up key ids costs the provider one request per cooldown, not one
per call. That fetch blocks the calling thread for at most a short timeout. A fetch or file
that fails, or holds no usable key, keeps the keys that were good.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import jwt

from assay.runtime.file_watch import FileWatch
from assay.transport import is_loopback

# The algorithms Assay accepts, each tied to the key type that must carry it.
ACCEPTED_ALGORITHMS = frozenset({"RS256", "ES256", "EdDSA"})
URL_LIFESPAN_SECONDS = 300.0
URL_COOLDOWN_SECONDS = 30.0
URL_TIMEOUT_SECONDS = 5.0
# The share of the lifespan after which the set is refreshed in the background.
URL_REFRESH_AHEAD = 0.8

Keys = Mapping[str, jwt.PyJWK]  # by kid ("" for a key without one)


def parse_jwks(data: object, where: str) -> dict[str, jwt.PyJWK]:
    """The usable keys of a JWKS document, by ``kid``; ValueError when it holds none."""
    entries = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"JWKS {where}: expected an object with a 'keys' array")
    keys: dict[str, jwt.PyJWK] = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        try:
            key = jwt.PyJWK(entry)
        except jwt.PyJWTError:  # PyJWKError, and InvalidKeyError for a curve like X25519
            continue  # a key type, curve or encoding Assay does not verify with
        if key.algorithm_name not in ACCEPTED_ALGORITHMS:
            continue
        kid = entry.get("kid", "")
        if not isinstance(kid, str) or kid in keys:
            raise ValueError(f"JWKS {where}: key ids must be unique strings ({kid!r})")
        keys[kid] = key
    if not keys:
        raise ValueError(
            f"JWKS {where} has no usable signing key ({', '.join(sorted(ACCEPTED_ALGORITHMS))})"
        )
    return keys


def load_jwks(path: Path) -> dict[str, jwt.PyJWK]:
    """The usable keys of a JWKS file, by ``kid``; ValueError when it holds none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read JWKS {path}: {error}") from None
    return parse_jwks(data, str(path))


def check_jwks_url(url: str) -> str:
    """``url`` if keys may be fetched from it (https, or http on loopback); ValueError else."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return url
    raise ValueError(f"JWKS URL {url!r}: expected https:// (or http:// on loopback)")


class FileKeys:
    """The keys of a JWKS file, re-read when it changes (``assay.runtime.file_watch``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._keys: Keys = load_jwks(path)
        self._watch = FileWatch(path, now=time.monotonic())

    def current(self) -> tuple[Keys, bool]:
        """The keys, and whether they changed since last asked."""
        version = self._watch.look(time.monotonic())
        if version is None:
            return self._keys, False
        with contextlib.suppress(ValueError):  # a bad file: tried again at the next look
            self._keys = load_jwks(self.path)
            self._watch.took(version)
            return self._keys, True
        return self._keys, False

    def refetch(self) -> bool:
        """A file is not refetched for an unknown key id (it is watched instead)."""
        return False


class UrlKeys:
    """The keys served at a JWKS URL, cached and refetched as the module says."""

    def __init__(self, url: str) -> None:
        self.url = check_jwks_url(url)
        self._client = jwt.PyJWKClient(url, cache_jwk_set=False, timeout=URL_TIMEOUT_SECONDS)
        self._lock = threading.Lock()
        self._fetched = time.monotonic()
        try:
            self._keys: Keys = parse_jwks(self._client.fetch_data(), url)
        except jwt.PyJWKClientError as error:
            raise ValueError(f"cannot fetch JWKS {url}: {error}") from None
        self._changed = False
        # When a background refresh was last started (None: none in flight or failed since).
        self._ahead: float | None = None

    def _download(self) -> Keys | None:
        try:
            return parse_jwks(self._client.fetch_data(), self.url)
        except (jwt.PyJWKClientError, ValueError):
            return None

    def _install(self, keys: Keys) -> None:
        """Hold the lock: ``keys`` become the set."""
        self._changed = self._changed or keys.keys() != self._keys.keys()
        self._keys = keys

    def _fetch(self) -> bool:
        """Fetch now, holding the lock (the caller checked the timing); whether usable keys
        came."""
        self._fetched = time.monotonic()
        keys = self._download()
        if keys is None:
            return False
        self._install(keys)
        return True

    def _refresh_in_background(self) -> None:
        """Fetch without the lock, then install what came (a failure is retried after the
        cooldown, by the next call that finds the set old)."""
        keys = self._download()
        with self._lock:
            if keys is not None:
                self._install(keys)
                self._fetched = time.monotonic()
                self._ahead = None

    def current(self) -> tuple[Keys, bool]:
        with self._lock:
            moment = time.monotonic()
            age = moment - self._fetched
            if age >= URL_LIFESPAN_SECONDS:
                self._fetch()
                self._ahead = None
            elif age >= URL_LIFESPAN_SECONDS * URL_REFRESH_AHEAD and (
                self._ahead is None or moment - self._ahead >= URL_COOLDOWN_SECONDS
            ):
                self._ahead = moment
                threading.Thread(
                    target=self._refresh_in_background, name="jwks-refresh", daemon=True
                ).start()
            changed, self._changed = self._changed, False
            return self._keys, changed

    def refetch(self) -> bool:
        """Fetch again for a key id the set lacks, unless the last fetch was too recent."""
        with self._lock:
            if time.monotonic() - self._fetched < URL_COOLDOWN_SECONDS:
                return False
            return self._fetch()


def key_source(jwks: Path | str) -> FileKeys | UrlKeys:
    """The key source for a file path or a URL."""
    return UrlKeys(jwks) if isinstance(jwks, str) else FileKeys(jwks)
