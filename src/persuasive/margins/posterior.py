r"""Exact posterior of the suppressed cells of a table with published margins (Bon et al. 2026).

Under an independent cell prior :math:`Q = \bigotimes_i q_i` the Receiver's posterior given the
released cells, the suppression pattern and the published margins is

.. math:: \Pi(y) \propto \prod_{i \in U} q_i(y_i)\,\mathbb 1\{\ell_i \le y_i \le u_i\}\,
          \mathbb 1\{A y = b\},

(released cells are known exactly; a primary suppressed cell is known to be < h, Prop 8). The
indicator factorises over the connected components of the cell–constraint graph, so the
components are independent a posteriori and each is computed on its own: exactly by the frontier
DP of :mod:`persuasive.margins.dp` when its largest message fits ``max_states``, else by the
chain of :mod:`persuasive.margins.mcmc` (an estimate, flagged ``exact = False``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive._progress import task
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.margins import dp, mcmc
from persuasive.margins.constraints import UNBOUNDED, ConstraintSystem, constraint_system
from persuasive.margins.parallel import map_tasks
from persuasive.margins.table import MarginTable
from persuasive.priors.cells import IndependentCellsPrior, _Points, _Table

#: Largest DP message (number of partial-sum states) for an exact component.
MAX_DP_STATES: int = 2**18

#: Default MCMC length (recorded sweeps summed over the chains) and burn-in (per chain).
MCMC_SWEEPS: int = 4000
MCMC_BURN_IN: int = 500

#: Cap on the support width of a secondary cell that is in no published margin.
MAX_WIDTH: int = 1 << 16

#: Most entries (suppressed cells × the widest support) of the posterior's grid of values,
#: 2**27 float64 (1 GiB); a larger grid is refused, naming the cell with the widest support.
MAX_GRID: int = 1 << 27


def cell_log_grid(
    prior: IndependentCellsPrior, cells: NDArray[np.intp], lo: NDArray[np.int64], width: int
) -> NDArray[np.float64]:
    """``out[j, w] = log q_{cells[j]}(lo[j] + w)``, one numpy call per prior group."""
    out = np.full((cells.size, width), -np.inf)
    where = np.full(prior.n, -1, dtype=np.intp)
    where[cells] = np.arange(cells.size)
    for g in prior.groups:
        sel = where[g.idx]
        keep = sel >= 0
        if not keep.any():
            continue
        rows = sel[keep]
        vals = lo[rows][:, None] + np.arange(width)[None, :]
        if isinstance(g, _Table):
            pmf = g.pmf[keep]
            col = np.minimum(vals, pmf.shape[1] - 1)
            with np.errstate(divide="ignore"):
                lp = np.log(np.take_along_axis(pmf, col, axis=1))
            out[rows] = np.where(vals < pmf.shape[1], lp, -np.inf)
        elif isinstance(g, _Points):
            out[rows] = np.where(vals == g.value[keep][:, None], 0.0, -np.inf)
        else:
            args = [a[keep][:, None] for a in g.args]
            kwds = {k: a[keep][:, None] for k, a in g.kwds.items()}
            out[rows] = g.dist.logpmf(vals, *args, **kwds)
    return out


@dataclass(frozen=True, eq=False)
class MarginPosterior:
    """Posterior marginals of the suppressed cells (see :func:`posterior_marginals`)."""

    cells: NDArray[np.intp]
    lo: NDArray[np.int64]
    log_pmf: NDArray[np.float64]
    component: NDArray[np.intp]
    methods: tuple[str, ...]
    mc_error: NDArray[np.float64]
    log_evidence: NDArray[np.float64]

    @property
    def exact(self) -> bool:
        """True when every component was computed exactly."""
        return all(m == "exact-dp" for m in self.methods)

    @property
    def method(self) -> str:
        return "exact-dp" if self.exact else "mcmc" if set(self.methods) == {"mcmc"} else "mixed"

    @property
    def disclosed(self) -> NDArray[np.bool_]:
        """Cells whose posterior puts mass 1 (to ``1 - PROB_SUM_ATOL``) on one value."""
        return np.exp(self.log_pmf.max(axis=1)) >= 1.0 - tol.PROB_SUM_ATOL

    def pmf(self, j: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """(values, probabilities) of the j-th suppressed cell (positive mass only)."""
        p = np.exp(self.log_pmf[j])
        nz = np.flatnonzero(p > 0)
        return self.lo[j] + nz, p[nz]

    def log_prob_of(self, values: NDArray[Any]) -> NDArray[np.float64]:
        """``log Π(y_j = values[j])`` for every suppressed cell j (-inf off the support)."""
        idx = np.asarray(values, dtype=np.int64) - self.lo
        ok = (idx >= 0) & (idx < self.log_pmf.shape[1])
        got = self.log_pmf[np.arange(self.cells.size), np.clip(idx, 0, self.log_pmf.shape[1] - 1)]
        return np.where(ok, got, -np.inf)


def _widths(cs: ConstraintSystem, prior: IndependentCellsPrior) -> NDArray[np.int64]:
    hi = cs.hi.copy()
    free = hi == UNBOUNDED
    if free.any():  # secondary cells in no margin: cut the prior's upper tail at CELL_TAIL
        below = prior.cdf_below
        cut = cs.lo[free] + 64
        while True:
            tail = 1.0 - below(float(cut.max()))[cs.cells[free]]
            if tail.max() <= tol.CELL_TAIL or cut.max() - cs.lo[free].min() >= MAX_WIDTH:
                break
            cut = cut * 2
        hi[free] = cut.max()
    return hi - cs.lo + 1


def _best_order(
    A: Any, bp: NDArray[np.int64], coords: NDArray[np.intp]
) -> tuple[NDArray[np.intp], float]:
    """The candidate cell order with the smallest DP frontier: reverse Cuthill–McKee, and the
    lexicographic orders with each table dimension outermost (row-major, column-major, ...)."""
    cands = [dp.order_cells(A)]
    for a in range(coords.shape[0]):
        keys = [coords[d] for d in range(coords.shape[0]) if d != a][::-1]
        cands.append(np.lexsort([*keys, coords[a]]).astype(np.intp))
    sizes = [dp.frontier_size(A, bp, o) for o in cands]
    best = int(np.argmin(sizes))
    return cands[best], sizes[best]


def _component_dp(piece: tuple[Any, ...]) -> tuple[NDArray[np.float64], float]:
    """The exact DP of one component: ``(log_pmf, log evidence)``
    (:func:`persuasive.margins.dp.component_marginals`)."""
    A, b, lo, logw, order = piece
    return dp.component_marginals(A, b, lo, logw, order)


def posterior_marginals(
    table: MarginTable,
    prior: IndependentCellsPrior,
    *,
    method: str = "auto",
    max_states: int = MAX_DP_STATES,
    n_sweeps: int = MCMC_SWEEPS,
    rng: Any = None,
) -> MarginPosterior:
    r"""Posterior marginals :math:`\Pi(y_i = v)` of every suppressed cell.

    Parameters
    ----------
    table : MarginTable
    prior : IndependentCellsPrior
        Over all ``table.n_cells`` cells in C order.
    method : {"auto", "exact", "mcmc"}
        ``"auto"``: exact DP where the component's frontier has at most ``max_states`` states,
        else MCMC; ``"exact"`` raises :class:`UnsupportedCombinationError` instead of MCMC.

    Examples
    --------
    >>> import numpy as np, persuasive as pp
    >>> from persuasive.margins import MarginTable
    >>> t = MarginTable([[1, 5, 7], [2, 8, 9]], h=3, margins="cols")
    >>> q = pp.IndependentCellsPrior([[1 / 3] * 3] * 6)
    >>> post = posterior_marginals(t, q)
    >>> post.cells.tolist(), post.disclosed.tolist()
    ([0, 3], [False, False])
    >>> np.round(np.exp(post.log_pmf), 3).tolist()   # y0 + y3 = 3 with y < 3
    [[0.0, 0.5, 0.5], [0.0, 0.5, 0.5]]
    """
    if not isinstance(table, MarginTable):
        raise ValidationError(f"table must be a MarginTable; got {type(table).__name__}")
    if not isinstance(prior, IndependentCellsPrior) or prior.n != table.n_cells:
        raise ValidationError(
            f"prior must be an IndependentCellsPrior over the table's {table.n_cells} cells "
            f"(C order); got {prior!r}"
        )
    method = v.choice("method", method, ("auto", "exact", "mcmc"))
    max_states = v.integer("max_states", max_states, low=1)
    rng = np.random.default_rng(rng)
    cs = constraint_system(table)
    if cs.cells.size == 0:
        empty = np.zeros(0, dtype=np.intp)
        return MarginPosterior(
            empty, np.zeros(0, np.int64), np.zeros((0, 1)), empty, (), np.zeros(0), np.zeros(0)
        )
    widths = _widths(cs, prior)
    width = int(widths.max(initial=1))
    if cs.cells.size * width > MAX_GRID:
        wide = int(np.argmax(widths))
        at = tuple(int(i) for i in np.unravel_index(cs.cells[wide], table.shape))
        levels = getattr(table, "levels", None)
        named = (
            str(at)
            if levels is None
            else "("
            + ", ".join(f"{d}={levels[d][i]!r}" for d, i in zip(table.dims, at, strict=True))
            + ")"
        )
        raise UnsupportedCombinationError(
            f"suppressed cell {named} can take {width:,} values given the published totals "
            f"({int(cs.lo[wide])} to {int(cs.lo[wide]) + width - 1}), so the exact posterior of "
            f"the {cs.cells.size:,} suppressed cells needs {cs.cells.size * width:,} grid "
            f"entries, more than MAX_GRID = {MAX_GRID:,}: give a-priori upper bounds on the "
            "large cells (apriori), publish fewer margins, or keep cells with large counts "
            "from being hidden (known)"
        )
    logw = cell_log_grid(prior, cs.cells, cs.lo, width)
    logw[np.arange(width)[None, :] >= widths[:, None]] = -np.inf
    log_pmf = np.full_like(logw, -np.inf)
    err = np.zeros(cs.cells.size)
    methods: list[str] = []
    evid = np.zeros(cs.n_components)
    true = table.counts.ravel()[cs.cells]
    coords = np.array(np.unravel_index(cs.cells, table.shape)).reshape(len(table.shape), -1)
    pieces = []
    for cols in cs.components():
        rows = cs.rows_of(cols)
        A, b = cs.A[rows][:, cols], cs.b[rows]
        order, size = _best_order(A, b - A @ cs.lo[cols], coords[:, cols])
        pieces.append((cols, A, b, order, method != "mcmc" and size <= max_states, size))
    # the exact components' DPs are independent (on Spark's executors under a mapper); with
    # method="exact", only those before the first component too large, as the loop stops there
    first_large = next((c for c, p in enumerate(pieces) if not p[4]), len(pieces))
    upto = first_large if method == "exact" else len(pieces)
    exact = [c for c in range(upto) if pieces[c][4]]
    work = [(pieces[c][1], pieces[c][2], cs.lo[pieces[c][0]], logw[pieces[c][0]], pieces[c][3])
            for c in exact]  # fmt: skip
    solved = dict(zip(exact, map_tasks(_component_dp, work), strict=True))
    with task("margins: posterior of the suppressed cells", total=cs.cells.size) as advance:
        for c, (cols, A, _, _, is_exact, size) in enumerate(pieces):
            if is_exact:
                lp, lz = solved[c]
                if not np.isfinite(lz):
                    raise ValidationError(
                        "prior puts zero mass on every completion of the published table "
                        f"(component of cells {table.suppressed_index[cols].tolist()[:8]}); "
                        "widen its support"
                    )
                log_pmf[cols], evid[c] = lp, lz
                methods.append("exact-dp")
            elif method == "exact":
                raise UnsupportedCombinationError(
                    f"component {c} ({cols.size} cells) needs {size:.3g} DP states > max_states = "
                    f"{max_states}; raise max_states or use method='auto' (MCMC estimate)"
                )
            else:  # in component order here: the chains draw from one generator
                lp, e = mcmc.sample_marginals(
                    A,
                    true[cols],
                    cs.lo[cols],
                    logw[cols],
                    n_sweeps=n_sweeps,
                    burn_in=MCMC_BURN_IN,
                    rng=rng,
                )
                log_pmf[cols], err[cols], evid[c] = lp, e, np.nan
                methods.append("mcmc")
            advance(cols.size)
    return MarginPosterior(cs.cells, cs.lo, log_pmf, cs.labels, tuple(methods), err, evid)
