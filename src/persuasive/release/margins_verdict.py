"""The one outcome of a margins release (:class:`Verdict`): certified or refused, and every
count the summary, the printed table, the report, the custodian's files and the certificate
show; :func:`check_certificate` checks the written certificate against it.

Split from :mod:`persuasive.release.margins_output` (the custodian's files and the summary).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from persuasive.release import margins_plan as mplan

if TYPE_CHECKING:
    from persuasive.release.margins import MarginRelease

__all__ = ["Verdict", "check_certificate", "integer_intervals", "verdict"]


def integer_intervals(lower: Any, upper: Any) -> tuple[np.ndarray, np.ndarray]:
    """The attacker's LP bounds as integer intervals: every completion is an integer table, so
    its value lies in ``[ceil(lower), floor(upper)]`` (with a solver tolerance of 1e-6); no
    negative zero, and ``lower <= upper`` always (a bound rounded past the other is pinned)."""
    lo = np.asarray(lower, dtype=float)
    up = np.asarray(upper, dtype=float)
    with np.errstate(invalid="ignore"):
        lo_i = np.ceil(lo - 1e-6)
        up_i = np.floor(up + 1e-6)
        up_i = np.where(up_i < lo_i, lo_i, up_i)
    return lo_i + 0.0, up_i + 0.0  # -0.0 + 0.0 == +0.0


def _cost(rel: MarginRelease, secondary: np.ndarray) -> float:
    if rel.objective == "count":
        return float(np.count_nonzero(secondary))
    return float(rel.table.counts[secondary].sum())


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


@dataclass(frozen=True, eq=False)
class Verdict:
    """The one outcome of a margins release: every count the summary, the printed table, the
    report and the custodian's comparison show comes from here, and the certificate written
    from the publication is checked against it (:func:`check_certificate`).

    With a target κ the release is *certified* when every suppressed cell's proven bound over
    every table consistent with the publication (``kappa_published``: exact where the component
    fits the exact posterior, else the proven switching bound of ``docs/margins_bounds.md``, at
    worst the full-disclosure bound, the posterior being at most 1) is at most the target;
    otherwise it is *refused*: nothing is published, and
    ``reasons`` and ``remedies`` say why and what would make a certified release possible.
    Without a target nothing is refused (the certificate states the κ reached); a cell fails
    when it is disclosed below r or not computed exactly.

    Attributes
    ----------
    target_kappa, bound : float or None, str
    n_cells, n_suppressed, n_primary, n_secondary : int
    n_exact : int
        Suppressed cells in components computed exactly (``worst.computed_exactly``; the
        certificate's ``exact`` is ``n_exact == n_suppressed``).
    n_certified : int
        Suppressed cells proven within the target (with a target), else ``n_exact``.
    n_by_bound, n_switching : int
        Of the cells not computed exactly: those proven within the target by their bound, and
        those whose κ published is the switching bound (below the full-disclosure bound).
    n_disclosed, n_disclosed_exact : int
        Suppressed cells recovered exactly from the publication, proven: by the exact posterior
        (``n_disclosed_exact``, the cells the certificate states ``disclosed``) or, in a
        component too large for it, by the attacker's LP interval being one value.
    n_failing : int
        Suppressed cells that fail (``failing``, table shape).
    kappa_published, kappa_table : float
        The certificate's κ (the largest proven bound) and the largest κ at the true table.
    kappa_estimate : float or None
        The Markov chain's largest estimate where a component is too large (not a proof).
    lower_bound, gap : float or None
        The planner's proven lower bound on the cost of any pattern meeting κ, and the gap.
    optimal : bool or None
        Whether the pattern is proven optimal (None: not known; the gap says how far it may be):
        by the MIP (``mip == "optimal"``), or its cost at a proven lower bound.
    method, mip_time_limit : str, float or None
        The method asked for (``"greedy"``, ``"auto"``, ``"mip"``) and the MIP's time limit.
    pattern_by : str or None
        What produced the pattern: ``"mip"`` or ``"greedy"`` (None without a plan).
    mip : str or None
        The MIP's outcome (:class:`persuasive.margins.optimal.MipOutcome` ``status``),
        ``"too_large"`` when ``auto`` skipped it, None when not asked for or without a plan.
    public_lower_bound : float or None
        The lower bound on the number of secondary cells recomputed from the publication alone
        (:func:`persuasive.margins.public_bound.publication_lower_bound`; what the certificate
        states); None without a target.
    released, holds, ok : bool
        Anything published; whether the certificate claims a guarantee that holds; exit 0.
    failing, disclosed, cell_certified : bool ndarray
        Per cell: fails; disclosed (proven); the certificate's ``certified`` (computed
        exactly, or with a target κ published proven within it: with a written certificate
        these are the ``n_certified`` cells).
    reasons, remedies : tuple of str
        Why it fails, and what would make a certified release possible.
    """

    target_kappa: float | None
    bound: str
    n_cells: int
    n_suppressed: int
    n_primary: int
    n_secondary: int
    n_exact: int
    n_certified: int
    n_by_bound: int
    n_switching: int
    n_disclosed: int
    n_disclosed_exact: int
    n_failing: int
    kappa_published: float
    kappa_table: float
    kappa_estimate: float | None
    objective: str
    cost: float
    lower_bound: float | None
    gap: float | None
    optimal: bool | None
    released: bool
    holds: bool
    failing: np.ndarray
    disclosed: np.ndarray
    cell_certified: np.ndarray
    reasons: tuple[str, ...] = ()
    remedies: tuple[str, ...] = ()
    method: str = "greedy"
    mip_time_limit: float | None = None
    pattern_by: str | None = None
    mip: str | None = None
    public_lower_bound: float | None = None

    @property
    def relative_gap(self) -> float | None:
        """``gap / cost`` (0 at no cost): the share of the cost the optimum may save."""
        return mplan.relative_gap(self)

    def method_words(self) -> str | None:
        """Which method produced the pattern and what the MIP reached, in words."""
        return mplan.method_words(self)

    def plan_summary(self) -> dict[str, Any]:
        """The planner's outcome for ``MarginRelease.summary()`` (and the CLI's JSON)."""
        return mplan.plan_summary(self)

    def plan_claim(self) -> dict[str, Any] | None:
        """The certificate's ``claim.plan`` (None without a plan)."""
        return mplan.plan_claim(self)

    @property
    def ok(self) -> bool:
        """Released, the certificate holds and no suppressed cell fails (exit status 0)."""
        return self.released and self.holds and self.n_failing == 0

    @property
    def refused(self) -> bool:
        return not self.released

    def gap_words(self) -> str | None:
        """The secondary cells against the proven lower bound, in words (None without a plan)."""
        if self.lower_bound is None or self.gap is None:
            return None
        what = "secondary cells" if self.objective == "count" else "total of the secondary cells"
        tail = (
            "proven optimal"
            if self.optimal
            else "optimal: not known"
            if self.gap > 0
            else "at the lower bound: optimal"
        )
        return (
            f"{what} {_num(self.cost)}, proven lower bound {_num(self.lower_bound)}, gap "
            f"{_num(self.gap)} ({self.relative_gap or 0.0:.0%} of the cost; {tail}); pattern by "
            f"{self.method_words()}"
        )

    def statement(self) -> str:
        """The outcome in one paragraph."""
        if self.refused:
            return (
                f"no suppression pattern found is certified at target κ = "
                f"{_num(self.target_kappa or 0.0)}: "
                + "; ".join(self.reasons)
                + ". What would make a certified release possible: "
                + "; ".join(self.remedies)
            )
        if self.target_kappa is not None:
            return (
                f"certified: every one of the {self.n_suppressed} suppressed cells has κ <= "
                f"{_num(self.target_kappa)}, proven (κ published {_num(self.kappa_published)})"
            )
        head = f"no target κ: κ published {_num(self.kappa_published)}"
        return head + ("" if self.ok else "; " + "; ".join(self.reasons))

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in _KEYS}
        return {**out, "ok": self.ok, "reasons": list(self.reasons),
                "remedies": list(self.remedies)}  # fmt: skip


#: The fields of :meth:`Verdict.to_dict` (then ``ok``, ``reasons``, ``remedies``).
_KEYS = (
    "target_kappa bound n_cells n_suppressed n_primary n_secondary n_exact n_certified "
    "n_by_bound n_switching n_disclosed n_disclosed_exact n_failing kappa_published kappa_table "
    "kappa_estimate objective cost lower_bound gap optimal released holds method mip_time_limit "
    "pattern_by mip public_lower_bound relative_gap"
).split()


def verdict(rel: MarginRelease) -> Verdict:
    """The outcome of ``rel`` (:class:`Verdict`): computed once, from the final audit."""
    t, w = rel.table, rel.worst
    sup, x = t.suppressed, t.counts
    exact = w.computed_exactly  # a bound (the switching bound, or B) stands in elsewhere
    pub = w.kappa_published
    pinned = np.zeros(t.n_cells, dtype=bool)
    lo, up = integer_intervals(rel.intervals.lower, rel.intervals.upper)
    pinned[rel.intervals.cells] = lo == up
    disc_exact = sup & exact & w.disclosed
    disclosed = disc_exact | (sup & ~exact & pinned.reshape(t.shape))
    target = rel.target_kappa
    if target is not None:
        with np.errstate(invalid="ignore"):
            failing = sup & ~(np.isfinite(pub) & (pub <= target))
        certified = sup & ~failing
    else:
        failing = sup & (~exact | (disclosed & (x < rel.r)))
        certified = sup & exact
    large = sup & ~exact
    with np.errstate(invalid="ignore"):
        within = np.isfinite(pub) & (pub <= target) if target is not None else np.zeros_like(sup)
    cell_certified = sup & (exact | within)
    switching = large & (w.switching if w.switching is not None else np.zeros_like(sup))
    est = float(np.max(w.estimate[large])) if large.any() else None
    kappa = w.max_published
    plan = rel.plan
    cost = _cost(rel, t.secondary)
    lb = None if plan is None else float(plan.lower_bound)
    gap = None if lb is None else cost - lb
    optimal = None if plan is None else getattr(plan, "optimal", None)
    public_lb = None
    if plan is not None and target is not None:
        from persuasive.margins.public_bound import publication_lower_bound

        public_lb = publication_lower_bound(t, rel.receiver, target, rel.r)
    at_public = rel.objective == "count" and public_lb is not None and cost <= public_lb
    if optimal is None and gap is not None and (gap <= 0 or at_public) and not failing.any():
        optimal = True  # at a proven lower bound
    n_fail = int(failing.sum())
    reasons: list[str] = []
    remedies: list[str] = []
    names = t.margin_names()
    if n_fail and target is not None:
        big = failing & ~exact
        small = failing & exact
        if big.any():
            chain = "" if est is None else f" (the Markov chain estimates up to {_num(est)}, "
            chain += "an estimate, not a proof)" if chain else ""
            n_sw = int((big & switching).sum())
            what = (
                f"(the switching bound on their posterior for {n_sw} of them, else what a "
                "Receiver gains by learning the count outright) is"
                if n_sw
                else "is what a Receiver gains by learning the count outright,"
            )
            reasons.append(
                f"{int(big.sum())} suppressed cells lie in parts of the table too large for the "
                f"exact posterior; their proven bound {what} up to "
                f"{_num(float(pub[big].max()))} nats > {_num(target)}" + chain
            )
        if small.any():
            at_table = small & (w.kappa_upper <= target)
            reasons.append(
                f"{int(small.sum())} suppressed cells computed exactly keep κ above the target, "
                f"up to {_num(float(pub[small].max()))} nats"
                + (
                    f" ({int(at_table.sum())} of them meet it at the true table only: "
                    "planned with --bound table)"
                    if at_table.any()
                    else ""
                )
            )
        if math.isfinite(kappa):
            remedies.append(
                f"a target κ of at least {_num(kappa)} nats (the pattern found, "
                f"{int(t.secondary.sum())} secondary cells, reaches it, proven)"
            )
        if small.any() and rel.bound == "table":
            remedies.append("planning against the certificate's bound (--bound publication)")
        if len(names) > 1:
            remedies.append(f"fewer margins (published now: {', '.join(names)})")
        remedies.append(
            "a coarser table (merge levels so that fewer cells fall below h"
            + (
                " and the hidden cells form parts small enough for the exact posterior)"
                if big.any()
                else ")"
            )
        )
        if small.any():
            remedies.append(
                f"more secondary cells than the {int(t.secondary.sum())} the planner found"
            )
    elif n_fail:
        n_unc = int((failing & ~exact).sum())
        n_disc = int((failing & disclosed).sum())
        if n_disc:
            reasons.append(f"{n_disc} suppressed cells below r are disclosed by the margins")
        if n_unc:
            reasons.append(
                f"{n_unc} suppressed cells lie in parts too large for the exact posterior (κ "
                "there is a proven bound: the switching bound, or the full-disclosure bound)"
            )
    released = target is None or n_fail == 0
    holds = released and math.isfinite(kappa) and (target is not None or bool(exact[sup].all()))
    return Verdict(
        target_kappa=target,
        bound=rel.bound,
        n_cells=t.n_cells,
        n_suppressed=int(sup.sum()),
        n_primary=int((sup & ~t.secondary).sum()),
        n_secondary=int(t.secondary.sum()),
        n_exact=int((sup & exact).sum()),
        n_certified=int(certified.sum()),
        n_by_bound=int((certified & ~exact).sum()),
        n_switching=int(switching.sum()),
        n_disclosed=int(disclosed.sum()),
        n_disclosed_exact=int(disc_exact.sum()),
        n_failing=n_fail,
        kappa_published=kappa,
        kappa_table=w.max_upper,
        kappa_estimate=est,
        objective=rel.objective,
        cost=cost,
        lower_bound=lb,
        gap=gap,
        optimal=optimal,
        released=released,
        holds=holds,
        failing=failing,
        disclosed=disclosed,
        cell_certified=cell_certified,
        reasons=tuple(reasons),
        remedies=tuple(remedies),
        method=getattr(rel, "method", "greedy"),
        mip_time_limit=getattr(rel, "mip_time_limit", None),
        pattern_by=None if plan is None else getattr(plan, "method", "greedy"),
        mip=None if plan is None else getattr(plan, "mip", None),
        public_lower_bound=public_lb,
    )


def check_certificate(rel: MarginRelease, document: Any) -> None:
    """The certificate written from the publication agrees with the release's :class:`Verdict`
    (held, exact, κ, suppressed, secondary, certified and disclosed cells, the plan and its
    lower bound from the publication); else an InternalError."""
    from persuasive.release.pipeline import InternalError

    vd = rel.verdict
    g, pub = document["guarantee"], document["publication"]
    stated = {
        "holds": bool(g["holds"]),
        "kappa": float(g["kappa"]),
        "suppressed": int(pub["suppressed"]),
        "secondary": int(pub["secondary"]),
        "disclosed": sum(c["disclosed"] is True for c in document["cells"]),
        "certified": sum(c["certified"] is True for c in document["cells"]),
        "exact": bool(g["exact"]),
        "claim.plan": document["claim"].get("plan"),
        "plan.lower_bound": document.get("plan", {}).get("lower_bound"),
    }
    ours = {
        "certified": int(vd.cell_certified.sum()),
        "exact": vd.n_exact == vd.n_suppressed,
        "holds": vd.holds,
        "kappa": vd.kappa_published,
        "suppressed": vd.n_suppressed,
        "secondary": vd.n_secondary,
        "disclosed": vd.n_disclosed_exact,
        "claim.plan": vd.plan_claim(),
        "plan.lower_bound": vd.public_lower_bound,
    }
    wrong = [f"{k}: certificate {stated[k]!r}, release {ours[k]!r}" for k in ours if
             stated[k] != ours[k]]  # fmt: skip
    if wrong:
        raise InternalError("the certificate disagrees with the release: " + "; ".join(wrong))
