r"""k-fold and heterogeneous composition: the same dataset released by many mechanisms.

:class:`ComposedRelease` generalises the binary :class:`~persuasive.Composition` (Prop 3,
Bon et al. 2026) to any number of releases of the same data x,

.. math:: (M_1^{\otimes k_1} \otimes \cdots \otimes M_r^{\otimes k_r})(x, \cdot)
          = \bigotimes_{i=1}^r M_i(x, \cdot)^{\otimes k_i},

each release independent of the others given x, so the likelihood is the product and the
privacy loss of a neighbour pair is the *sum* of the parts' losses (Meiser & Mohammadi 2018).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive.errors import ValidationError
from persuasive.mechanisms.base import Mechanism
from persuasive.mechanisms.combinators import Composition, Joint


@dataclass(frozen=True, init=False)
class ComposedRelease(Mechanism):
    """Release x through every mechanism, ``counts[i]`` times each (independently).

    Parameters
    ----------
    mechanisms : sequence of Mechanism
        The distinct releases (at least one).
    counts : sequence of int, optional
        How many times each is released (each >= 1); default 1 each.

    Examples
    --------
    >>> import persuasive as pp
    >>> m = pp.ComposedRelease.repeat(pp.GaussianMechanism(10.0), 100)
    >>> m.k, m.describe()["counts"]
    (100, [100])
    """

    mechanisms: tuple[Mechanism, ...]
    counts: tuple[int, ...]

    def __init__(self, mechanisms: Sequence[Mechanism], counts: Sequence[int] | None = None):
        mechs = tuple(mechanisms) if isinstance(mechanisms, (list, tuple)) else None
        if not mechs:
            raise ValidationError(
                f"mechanisms must be a non-empty list of Mechanism; got {mechanisms!r}"
            )
        for m in mechs:
            if not isinstance(m, Mechanism):
                raise ValidationError(f"mechanisms must contain Mechanism objects; got {m!r}")
        cnt = (1,) * len(mechs) if counts is None else tuple(counts)
        if len(cnt) != len(mechs):
            raise ValidationError(
                f"counts must have one entry per mechanism ({len(mechs)}); got {counts!r}"
            )
        cnt = tuple(dm.REPEATS.check("k" if len(mechs) == 1 else "counts", c) for c in cnt)
        object.__setattr__(self, "mechanisms", mechs)
        object.__setattr__(self, "counts", cnt)
        object.__setattr__(self, "deterministic", all(m.deterministic for m in mechs))

    @classmethod
    def repeat(cls, mechanism: Mechanism, k: int) -> ComposedRelease:
        """The k-fold release of ``mechanism`` (k >= 1)."""
        return cls([mechanism], [dm.REPEATS.check("k", k)])

    @property
    def k(self) -> int:
        """Total number of releases."""
        return int(sum(self.counts))

    def _expanded(self) -> list[Mechanism]:
        return [m for m, c in zip(self.mechanisms, self.counts, strict=True) for _ in range(c)]

    def apply(self, x: ArrayLike) -> Any:
        return tuple(m.apply(x) for m in self._expanded())

    def sample(self, x: ArrayLike, size: int, rng: np.random.Generator | None = None) -> Any:
        rng = np.random.default_rng(rng)
        return tuple(m.sample(x, size, rng) for m in self._expanded())

    def log_likelihood(self, x: ArrayLike, t: Any) -> NDArray[np.float64]:
        parts = self._expanded()
        if not isinstance(t, (tuple, list)) or len(t) != len(parts):
            raise ValidationError(f"t must be a sequence of {len(parts)} outputs; got {t!r}")
        return np.asarray(
            sum(m.log_likelihood(x, ti) for m, ti in zip(parts, t, strict=True)),
            dtype=np.float64,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "mechanism": "ComposedRelease",
            "parts": [m.describe() for m in self.mechanisms],
            "counts": list(self.counts),
        }


def flatten(mechanism: Mechanism) -> list[tuple[Mechanism, int]]:
    """The parts of a (nested) composition as ``(mechanism, count)``, equal parts merged.

    ``Composition`` and ``ComposedRelease`` are unrolled; ``Joint(M, K)`` becomes M because K
    reads only M's output, so the pair's privacy loss is M's (Prop 4). Anything else is one part.

    Examples
    --------
    >>> import persuasive as pp
    >>> g = pp.GaussianMechanism(1.0)
    >>> flatten(pp.Composition(g, pp.ComposedRelease([g], [3])))
    [(GaussianMechanism(sigma=1.0), 4)]
    """
    out: list[tuple[Mechanism, int]] = []

    def add(m: Mechanism, c: int) -> None:
        if isinstance(m, Composition):
            add(m.first, c)
            add(m.second, c)
        elif isinstance(m, ComposedRelease):
            for part, cc in zip(m.mechanisms, m.counts, strict=True):
                add(part, c * cc)
        elif isinstance(m, Joint):
            add(m.first, c)
        else:
            for i, (seen, cc) in enumerate(out):
                if _same(seen, m):
                    out[i] = (seen, cc + c)
                    return
            out.append((m, c))

    add(mechanism, 1)
    return out


def _same(a: Mechanism, b: Mechanism) -> bool:
    if a is b:
        return True
    try:
        return bool(type(a) is type(b) and a.describe() == b.describe())
    except (TypeError, ValueError):  # array-valued descriptions
        return False
