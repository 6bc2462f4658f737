r"""Prop 8 (Bon et al. 2026): private cell suppression.

With the small-cell score :math:`L_i^r(Q, x) = -\log q_i(x_i)` for :math:`x_i < r` and 0 otherwise
(**[RECON, docs/math.md §9]**: the displayed formula is missing from the text), the class
:math:`\mathcal C^{h_C,\alpha}_n` of independent cell priors with
:math:`Q(X_i < h_C) \ge \alpha`, and the release :math:`M^{h_M}` suppressing every cell below
:math:`h_M`:

.. math:: h_M \ge r \text{ and } h_M \ge h_C \implies
          M^{h_M} \text{ is } (\mathcal L^r_n, \mathcal C^{h_C,\alpha}_n, -\log\alpha, 0)\text{-PP}.

Per cell (docs/math.md §9): a released cell has posterior :math:`\delta_{x_i}` and loss 0; a
suppressed cell :math:`x_i < r` has loss :math:`-\log Q(X_i < h_M) \le -\log\alpha`, attained
when :math:`Q(X_i < h_M) = \alpha` (sharp). Otherwise there is no guarantee: if
:math:`h_M < r` a released cell :math:`h_M \le x_i < r` has loss :math:`-\log q_i(x_i)`, and if
:math:`h_M < h_C` the mass :math:`Q(X_i < h_M)` can be arbitrarily small; both are unbounded
over the class (κ = ∞), except that with α = 1 and :math:`h_M \ge h_C` every loss is 0.
"""

from __future__ import annotations

import math
from typing import Any

from persuasive._rounding import ceil_log_sum
from persuasive.certify.registry import Bound, Theorem, score_names
from persuasive.classes import SmallCellClass
from persuasive.definitions import PersuasivePrivacy
from persuasive.mechanisms import CellSuppression, Mechanism


def _is_small_cell(score: Any) -> bool:
    # detected by name so this module imports before persuasive.scores.smallcell exists
    return type(score).__name__ == "SmallCellLogScore"


class Prop8(Theorem):
    """κ = −log α when h_M ≥ r and h_M ≥ h_C, else ∞ (Prop 8, Bon et al. 2026).

    Examples
    --------
    >>> import persuasive as pp
    >>> from types import SimpleNamespace
    >>> d = SimpleNamespace(scores=(), priors=pp.SmallCellClass(3, 0.2))
    >>> round(Prop8()._bound(pp.CellSuppression(3), d)[0], 10)
    1.6094379124
    """

    name = "prop8"
    basis = "Prop 8 (Bon et al. 2026)"

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        if not isinstance(definition, PersuasivePrivacy):
            return "needs a PersuasivePrivacy (tail) definition"
        if not all(_is_small_cell(s) for s in definition.scores):
            return f"needs scores = SmallCellLogScore only; got {score_names(definition.scores)}"
        if not isinstance(definition.priors, SmallCellClass):
            return f"needs priors = SmallCellClass; got {type(definition.priors).__name__}"
        if not isinstance(mechanism, CellSuppression):
            return f"needs mechanism = CellSuppression; got {type(mechanism).__name__}"
        return None

    def _bound(self, mechanism: Any, definition: Any) -> tuple[float, tuple[str, ...]]:
        h_m = int(mechanism.h)
        h_c, alpha = int(definition.priors.h), float(definition.priors.alpha)
        r_max = max((int(s.r) for s in definition.scores), default=0)
        if h_m >= h_c and alpha >= 1.0:
            return 0.0, (
                "alpha = 1 and h_M >= h_C: every cell is below h_C a priori, so "
                "suppression reveals nothing and released cells have prior mass 0",
            )
        if h_m < h_c:
            return math.inf, (
                f"no guarantee: h_M = {h_m} < h_C = {h_c}, so a prior in the class "
                "can put arbitrarily little mass below h_M and a suppressed cell "
                "then has unbounded loss -log Q(X_i < h_M) (docs/math.md §9)",
            )
        if h_m < r_max:
            return math.inf, (
                f"no guarantee: h_M = {h_m} < r = {r_max}, so a released cell "
                f"with {h_m} <= x_i < {r_max} has loss -log q_i(x_i), unbounded "
                "over the class (docs/math.md §9)",
            )
        return ceil_log_sum(0.0, alpha, -1), (  # exact, rounded up (persuasive._rounding)
            "sharp: a Receiver whose prior puts exactly α on counts below h attains κ "
            "(docs/math.md §9, erratum 6)",
            "The paper does not print the small-cell score; the library reconstructs it as the "
            "log score of the counts below r, which is not a proper scoring rule "
            "(a reconstruction: docs/math.md §9, erratum 2)",
        )

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        k, notes = self._bound(mechanism, definition)
        return k, True, notes

    def delta_at(self, mechanism: Mechanism, definition: Any, kappa: float) -> float:
        k, _ = self._bound(mechanism, definition)
        return 0.0 if kappa >= k else 1.0
