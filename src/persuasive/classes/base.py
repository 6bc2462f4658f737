"""Prior classes 𝒬_x: the Receivers a guarantee protects against (Assumption 5, Bon et al. 2026)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from numpy.typing import ArrayLike

from persuasive.priors.base import Prior


class PriorClass(ABC):
    """A class of data-priors 𝒬_x, possibly depending on the dataset x."""

    @abstractmethod
    def contains(self, prior: Prior, x: ArrayLike | None = None) -> bool:
        """Whether ``prior`` belongs to 𝒬_x (x is required when the class depends on it)."""

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (name and parameters)."""
        return {"class": type(self).__name__}
