"""Temporary: the old path of ``domain.model``, until columnar/bridge.py imports it."""

from assay.services.resolver.domain.model import *  # noqa: F403

__all__ = ["Staleness"]  # noqa: F405
