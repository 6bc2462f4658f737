"""Search-based audits (placeholder: being written)."""

from typing import Any

from persuasive.errors import UnsupportedCombinationError


def audit(mechanism: Any, definition: Any, **kwargs: Any) -> Any:
    raise UnsupportedCombinationError("audit is not implemented yet")


__all__ = ["audit"]
