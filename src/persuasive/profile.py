"""κ as a function of δ (placeholder: being written)."""

from typing import Any

from persuasive.errors import UnsupportedCombinationError


def profile(mechanism: Any, definition: Any, **kwargs: Any) -> Any:
    raise UnsupportedCombinationError("profile is not implemented yet")
