r"""The privacy profile of a certified mechanism: κ as a function of δ, and δ as a function of κ.

For a :class:`~persuasive.PersuasivePrivacy` definition (its κ and δ are ignored; its scores and
prior class are used) and the theorem that certifies the mechanism,

.. math:: \kappa(\delta) = \inf\{\kappa \ge 0 : M \text{ is }
          (\mathcal S, \mathcal Q_x, \kappa, \delta)\text{-PP}\}, \qquad
          \delta(\kappa) = \inf\{\delta : M \text{ is }
          (\mathcal S, \mathcal Q_x, \kappa, \delta)\text{-PP}\}.

Both are non-increasing. For Prop 6 they are the exact PDP profile of the mechanism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _validation as v
from persuasive.certify.registry import check_inputs, find_theorem
from persuasive.definitions import PersuasivePrivacy
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.results import _json

#: Default δ grid: 0 and 50 log-spaced values from 1e-9 to 0.5.
DEFAULT_DELTAS = np.concatenate([[0.0], np.logspace(-9.0, math.log10(0.5), 50)])


@dataclass(frozen=True, eq=False)
class Profile:
    """κ(δ) on a δ grid and δ(κ) on a κ grid, with the theorem that proves them.

    Attributes
    ----------
    deltas, kappas : ndarray
        The δ grid and κ(δ) (``inf`` where no finite κ is proven).
    kappa_grid, delta_of_kappa : ndarray
        The κ grid and δ(κ).
    basis : str
        The theorem used.
    exact : bool
        Whether the values are exact (else upper bounds).
    """

    deltas: NDArray[np.float64] = field(repr=False)
    kappas: NDArray[np.float64] = field(repr=False)
    kappa_grid: NDArray[np.float64] = field(repr=False)
    delta_of_kappa: NDArray[np.float64] = field(repr=False)
    basis: str
    exact: bool
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return dict(
            _json(
                {
                    "deltas": self.deltas,
                    "kappas": self.kappas,
                    "kappa_grid": self.kappa_grid,
                    "delta_of_kappa": self.delta_of_kappa,
                    "basis": self.basis,
                    "exact": self.exact,
                    "notes": list(self.notes),
                }
            )
        )


def _grid(name: str, values: ArrayLike, high: float | None) -> NDArray[np.float64]:
    a = np.atleast_1d(v.array(name, values, ndim=(0, 1)))
    if np.any(a < 0) or (high is not None and np.any(a >= high)):
        lim = f"[0, {high:g})" if high is not None else "[0, inf)"
        raise ValidationError(f"{name} must lie in {lim}; got min {a.min():g}, max {a.max():g}")
    return a


def profile(
    mechanism: Any,
    definition: Any,
    deltas: ArrayLike | None = None,
    kappas: ArrayLike | None = None,
) -> Profile:
    r"""κ(δ) and δ(κ) of ``mechanism`` under the scores and priors of ``definition``.

    Parameters
    ----------
    mechanism : Mechanism
        The release.
    definition : PersuasivePrivacy
        Supplies the scores and the prior class (its own κ and δ are not used).
    deltas : array_like, optional
        δ grid in [0, 1); default 0 and 50 log-spaced values in [1e-9, 0.5].
    kappas : array_like, optional
        κ grid, κ ≥ 0; default 101 points from 0 to 1.25 × the largest finite κ(δ).

    Returns
    -------
    Profile

    Examples
    --------
    >>> import persuasive as pp
    >>> prof = pp.profile(pp.LaplaceMechanism(1.0), pp.pure_dp(1.0), deltas=[0.0, 0.61059961],
    ...                   kappas=[0.5, 1.0])
    >>> prof.kappas.round(6).tolist(), prof.delta_of_kappa.round(8).tolist()
    ([1.0, 0.5], [0.61059961, 0.0])
    """
    check_inputs(mechanism, definition)
    if not isinstance(definition, PersuasivePrivacy):
        raise UnsupportedCombinationError(
            "profile needs a PersuasivePrivacy definition; an expectation guarantee (PPE) has "
            "no delta, use certify() instead"
        )
    th = find_theorem(mechanism, definition)
    ds = DEFAULT_DELTAS.copy() if deltas is None else _grid("deltas", deltas, 1.0)
    ks: list[float] = []
    exact, notes = True, cast(tuple[str, ...], ())
    for d in ds:
        k, ex, notes = th.kappa_at(mechanism, definition, float(d))
        ks.append(float(k))
        exact = exact and ex
    k_arr = np.asarray(ks)
    if kappas is None:
        finite = k_arr[np.isfinite(k_arr)]
        top = 1.25 * float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        kg = np.linspace(0.0, top, 101)
    else:
        kg = _grid("kappas", kappas, None)
    dk = np.asarray([th.delta_at(mechanism, definition, float(k)) for k in kg])
    return Profile(
        deltas=ds,
        kappas=k_arr,
        kappa_grid=kg,
        delta_of_kappa=dk,
        basis=th.basis_for(mechanism, definition),
        exact=exact,
        notes=tuple(notes),
    )
