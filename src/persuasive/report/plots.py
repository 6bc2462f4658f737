r"""The report's figures, as PNG bytes (matplotlib, Agg backend, no display).

* :func:`calibration_plot` — κ against the Sender's design parameter (the threshold h of a
  table, the noise or the prior radius r1 of a mean), with the target κ if one was asked for.
* :func:`loss_histogram` — the per-cell relative loss under the worst prior, counts on a log
  scale.
* :func:`cell_prior_posterior_plot` — for the worst cell of a table, the Receiver's prior pmf
  and its posterior after suppression, :math:`Q(\cdot \mid X < h)` (Prop 8: the posterior of
  a small count :math:`x` is :math:`q(x)/Q(X<h)`, so the log-score gain is
  :math:`-\log Q(X<h) \le -\log\alpha`).
* :func:`gaussian_prior_posterior_plot` — for a mean, a standardised worst-case individual:
  prior :math:`N(0, 1)` and a posterior :math:`N(z, s^2)` centred on the truth with
  :math:`z^2 + \log(1/s^2) = \kappa` (for the exact mean, Prop 7, :math:`z^2 = r_1` and
  :math:`s^2 = 1/r_2`), an illustration of a Receiver attaining κ.

Every function returns the PNG bytes of a fixed-size figure, saved without a timestamp or
software tag so that the same inputs give the same bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

#: Figure size in inches and resolution: 640 x 400 pixels.
FIGSIZE = (6.4, 4.0)
DPI = 100
_BLUE, _ORANGE, _GREY = "#1f77b4", "#d62728", "#555555"


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    try:
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    finally:
        plt.close(fig)
    return buf.getvalue()


def _figure() -> tuple[Figure, Any]:
    fig, ax = plt.subplots(figsize=FIGSIZE)
    ax.grid(True, alpha=0.3)
    return fig, ax


def calibration_plot(
    xs: Sequence[float],
    kappas: Sequence[float],
    *,
    xlabel: str = "threshold h",
    current: float | None = None,
    target_kappa: float | None = None,
) -> bytes:
    """κ against a design parameter, with the chosen value and the target κ.

    Parameters
    ----------
    xs, kappas : sequence of float
        The design parameter and the κ proven at each value (``inf``: no guarantee, not drawn).
    xlabel : str
        What ``xs`` is.
    current : float, optional
        The parameter value used by the release (a vertical line).
    target_kappa : float, optional
        The κ asked for (a horizontal line).

    Returns
    -------
    bytes
        A PNG image.
    """
    x = np.asarray(xs, dtype=float)
    k = np.asarray(kappas, dtype=float)
    finite = np.isfinite(k)
    fig, ax = _figure()
    ax.plot(x[finite], k[finite], marker="o", ms=3, color=_BLUE, label="proven κ")
    if current is not None:
        ax.axvline(float(current), color=_GREY, ls=":", label=f"released: {current:g}")
    if target_kappa is not None:
        ax.axhline(
            float(target_kappa), color=_ORANGE, ls="--", label=f"target κ = {target_kappa:g}"
        )
    if not finite.all():
        bad = int((~finite).sum())
        what = "value" if bad == 1 else "values"
        ax.plot([], [], " ", label=f"{bad} {what} of the {xlabel} with no guarantee (κ = ∞)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("κ proven (nats)")
    ax.set_title("How κ depends on the choice made", fontsize=11)
    ax.legend(loc="best", fontsize=8)
    return _png(fig)


def loss_histogram(
    losses: Sequence[float] | np.ndarray,
    *,
    kappa: float | None = None,
    labels: Mapping[float, str] | None = None,
) -> bytes:
    """How many cells have each loss under the worst prior: one horizontal bar per distinct
    loss value (rounded to 4 significant digits), labelled with its number of cells, or, beyond
    12 distinct values, the cumulative share of cells against the loss.

    Parameters
    ----------
    losses : array-like of float
        One loss per cell (nats); missing values are dropped.
    kappa : float, optional
        The certified κ, drawn as a vertical line (no cell can exceed it).
    labels : mapping of float to str, optional
        What the cells at a loss value are (``{0.0: "published or not small"}``), keyed by
        the value.

    Returns
    -------
    bytes
        A PNG image.
    """
    values = np.asarray(losses, dtype=float)
    values = values[np.isfinite(values)]
    fig, ax = _figure()
    finite_k = kappa is not None and math.isfinite(kappa)
    distinct, counts = np.unique(
        np.asarray([float(f"{v:.4g}") for v in values]), return_counts=True
    )
    if not values.size:
        ax.text(0.5, 0.5, "no cells", ha="center", va="center", transform=ax.transAxes)
    elif distinct.size <= 12:
        ys = np.arange(distinct.size)
        ax.barh(ys, counts, color=_BLUE, height=0.6)
        names = []
        for v in distinct:
            what = next((t for k, t in (labels or {}).items() if float(f"{k:.4g}") == v), "")
            names.append(f"{v:.4g} nats" + (f"\n{what}" if what else ""))
        ax.set_yticks(ys, names, fontsize=9)
        for y, c in zip(ys, counts, strict=True):
            share = 100 * c / values.size
            ax.text(c, y, f"  {c} ({share:.3g} %)", va="center", fontsize=9)
        ax.set_xlim(0, 1.3 * float(counts.max()))
        ax.set_xlabel("number of cells")
        ax.grid(False, axis="y")
    else:
        order = np.sort(values)
        share = np.arange(1, order.size + 1) / order.size
        ax.step(order, share, where="post", color=_BLUE)
        if finite_k:
            ax.axvline(float(kappa), color=_ORANGE, ls="--", label=f"κ = {kappa:.4g}")  # type: ignore[arg-type]
            ax.legend(loc="lower right", fontsize=9)
        ax.set_xlabel("loss of the cell under the worst prior (nats)")
        ax.set_ylabel("share of cells with at most this loss")
    title = f"Loss per cell under the worst prior\n{values.size} cells"
    ax.set_title(title + (f"; κ = {kappa:.4g} nats" if finite_k else ""), fontsize=11)
    return _png(fig)


def cell_prior_posterior_plot(
    prior_pmf: Sequence[float] | np.ndarray, h: int, *, cell: str = "", count: int | None = None
) -> bytes:
    r"""The worst Receiver's prior on a cell and its posterior after the cell is suppressed.

    Parameters
    ----------
    prior_pmf : array-like of float
        The prior pmf :math:`q(0), q(1), \dots` (at least ``h`` values; the tail beyond the
        last value is ignored).
    h : int
        The suppression threshold: the posterior is :math:`q(x) / Q(X < h)` for :math:`x < h`.
    cell : str
        The cell's label, for the title.
    count : int, optional
        The cell's true count, marked if given.

    Returns
    -------
    bytes
        A PNG image.
    """
    q = np.clip(np.asarray(prior_pmf, dtype=float), 0.0, None)
    below = float(q[:h].sum())
    shown_max = int(min(q.size, max(3 * h, h + 10)))  # the counts around h, not the far tail
    support = np.arange(shown_max)
    qs = q[:shown_max]
    post = np.where(support < h, qs / below if below > 0 else 0.0, 0.0)
    fig, ax = _figure()
    width = 0.4
    ax.bar(support - width / 2, qs, width, color=_BLUE, label="before: the worst prior")
    ax.bar(support + width / 2, post, width, color=_ORANGE, label="after: the cell is suppressed")
    ax.axvline(h - 0.5, color=_GREY, ls=":", label=f"threshold h = {h}")
    if count is not None:
        ax.axvline(float(count), color="black", lw=0.8, label=f"true count {count}")
    gain = -math.log(below) if below > 0 else math.inf
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("count of the cell" + (f" {cell}" if cell else ""))
    ax.set_ylabel("probability")
    factor = f"{1 / below:.2g}" if below > 0 else "∞"
    ax.set_title(
        f"The worst prior puts {100 * below:.3g} % on counts below {h}\n"
        f"once suppressed, each small count becomes {factor} times more probable "
        f"(κ = {gain:.3g} nats)",
        fontsize=10,
    )
    ax.legend(loc="upper right", fontsize=8)
    return _png(fig)


def gaussian_prior_posterior_plot(kappa: float, r1: float, r2: float) -> bytes:
    r"""The Receiver of Prop 7's class that attains κ = r1 + log r2 for the exact mean, for its
    most exposed person, in that person's prior standard units.

    The construction of docs/math.md §8 ("the bound is attained"): the person's value has
    prior :math:`N(0, 1)` and correlation :math:`\rho` with the mean, :math:`\rho^2 = 1 - 1/r_2`;
    the mean is :math:`w = \sqrt{r_1}` prior sds above the prior guess; the true value is
    :math:`z = w/\rho`. Given the mean the posterior is :math:`N(\rho w, 1 - \rho^2)`, and
    :math:`D(\text{prior}, z) - D(\text{posterior}, z) = r_1 + \log r_2`: the density at the
    true value rises :math:`e^{\kappa/2}`-fold. The picture therefore depends on (r1, r2).

    Parameters
    ----------
    kappa : float
        The certified κ (finite, > 0): r1 + log r2 for the exact mean.
    r1, r2 : float
        The Receivers' bounds (r1 > 0, r2 > 1).

    Returns
    -------
    bytes
        A PNG image.
    """
    rho = math.sqrt(max(1.0 - 1.0 / r2, 1e-12))
    w = math.sqrt(r1)
    z = w / rho
    m, s = rho * w, math.sqrt(1.0 / r2)
    grid = np.linspace(min(-4.0, m - 4 * s), max(4.0, z + 1.5, m + 4 * s), 600)

    def density(mu: float, sd: float) -> np.ndarray:
        out: np.ndarray = np.exp(-0.5 * ((grid - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
        return out

    def at(mu: float, sd: float) -> float:
        return math.exp(-0.5 * ((z - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))

    fig, ax = _figure()
    ax.plot(grid, density(0.0, 1.0), color=_BLUE, label="before: the prior")
    ax.plot(grid, density(m, s), color=_ORANGE, label="after: given the published mean")
    ax.axvline(z, color="black", lw=0.8, label=f"the person's true value ({z:.3g})")
    ax.plot([z, z], [at(0.0, 1.0), at(m, s)], "o", color="black", ms=4)
    ax.set_xlabel("the person's value, in prior standard deviations from the prior guess")
    ax.set_ylabel("probability density")
    ax.set_title(
        f"The worst Receiver for r1 = {r1:g}, r2 = {r2:g}\nthe density at the true value rises "
        f"{at(m, s) / at(0.0, 1.0):.2g}-fold (κ = {kappa:.4g} nats)",
        fontsize=10,
    )
    ax.legend(loc="upper left", fontsize=8)
    return _png(fig)
