"""Proof-based certificates (placeholder: being written)."""

from typing import Any

from persuasive.errors import UnsupportedCombinationError


def certify(mechanism: Any, definition: Any) -> Any:
    raise UnsupportedCombinationError("certify is not implemented yet")


__all__ = ["certify"]
