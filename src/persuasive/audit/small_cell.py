r"""Search audit of cell suppression against the small-cell class (Prop 8, Bon et al. 2026).

With the small-cell log score :math:`L_i^r(Q, x) = -\log q_i(x_i)` for :math:`x_i < r` and 0
otherwise ([RECON, docs/math.md §9]) and independent cells, the loss of one cell under
:math:`M^h` is

.. math::

    \Delta_i = \begin{cases}
      -\log Q(X_i < h) & x_i < \min(h, r) \text{ (suppressed)}\\
      -\log q_i(x_i) & h \le x_i < r \text{ (released small cell)}\\
      0 & \text{otherwise,}
    \end{cases}

and :math:`\Delta_i = 0` when :math:`q_i(x_i) = 0` (∞ − ∞ = 0). The search enumerates cell
priors of the class :math:`\mathcal C^{h',\alpha}` (three-atom priors with masses from a grid
including α and tiny masses, boundary priors, Poisson and geometric laws) and every small cell
value, then rebuilds the best witness and evaluates it with :func:`persuasive.relative_loss`.
For :math:`h \ge r` and :math:`h = h'` the supremum :math:`-\log\alpha` is attained by a
boundary prior with :math:`Q(X < h) = \alpha`.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from persuasive import _tolerances as tol
from persuasive.audit.core import finish
from persuasive.classes import SmallCellClass
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.loss import relative_loss
from persuasive.mechanisms import CellSuppression
from persuasive.priors import IndependentCellsPrior
from persuasive.results import Audit, Witness


def cell_losses(pmfs: NDArray[np.float64], h: int, r: int) -> NDArray[np.float64]:
    r"""Per-cell loss :math:`\Delta(v)` for a batch of cell pmfs (B, V) at every value v < V.

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.audit.small_cell import cell_losses
    >>> from scipy import stats
    >>> p = stats.poisson(4).pmf(np.arange(60))[None, :]
    >>> round(float(cell_losses(p, 3, 3).max()), 10)  # docs/math.md §9, Poisson(4), h = 3
    1.4350506425
    """
    v = np.arange(pmfs.shape[1])
    below = pmfs[:, :h].sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        supp = np.broadcast_to(-np.log(below), pmfs.shape)
        rel = -np.log(pmfs)
    out = np.where(v < h, supp, rel)
    return np.asarray(np.where((v < r) & (pmfs > 0), out, 0.0))


def candidate_pmfs(h_class: int, alpha: float, size: int) -> NDArray[np.float64]:
    """Cell priors of 𝒞^{h,α} on {0, …, size − 1}: three-atom priors and standard laws."""
    masses = sorted({alpha, 1.0, *np.logspace(np.log10(tol.TWO_POINT_Q_MIN), -1, 12)})
    rows = []
    top = size - 1
    for a, v, u in itertools.product(masses, range(top), range(top)):
        for b in {0.0, alpha, max(alpha - a, 0.0)}:
            if a + b > 1.0:
                continue
            p = np.zeros(size)
            p[v] += a
            p[u] += b
            p[top] += 1.0 - a - b
            if p[:h_class].sum() >= alpha:
                rows.append(p)
    ks = np.arange(size)
    laws = [stats.poisson(lam) for lam in np.linspace(0.25, 3.0 * h_class, 24)]
    laws += [stats.geom(pp, loc=-1) for pp in np.linspace(0.02, 0.98, 24)]
    for law in laws:
        p = law.pmf(ks)
        p[top] += 1.0 - p.sum()  # lump the tail at the top value (>= h and >= r: loss 0)
        if p[:h_class].sum() >= alpha:
            rows.append(p)
    return np.array(rows)


def _filler(cls: SmallCellClass, xs: NDArray[np.float64]) -> NDArray[np.float64]:
    """A full-support member cell prior for the non-witness cells (their loss is irrelevant)."""
    top = int(max(cls.h, xs.max())) + 2
    p = np.zeros(top)
    low = max(cls.alpha, 0.5)
    p[: cls.h] = low / cls.h
    p[cls.h :] = (1.0 - low) / (top - cls.h)
    return p


def small_cell_audit(mech: CellSuppression, definition: Any, x: Any) -> Audit:
    r"""Search audit of :class:`~persuasive.mechanisms.CellSuppression` under Prop 8.

    Examples
    --------
    >>> import persuasive as pp
    >>> from persuasive.scores.smallcell import SmallCellLogScore
    >>> d = pp.PersuasivePrivacy(SmallCellLogScore(r=3), pp.SmallCellClass(3, 0.2), 2.0)
    >>> round(pp.audit(pp.CellSuppression(3), d).kappa, 10)  # -log 0.2
    1.6094379124
    """
    cls: SmallCellClass = definition.priors
    rs = set()
    for s in definition.scores:
        if type(s).__name__ != "SmallCellLogScore":
            raise UnsupportedCombinationError(
                f"CellSuppression x SmallCellClass audits need SmallCellLogScore scores; got "
                f"{type(s).__name__}"
            )
        rs.add(int(s.r))
    n = 1 if x is None else int(np.atleast_1d(np.asarray(x)).shape[0])
    best, best_w, evals = -np.inf, None, 0
    for score in definition.scores:
        r = int(score.r)
        size = max(mech.h, cls.h, r) + 2
        pmfs = candidate_pmfs(cls.h, cls.alpha, size)
        losses = cell_losses(pmfs, mech.h, r)
        evals += losses.size
        k, val = np.unravel_index(int(np.argmax(losses)), losses.shape)
        cell = pmfs[k]
        i = 0 if getattr(score, "i", None) is None else int(score.i)
        if i >= n:
            raise ValidationError(f"score cell index i = {i} needs x with more than {i} cells")
        xs = np.full(n, float(val)) if x is None else np.asarray(x, dtype=np.float64).copy()
        xs[i] = float(val)
        prior = IndependentCellsPrior([cell if j == i else _filler(cls, xs) for j in range(n)])
        if not cls.contains(prior, xs):  # pragma: no cover - candidates are filtered
            continue
        loss = relative_loss(score, prior, mech, xs)
        if loss > best:
            best, best_w = loss, Witness(score, xs, prior, mech.apply(xs))
    if best_w is None:  # pragma: no cover
        raise ValidationError("no candidate prior of the class was found")
    notes: tuple[str, ...] = (
        f"search over {evals} (cell prior, value) pairs; [RECON, docs/math.md §9] score L_i^r",
    )
    if mech.h < max(rs) or mech.h < cls.h:
        notes += (
            "h below r (or below the class threshold): the loss grows without bound as "
            "the prior mass at the witness value goes to 0",
        )
    return finish(definition, best, best_w, "optimisation", evaluations=evals, notes=notes)
