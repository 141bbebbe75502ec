"""Temporary: the old path of ``domain.policy``, until columnar/bridge.py imports it."""

from assay.services.resolver.domain.policy import *  # noqa: F403

__all__ = ["Policy"]  # noqa: F405
