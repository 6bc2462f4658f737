r"""The Sender's choice for a count table: the suppression threshold (eq. 5, Bon et al. 2026).

Against a Receiver model (the small-cell class or a Poisson / negative-binomial model), Prop 8
certifies suppression of every cell below h with :math:`\kappa(h) = -\log\alpha(h)`,
non-increasing in h, while the utility loss — the number of suppressed cells (``"count"``) or
their total count (``"total"``) — is non-decreasing in h. So the best threshold is the
smallest h meeting the target (:func:`persuasive.release.calibrate.calibrate_threshold`): the
search is exact. Noise on counts (geometric, Laplace) is not certified against these classes
by this library and is listed as such; publishing the table unsuppressed is certified only
when κ(h = R_MIN) already meets the target (it never does: a count below h is then published).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from persuasive import _validation as v
from persuasive.choose.frontier import Candidate, Choice, best_of, not_certified, withholding
from persuasive.classes.receivers import R_MIN, Receiver
from persuasive.errors import ValidationError

__all__ = ["OBJECTIVES", "choose_table"]

#: What the loss counts: the cells suppressed, or the people in them.
OBJECTIVES = ("count", "total")
#: The frontier runs from R_MIN to the best h plus this many thresholds.
FRONTIER_EXTRA = 10


def choose_table(
    frame: Any,
    *,
    keys: str | list[str] | tuple[str, ...],
    count: str,
    receiver: Receiver,
    target_kappa: float,
    objective: str = "count",
) -> Choice:
    r"""The suppression threshold of least loss whose Prop 8 certificate meets κ ≤ target.

    .. math:: h^\star = \min\{h : -\log\alpha(h) \le \kappa\},\qquad
              \text{loss}(h) = \#\{i : x_i < h\} \ \text{or}\ \textstyle\sum_{x_i < h} x_i .

    Parameters
    ----------
    frame : path or frame
        One row per cell (read and checked as :func:`persuasive.release.tables.read_cells`).
    keys, count : column names
    receiver : Receiver
        The Receiver model (:mod:`persuasive.classes.receivers`).
    target_kappa : float
    objective : {"count", "total"}

    Returns
    -------
    Choice

    Examples
    --------
    >>> import polars as pl
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> df = pl.DataFrame({"k": list("abcdef"), "n": [1, 2, 3, 5, 8, 40]})
    >>> c = choose_table(df, keys="k", count="n", receiver=PoissonReceiver(1, 10),
    ...                  target_kappa=3.0)
    >>> c.best.family, int(c.best.parameter), c.best.loss
    ('suppression', 6, 4.0)
    """
    from persuasive import _domains as dm
    from persuasive.release.calibrate import calibrate_threshold
    from persuasive.release.tables import read_cells

    ks = (keys,) if isinstance(keys, str) else tuple(keys)
    target = dm.check("target_kappa", target_kappa)
    obj = v.choice("objective", objective, OBJECTIVES)
    counts = read_cells(frame, ks, count).get_column(count).to_numpy()
    ordered = np.sort(counts)
    running = np.concatenate([[0], np.cumsum(ordered)])

    def loss(h: int) -> float:
        below = int(np.searchsorted(ordered, h, side="left"))  # cells with count < h
        return float(below if obj == "count" else running[below])

    utility = "cells suppressed" if obj == "count" else "total count suppressed"
    if not isinstance(receiver, Receiver):
        raise ValidationError(
            "receiver must be a Receiver model (PoissonReceiver, NegativeBinomialReceiver or "
            f"SmallCellReceiver); got {type(receiver).__name__} {receiver!r:.60}"
        )
    try:
        h_star: int | None = calibrate_threshold(receiver, target)
    except ValidationError as exc:  # no threshold reaches the target: said in the reason
        h_star, why = None, str(exc)
    frontier = []
    top = (h_star or R_MIN) + FRONTIER_EXTRA
    for h in range(R_MIN, top + 1):
        k = float(receiver.kappa(h))
        frontier.append(Candidate("suppression", float(h), k, 0.0, loss(h), k <= target, ""))
    if h_star is None:
        supp = Candidate("suppression", None, math.inf, 0.0, math.inf, False, why)
    else:
        k = float(receiver.kappa(h_star))
        supp = Candidate(
            "suppression", float(h_star), k, 0.0, loss(h_star), True,
            "Prop 8 (Bon et al. 2026): the smallest h with -log alpha(h) <= the target; the "
            "loss grows with h, so it is the best threshold",
        )  # fmt: skip
    noise = not_certified(
        "noise",
        "noise on counts (geometric, Laplace) is not certified against this Receiver model by "
        "this library",
    )
    withhold = withholding(float(counts.size if obj == "count" else counts.sum()))
    candidates = (supp, noise, withhold)
    best = best_of(candidates)  # on a tie of loss, a release beats withholding
    from persuasive.report.words import receiver_words

    setting = (
        ("Receivers", receiver_words(receiver.describe(), None)),
        ("table", f"{counts.size} cells, total count {int(counts.sum())}"),
        ("target", f"κ <= {target:g}"),
        ("loss", utility),
    )
    return Choice(
        best, candidates, tuple(frontier), target, 0.0, utility, True,
        ("one-parameter and monotone: the smallest threshold meeting the target is the best",),
        setting,
    )  # fmt: skip
