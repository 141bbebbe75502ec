"""Temporary: the old path of ``wire.convert``, until columnar/bridge.py and
columnar/to_resolutions.py import it."""

from assay.services.resolver.wire.convert import *  # noqa: F403

__all__ = ["ClaimIndex", "Emitter"]  # noqa: F405
