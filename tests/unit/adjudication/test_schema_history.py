"""Applied migrations never change: each engine's version N keeps the text it shipped with.

Both engines build their migrations from shared table definitions
(``storage.ddl``), so an edit there would silently rewrite an old version of
either schema; a database migrated before would then differ from one created
after. A new version is a new entry of ``MIGRATIONS`` instead.
"""

from __future__ import annotations

import hashlib
from types import ModuleType

import pytest

from assay.services.adjudication.storage.postgres import schema as postgres_schema
from assay.services.adjudication.storage.sqlite import schema as sqlite_schema

ENGINES: dict[str, ModuleType] = {"sqlite": sqlite_schema, "postgres": postgres_schema}

# sha256 of each version's text, as released.
SHIPPED = [
    ("sqlite", 1, "41b96fe0b72f88dbc69f17bce5310ed5d1f919b7520a6bbba6d6e2a17fb33ab2"),
    ("sqlite", 2, "174a69ee647443b7cea805e4d248250a3aef21a9590841335b71fdec9416ca93"),
    ("sqlite", 3, "78d61c45aaf3e9d3da1f878d5d68ddc5ba914a7cf7742d2c3cf0c2d9e02a5633"),
    ("sqlite", 4, "4b665c66ef33a81bdef13c782d21d90f97e2dad725eaf46a1a56d02a632f9e08"),
    ("sqlite", 5, "d698db487ae8d6c12803a6540ed5bcfb589c33163fff6459b66b6e163eed315d"),
    ("sqlite", 6, "cb04260decea0a344793582ed8685f9f632799a032649f31da04f302a4276965"),
    ("sqlite", 7, "4a601d2c67257d21ede1d186c71001fe3439354a95ad009b847263527606e917"),
    ("sqlite", 8, "83cf6cbd112bbfd0f18e661942bd056b400ea75544077ced34ac83231e0e255f"),
    ("sqlite", 9, "67dfa7b1677b02467a3dfca07d221281b24ed7168a26f9f91448c0b2d2bcfd8c"),
    ("postgres", 1, "3ca702ab0363a690a53ebc418b66cf5987b966402ff2ed6554b93e5f11735777"),
    ("postgres", 2, "cdbb9a51bfde5baef4f6792d4bfc5368260cefe3e420293f491d1cecf08619c5"),
    ("postgres", 3, "6ba53d3359ce662e3935633114f2f13226ee9eba04d164ed3100168b72e867d9"),
    ("postgres", 4, "6e8bf1c5d98df8932101f89e2c5b33cba0abe3b5d1331120683efb16f0bccc61"),
    ("postgres", 5, "d698db487ae8d6c12803a6540ed5bcfb589c33163fff6459b66b6e163eed315d"),
    ("postgres", 6, "48e0845da34cac96706c278eacd16366d14330ec58eaeef4b36ba2cf3d5bfc5a"),
    ("postgres", 7, "4890b239011866ea30450861970266ce6e4ef5e0c3fe2ec4486cdb6a64355b8e"),
    ("postgres", 8, "e61a15c8ad570196d3ac14e13bce0916f2eb52e7d0b6784d6110c9ee0dbb9b5b"),
    ("postgres", 9, "e31f50e6d794c08ede4025ff57f78627c9c135b30f65898d093d7f4d2089a624"),
]


class TestMigrationHistory:
    @pytest.mark.parametrize(("engine", "version", "digest"), SHIPPED)
    def test_a_shipped_version_keeps_its_text(self, engine: str, version: int, digest: str) -> None:
        """Version ``version`` of ``engine``'s schema is byte for byte the one released."""
        text = ENGINES[engine].MIGRATIONS[version - 1]
        assert hashlib.sha256(text.encode()).hexdigest() == digest

    @pytest.mark.parametrize("engine", sorted(ENGINES))
    def test_every_version_is_pinned(self, engine: str) -> None:
        """Each version an engine ships has a pinned digest here (a new one is added with it)."""
        pinned = sorted(version for name, version, _ in SHIPPED if name == engine)
        assert pinned == list(range(1, ENGINES[engine].SCHEMA_VERSION + 1))
