"""Combining kernels: the joint release M⊗K, the composition M₁⊗M₂ and the chain MK.

Notation of Bon et al. (2026, §2; displayed formulas reconstructed in docs/math.md §1):

.. math::

    (M\\otimes K)(z, A\\times B) = \\int_A K((z,t), B)\\, M(z, dt), \\qquad
    MK(z, B) = \\int K((z,t), B)\\, M(z, dt).

Three classes cover the cases the library reasons about:

* :class:`Joint` — ``M ⊗ K`` with K reading only M's output t (K is independent of x):
  receiver post-processing, Prop 4. Outputs are pairs ``(t, u)``.
* :class:`Composition` — ``M₁ ⊗ M₂`` with M₂ reading only the data x: two releases of the same
  data, Prop 3. Outputs are pairs ``(t₁, t₂)``.
* :class:`Chain` — ``MK`` with K reading only M's output; only K's output is published: sender
  post-processing, Prop 5.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms.base import Mechanism
from persuasive.mechanisms.finite import FiniteKernel


def _pair(t: Any) -> tuple[Any, Any]:
    if not isinstance(t, (tuple, list)) or len(t) != 2:
        raise ValidationError(f"t must be a pair (t1, t2) for a joint release; got {t!r}")
    return t[0], t[1]


def _check_parts(obj: Mechanism, names: tuple[str, str], *, finite: bool = True) -> None:
    """Validate the two parts of a combinator and set its flags from theirs (``finite=False``
    for combinators that do not enumerate their outputs)."""
    parts = tuple(getattr(obj, name) for name in names)
    for name, part in zip(names, parts, strict=True):
        if not isinstance(part, Mechanism):
            raise ValidationError(f"{name} must be a Mechanism; got {part!r}")
    a, b = parts
    object.__setattr__(obj, "deterministic", a.deterministic and b.deterministic)
    object.__setattr__(obj, "finite", finite and a.finite and b.finite)


@dataclass(frozen=True)
class Joint(Mechanism):
    """The joint release M ⊗ K, K a kernel on M's outputs (independent of x; Prop 4)."""

    first: Mechanism
    post: Mechanism

    def __post_init__(self) -> None:
        _check_parts(self, ("first", "post"))

    def apply(self, x: ArrayLike) -> Any:
        t = self.first.apply(x)
        return (t, self.post.apply(t))

    def sample(self, x: ArrayLike, size: int, rng: np.random.Generator | None = None) -> Any:
        rng = np.random.default_rng(rng)
        t1 = np.asarray(self.first.sample(x, size, rng))
        return (t1, self.post.sample_batch(t1.reshape(size, -1), rng))

    def log_likelihood(self, x: ArrayLike, t: Any) -> NDArray[np.float64]:
        t1, t2 = _pair(t)
        return self.first.log_likelihood(x, t1) + self.post.log_likelihood(
            np.atleast_1d(np.asarray(t1, dtype=np.float64)), t2
        )

    def as_finite(self) -> FiniteKernel:
        """The same kernel as a FiniteKernel on pairs, output index ``t * J + u``."""
        if not (isinstance(self.first, FiniteKernel) and isinstance(self.post, FiniteKernel)):
            raise UnsupportedCombinationError(
                "Joint.as_finite needs two FiniteKernel parts; got "
                f"{type(self.first).__name__} and {type(self.post).__name__}"
            )
        m, k = self.first.matrix, self.post.matrix
        if k.shape[0] != m.shape[1]:
            raise ValidationError(f"post must have {m.shape[1]} input rows; got {k.shape[0]}")
        return FiniteKernel((m[:, :, None] * k[None, :, :]).reshape(m.shape[0], -1))

    def describe(self) -> dict[str, Any]:
        return {"mechanism": "Joint", "first": self.first.describe(), "post": self.post.describe()}


@dataclass(frozen=True)
class Composition(Mechanism):
    """Two releases of the same data, M₁ ⊗ M₂ with M₂ independent of t₁ (Prop 3)."""

    first: Mechanism
    second: Mechanism

    def __post_init__(self) -> None:
        _check_parts(self, ("first", "second"), finite=False)

    def apply(self, x: ArrayLike) -> Any:
        return (self.first.apply(x), self.second.apply(x))

    def sample(self, x: ArrayLike, size: int, rng: np.random.Generator | None = None) -> Any:
        rng = np.random.default_rng(rng)
        return (self.first.sample(x, size, rng), self.second.sample(x, size, rng))

    def log_likelihood(self, x: ArrayLike, t: Any) -> NDArray[np.float64]:
        t1, t2 = _pair(t)
        return self.first.log_likelihood(x, t1) + self.second.log_likelihood(x, t2)

    def describe(self) -> dict[str, Any]:
        return {
            "mechanism": "Composition",
            "first": self.first.describe(),
            "second": self.second.describe(),
        }


@dataclass(frozen=True)
class Chain(Mechanism):
    """The chained release MK: K is applied to M's output and only K's output is published."""

    first: Mechanism
    post: Mechanism

    def __post_init__(self) -> None:
        _check_parts(self, ("first", "post"))
        object.__setattr__(self, "discrete_output", self.post.discrete_output)

    def apply(self, x: ArrayLike) -> Any:
        return self.post.apply(np.atleast_1d(self.first.apply(x)))

    def sample(self, x: ArrayLike, size: int, rng: np.random.Generator | None = None) -> Any:
        rng = np.random.default_rng(rng)
        if self.first.deterministic:
            return self.post.sample(np.atleast_1d(self.first.apply(x)), size, rng)
        t1 = np.asarray(self.first.sample(x, size, rng))
        return self.post.sample_batch(t1.reshape(size, -1), rng)

    def log_likelihood(self, x: ArrayLike, t: Any) -> NDArray[np.float64]:
        if self.first.deterministic:
            f = self.first
            fx = f._f(np.asarray(x, dtype=np.float64))  # type: ignore[attr-defined]
            fx = fx[..., None] if np.ndim(fx) == np.ndim(x) - 1 else fx
            return self.post.log_likelihood(fx, t)
        if isinstance(self.first, FiniteKernel) and isinstance(self.post, FiniteKernel):
            return self.as_finite().log_likelihood(x, t)
        if isinstance(self.first, FiniteKernel):
            rows = self.first._row(x)
            outs = np.arange(self.first.n_outputs, dtype=np.float64)
            with np.errstate(divide="ignore"):
                log_m = np.log(self.first.matrix[rows])  # (..., J)
            log_k = self.post.log_likelihood(outs[:, None], np.asarray(t)[..., None])
            return np.asarray(logsumexp(log_m + log_k, axis=-1))
        raise UnsupportedCombinationError(
            f"the likelihood of Chain({type(self.first).__name__}, {type(self.post).__name__}) "
            "needs a deterministic or finite first mechanism"
        )

    def output_distribution(self, x: ArrayLike) -> tuple[Any, NDArray[np.float64]]:
        if isinstance(self.first, FiniteKernel) and isinstance(self.post, FiniteKernel):
            return self.as_finite().output_distribution(x)
        return super().output_distribution(x)

    def as_finite(self) -> FiniteKernel:
        """MK as a FiniteKernel (the matrix product), when both parts are finite kernels."""
        if not (isinstance(self.first, FiniteKernel) and isinstance(self.post, FiniteKernel)):
            raise UnsupportedCombinationError("Chain.as_finite needs two FiniteKernel parts")
        m, k = self.first.matrix, self.post.matrix
        if k.shape[0] != m.shape[1]:
            raise ValidationError(f"post must have {m.shape[1]} input rows; got {k.shape[0]}")
        return FiniteKernel(m @ k)

    def describe(self) -> dict[str, Any]:
        return {"mechanism": "Chain", "first": self.first.describe(), "post": self.post.describe()}
