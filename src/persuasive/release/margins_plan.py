"""How a margins release chose its secondary pattern: the method (greedy, auto, MIP), the MIP's
outcome and the gap, in words and as the certificate's ``claim.plan``, all read from the
release's :class:`~persuasive.release.margins_verdict.Verdict` (``docs/margins_release.md``,
Optimal patterns).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from persuasive.release.margins_verdict import Verdict

__all__ = ["METHODS", "check_method", "method_words", "plan_claim", "plan_summary", "relative_gap"]

#: How the secondary pattern is chosen (:func:`persuasive.margins.planner.plan_suppression`).
METHODS = ("greedy", "auto", "mip")


def check_method(method: Any, mip_time_limit: Any) -> tuple[str, float | None]:
    """The planner's method and the MIP's time limit (seconds; None with the greedy), checked:
    a ValidationError naming the argument, echoing the value and saying what is allowed."""
    from persuasive import _validation as v
    from persuasive.errors import ValidationError
    from persuasive.margins.optimal import TIME_LIMIT

    meth = v.choice("method", method, METHODS)
    if mip_time_limit is None:
        return meth, None if meth == "greedy" else TIME_LIMIT
    if meth == "greedy":
        raise ValidationError(
            f"mip_time_limit = {mip_time_limit!r:.40}: the time limit of the MIP needs "
            "method 'auto' or 'mip' (the greedy has none)"
        )
    return meth, v.real("mip_time_limit", mip_time_limit, low=0.0, low_open=True)


def relative_gap(vd: Verdict) -> float | None:
    """``gap / cost`` (0 at no cost): the share of the cost the optimum may save."""
    if vd.gap is None:
        return None
    return vd.gap / vd.cost if vd.cost > 0 else 0.0


def method_words(vd: Verdict) -> str | None:
    """Which method produced the pattern and what the MIP reached, in words."""
    from persuasive.margins.optimal import AUTO_MAX_CELLS

    if vd.pattern_by is None:
        return None
    limit = "" if vd.mip_time_limit is None else f"{vd.mip_time_limit:g} s"
    if vd.pattern_by == "mip":
        return "the MIP (HiGHS), " + (
            "optimality proven"
            if vd.mip == "optimal"
            else f"certified, optimality not proven within its time limit ({limit})"
        )
    why = {
        None: "method greedy",
        "too_large": f"the table ({vd.n_cells} cells) is beyond the MIP's reach (method "
        f"auto: at most {AUTO_MAX_CELLS} cells)",
        "time_limit": f"the MIP reached no certified pattern within its time limit ({limit})",
        "iteration_limit": "the MIP reached no certified pattern within its cap on solves",
        "certified": "cheaper than the MIP's certified pattern, whose optimality was not "
        f"proven within its time limit ({limit})",
        "uncertified": f"the MIP's pattern could not be certified within {limit} (parts too "
        "large for the exact posterior)",
        "infeasible": "the MIP's program is infeasible: HiGHS proves no pattern certified",
    }.get(vd.mip, str(vd.mip))
    return f"the greedy ({why})"


def plan_summary(vd: Verdict) -> dict[str, Any]:
    """The planner's outcome for ``MarginRelease.summary()`` (and the CLI's JSON)."""
    return {
        "planner_method": vd.method,
        "planner_mip_time_limit": vd.mip_time_limit,
        "planner_pattern_by": vd.pattern_by,
        "planner_mip": vd.mip,
        "planner_relative_gap": relative_gap(vd),
        "planner_public_lower_bound": vd.public_lower_bound,
        "planner_method_words": method_words(vd),
    }


def plan_claim(vd: Verdict) -> dict[str, Any] | None:
    """The certificate's ``claim.plan`` (None without a plan): how the pattern was chosen,
    the custodian's statement (``docs/margins_release.md``, the certificate)."""
    if vd.pattern_by is None:
        return None
    return {
        "method": vd.method,
        "mip_time_limit": vd.mip_time_limit,
        "objective": vd.objective,
        "bound": vd.bound,
        "pattern": vd.pattern_by,
        "mip": vd.mip,
        "optimal": vd.optimal,
    }
