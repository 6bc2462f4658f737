r"""The Sender's design problem for count tables: the smallest threshold meeting a target κ.

By Prop 8 (Bon et al. 2026) the suppression threshold h certifies
:math:`\kappa(h) = -\log\alpha(h)` against a Receiver model with :math:`\alpha(h) =
\inf_{P} P(X < h)`. Since :math:`\{X < h\} \subseteq \{X < h + 1\}`, α(h) is non-decreasing in h
for every model, hence κ(h) is non-increasing, and

.. math:: h^\star = \min\{h \in \mathbb Z : h \ge \max(R_{\min}, r),\ \kappa(h) \le \kappa^\star\}

is found by an exponential search for a bracket followed by bisection on the integers.
"""

from __future__ import annotations

import math
from typing import Any

from persuasive import _domains as dm
from persuasive import _validation as v
from persuasive.classes.receivers import R_MIN, Receiver
from persuasive.errors import ValidationError


def calibrate_threshold(
    receiver: Receiver, target_kappa: float, r: int | None = None, h_max: int = 10_000
) -> int:
    r"""The smallest integer threshold h whose Prop 8 certificate has κ(h) <= ``target_kappa``.

    .. math:: h^\star = \min\{h \ge \max(R_{\min}, r) : -\log\alpha(h) \le \kappa^\star\}

    Parameters
    ----------
    receiver : Receiver
        The Receiver model giving α(h).
    target_kappa : float
        The target κ* >= 0 (``inf`` accepted: the smallest allowed h).
    r : int, optional
        Score threshold of :math:`L^r`; Prop 8 needs h >= r. Default ``None``: r = h, i.e.
        every count below the threshold is treated as small (the default of
        :func:`~persuasive.release.tables.release_table`), so only h >= R_MIN (= 2, the spec
        format's smallest r) constrains the search.
    h_max : int
        Largest threshold searched.

    Returns
    -------
    int
        h*, with ``receiver.kappa(h*) <= target_kappa`` and ``receiver.kappa(h* - 1) >
        target_kappa`` (unless h* is the smallest allowed threshold).

    Raises
    ------
    ValidationError
        If the target is negative or NaN, or no h <= h_max reaches it.

    Examples
    --------
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> rc = PoissonReceiver(0.0, 4.0)
    >>> h = calibrate_threshold(rc, 0.5)
    >>> h, rc.kappa(h) <= 0.5 < rc.kappa(h - 1)
    (5, True)
    """
    if not isinstance(receiver, Receiver):
        raise ValidationError(f"receiver must be a Receiver model; got {type(receiver).__name__}")
    target = dm.check("target_kappa", target_kappa)
    lo_h = R_MIN if r is None else v.integer("r", r, low=R_MIN)
    top = v.integer("h_max", h_max, low=lo_h)

    def ok(h: int) -> bool:
        k = receiver.kappa(h)
        return not math.isnan(k) and k <= target

    if ok(lo_h):
        return lo_h
    # Exponential search: invariant not ok(lo); find hi with ok(hi).
    lo, step = lo_h, 1
    hi = min(lo + step, top)
    while not ok(hi):
        if hi >= top:
            raise _unreachable(receiver, target, top)
        lo, step = hi, step * 2
        hi = min(lo + step, top)
    # Bisection on integers: not ok(lo), ok(hi).
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _unreachable(receiver: Any, target: float, top: int) -> ValidationError:
    return ValidationError(
        f"target_kappa = {target:g} is not reached by any threshold h <= h_max = {top}: the "
        f"Receiver model {receiver!r} gives kappa(h_max) = {receiver.kappa(top):.6g}; raise "
        "target_kappa or h_max, or state a Receiver model with more mass on small counts"
    )
