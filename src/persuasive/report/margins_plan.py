"""The plan in a margins certificate: ``claim.plan`` and the recomputed section ``plan``.

``claim.plan`` is the custodian's statement of how the secondary pattern was chosen (the
method asked for, the MIP's time limit, the objective and bound planned against, which method
produced the pattern, the MIP's outcome, whether optimality was proven). Like the pattern
itself it comes from the planner, which saw the data; verify cannot rerun the planner without
the hidden counts, so these fields are bound by the digest, and :func:`read_plan` refuses a
statement that is inconsistent in itself (e.g. a pattern from the MIP without the MIP asked
for). The section ``plan`` is recomputed from the publication alone, by the release and by
``persuasive verify`` with the same code: the number of secondary cells, the lower bound of
:func:`persuasive.margins.public_bound.publication_lower_bound` and the gap; a claim that calls
a pattern at that bound not optimal is refused. No count of a hidden cell (so neither the total
of the secondary cells nor the custodian's bound, which reads the hidden counts) is stated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from persuasive.errors import ValidationError

__all__ = ["FIELDS", "MIP_OUTCOMES", "plan_notes", "plan_section", "read_plan"]

#: The keys of ``claim.plan``, in order.
FIELDS = ("method", "mip_time_limit", "objective", "bound", "pattern", "mip", "optimal")
#: The MIP's outcomes (``MipOutcome.status``), and ``too_large`` (``auto`` skipped it).
MIP_OUTCOMES = (
    "optimal",
    "certified",
    "uncertified",
    "time_limit",
    "iteration_limit",
    "infeasible",
    "too_large",
)
_CHOICES = {
    "method": ("greedy", "auto", "mip"),
    "objective": ("count", "total"),
    "bound": ("publication", "table"),
    "pattern": ("mip", "greedy"),
}


def _bad(key: str, what: str) -> ValidationError:
    return ValidationError(f"claim.plan.{key}: {what}")


def read_plan(claim: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """``claim.plan`` (optional) as ``(key, value)`` pairs, checked: a ValidationError naming
    the field (``claim.plan.mip: ...``) when it is missing, of the wrong type or inconsistent."""
    if "plan" not in claim:
        return ()
    raw = claim["plan"]
    if not isinstance(raw, dict):
        raise ValidationError("claim.plan: must be an object with the keys " + ", ".join(FIELDS))
    extra = sorted(set(raw) - set(FIELDS))
    if extra:
        raise _bad(extra[0], f"not a field of the plan (its fields: {', '.join(FIELDS)})")
    for key in FIELDS:
        if key not in raw:
            raise _bad(key, "missing")
    for key, allowed in _CHOICES.items():
        if raw[key] not in allowed:
            raise _bad(key, f"must be one of {', '.join(allowed)}; got {raw[key]!r:.40}")
    method, limit, mip, optimal = raw["method"], raw["mip_time_limit"], raw["mip"], raw["optimal"]
    if claim.get("target_kappa") is None:
        raise _bad("method", "a plan needs the claim's target_kappa (nothing is planned without)")
    if method == "greedy":
        if limit is not None or mip is not None or raw["pattern"] != "greedy":
            raise _bad(
                "method",
                "greedy: mip_time_limit and mip must be null and the pattern the greedy's",
            )
    else:
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit > 0:
            raise _bad("mip_time_limit", f"must be a number of seconds > 0; got {limit!r:.40}")
        if not math.isfinite(limit):
            raise _bad("mip_time_limit", "must be finite")
        if mip not in MIP_OUTCOMES or (mip == "too_large" and method != "auto"):
            raise _bad("mip", f"must be one of {', '.join(MIP_OUTCOMES)}; got {mip!r:.40}")
        kept = ("optimal", "certified") if raw["pattern"] == "mip" else MIP_OUTCOMES[1:]
        if mip not in kept:
            raise _bad(
                "pattern",
                f"{raw['pattern']!r} with mip {mip!r}: the MIP's pattern is kept when it is "
                "certified (mip optimal or certified), the greedy's when it is not or, mip "
                "certified, when it is cheaper",
            )
    if optimal not in (True, False, None):
        raise _bad("optimal", f"must be true, false or null; got {optimal!r:.40}")
    if mip == "optimal" and optimal is not True:
        raise _bad("optimal", "must be true when the MIP proved optimality (mip 'optimal')")
    return tuple((k, raw[k]) for k in FIELDS)


def plan_section(p: Any, table: Any) -> dict[str, Any]:
    """The recomputed section ``{"plan": {...}}`` of a claim with a plan (else ``{}``): from
    the table rebuilt from the publication (``table``) and the claim (``p``)."""
    from persuasive.margins.public_bound import publication_lower_bound

    if not p.plan:
        return {}
    plan = dict(p.plan)
    n = int(np.count_nonzero(table.secondary))
    lb = publication_lower_bound(table, p.receiver, float(p.target_kappa), p.r)
    if not math.isfinite(lb):
        raise ValidationError(
            "plan: an entry that must get a hidden cell has none: no pattern meets the target"
        )
    if plan["objective"] == "count" and n <= lb and plan["optimal"] is not True:
        raise _bad(
            "optimal",
            f"{plan['optimal']!r}, but the {n} secondary cells are at the lower bound "
            f"recomputed from the publication ({lb:g}): the pattern is optimal",
        )
    gap = n - lb
    return {
        "plan": {
            "secondary": n,
            "lower_bound": lb,
            "gap": gap,
            "relative_gap": gap / n if n else 0.0,
        }
    }


def plan_notes(p: Any, section: dict[str, Any]) -> list[str]:
    """The certificate's note on the plan (none without one), in words, from ``claim.plan``
    and the recomputed section."""
    if not p.plan:
        return []
    plan, sec = dict(p.plan), section["plan"]
    by = (
        "by the mixed-integer program (HiGHS)"
        if plan["pattern"] == "mip"
        else "by the greedy planner"
        + {None: "", "too_large": " (the table is beyond the program's reach)"}.get(
            plan["mip"], f" (the program's outcome: {plan['mip']})"
        )
    )
    proof = {True: "proven optimal", False: "not optimal", None: "not proven optimal"}[
        plan["optimal"]
    ]
    return [
        f"The {sec['secondary']} secondary cells were chosen {by} and are {proof} for the "
        f"objective '{plan['objective']}', as the custodian states (claim.plan). "
        + (
            f"Whatever the true table, no pattern meeting the target has fewer than "
            f"{sec['lower_bound']:g} secondary cells (a bound recomputed from the publication "
            "alone)."
            if sec["lower_bound"] > 0
            else "The publication alone bounds their number by 0 only: it does not show which "
            "small cells need protection."
        )
    ]
