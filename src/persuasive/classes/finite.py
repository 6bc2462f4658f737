"""A finite, explicitly listed class of priors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from numpy.typing import ArrayLike

from persuasive.classes.base import PriorClass
from persuasive.errors import ValidationError
from persuasive.priors import Prior


@dataclass(frozen=True)
class FiniteClass(PriorClass):
    """The class {Q₁, …, Q_K} of explicitly given priors (independent of x).

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.DiscretePrior([0, 1], [0.5, 0.5])
    >>> pp.FiniteClass([q]).contains(q)
    True
    """

    priors: tuple[Prior, ...]

    def __init__(self, priors: Sequence[Prior]) -> None:
        ps = tuple(priors)
        if not ps:
            raise ValidationError("priors must list at least one Prior")
        for k, p in enumerate(ps):
            if not isinstance(p, Prior):
                raise ValidationError(f"priors[{k}] must be a Prior; got {p!r}")
        object.__setattr__(self, "priors", ps)

    def contains(self, prior: Prior, x: ArrayLike | None = None) -> bool:
        return any(prior is p for p in self.priors)

    def describe(self) -> dict[str, Any]:
        return {"class": "FiniteClass", "priors": [repr(p) for p in self.priors]}
