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
from collections.abc import Sequence
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
        ax.plot([], [], " ", label=f"{int((~finite).sum())} values with no guarantee (κ = ∞)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("κ (nats)")
    ax.set_title("Calibration: the guarantee against the design parameter")
    ax.legend(loc="best", fontsize=8)
    return _png(fig)


def loss_histogram(losses: Sequence[float] | np.ndarray, *, kappa: float | None = None) -> bytes:
    """Histogram of the per-cell relative loss under the worst prior (log-scale counts).

    Parameters
    ----------
    losses : array-like of float
        One loss per cell (nats); missing values are dropped.
    kappa : float, optional
        The certified κ, drawn as a vertical line (no cell can exceed it).

    Returns
    -------
    bytes
        A PNG image.
    """
    values = np.asarray(losses, dtype=float)
    values = values[np.isfinite(values)]
    fig, ax = _figure()
    if values.size:
        lo, hi = float(values.min()), float(values.max())
        if kappa is not None and math.isfinite(kappa):
            hi = max(hi, float(kappa))
        bins = np.linspace(lo, hi + 1e-9 if hi > lo else lo + 1.0, 31)
        ax.hist(values, bins=bins, color=_BLUE, edgecolor="white", log=True)
        ax.set_ylim(bottom=0.5)  # a bar of one cell stays visible on the log scale
    else:
        ax.text(0.5, 0.5, "no cells", ha="center", va="center", transform=ax.transAxes)
    if kappa is not None and math.isfinite(kappa):
        ax.axvline(float(kappa), color=_ORANGE, ls="--", label=f"certified κ = {kappa:.4g}")
        ax.legend(loc="best", fontsize=8)
    ax.set_xlabel("relative loss Δ of the cell under the worst prior (nats)")
    ax.set_ylabel("number of cells (log scale)")
    ax.set_title(f"Per-cell loss distribution ({values.size} cells)")
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
    support = np.arange(q.size)
    below = float(q[:h].sum())
    post = np.where(support < h, q / below if below > 0 else 0.0, 0.0)
    fig, ax = _figure()
    width = 0.4
    ax.bar(support - width / 2, q, width, color=_BLUE, label="prior Q (worst in the class)")
    ax.bar(support + width / 2, post, width, color=_ORANGE, label=f"posterior Q(· | X < {h})")
    ax.axvline(h - 0.5, color=_GREY, ls=":", label=f"threshold h = {h}")
    if count is not None:
        ax.axvline(float(count), color="black", lw=0.8, label=f"true count {count}")
    gain = -math.log(below) if below > 0 else math.inf
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("cell count")
    ax.set_ylabel("probability")
    where = f" {cell}" if cell else ""
    ax.set_title(
        f"Worst cell{where}\nprior mass below h: Q(X < {h}) = {below:.4g}; "
        f"log-score gain −log Q(X < {h}) = {gain:.4g} nats",
        fontsize=10,
    )
    ax.legend(loc="best", fontsize=8)
    return _png(fig)


def gaussian_prior_posterior_plot(kappa: float, r1: float, r2: float) -> bytes:
    r"""Prior :math:`N(0,1)` and a posterior attaining κ for one standardised individual.

    The posterior :math:`N(z, s^2)` is centred on the truth :math:`z`, with κ split between the
    squared-error and log-variance terms of the Dawid–Sebastiani score in the proportion
    :math:`r_1 : \log r_2`, so that :math:`z^2 + \log(1/s^2) = \kappa`.

    Parameters
    ----------
    kappa : float
        The certified κ (finite, > 0).
    r1, r2 : float
        The radii of the Gaussian prior class 𝒢^r.

    Returns
    -------
    bytes
        A PNG image.
    """
    share = r1 / (r1 + math.log(r2)) if r1 + math.log(r2) > 0 else 1.0
    z = math.sqrt(max(kappa * share, 0.0))
    s = math.exp(-0.5 * kappa * (1.0 - share))
    grid = np.linspace(-4.0, max(4.0, z + 4 * s), 600)

    def density(m: float, sd: float) -> np.ndarray:
        out: np.ndarray = np.exp(-0.5 * ((grid - m) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
        return out

    fig, ax = _figure()
    ax.plot(grid, density(0.0, 1.0), color=_BLUE, label="prior N(0, 1)")
    ax.plot(grid, density(z, s), color=_ORANGE, label=f"posterior N({z:.3g}, {s:.3g}²)")
    ax.axvline(z, color="black", lw=0.8, label=f"true value z = {z:.3g}")
    ax.set_xlabel("standardised value of one individual")
    ax.set_ylabel("density")
    ax.set_title(f"A Receiver attaining κ = {kappa:.4g} (illustration)")
    ax.legend(loc="best", fontsize=8)
    return _png(fig)
