"""Lazy imports of optional packages, with an error that names what to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from persuasive.errors import PersuasiveError


class MissingDependencyError(PersuasiveError, ImportError):
    """An optional package needed by an adapter is not installed."""


def require(module: str, package: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming pip's ``package``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"this adapter needs the optional package {package!r} (import {module!r}), which is "
            f"not installed; install it with `pip install {package}` or "
            "`pip install persuasive-privacy[test]`"
        ) from exc
