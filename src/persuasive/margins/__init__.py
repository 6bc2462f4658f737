"""Suppressed tables with published margins: exact posteriors, losses and attacker intervals
(issue 5; Bon et al. 2026, beyond Prop 8). See ``docs/margins.md``."""

from persuasive.margins.attack import AttackIntervals, attacker_intervals
from persuasive.margins.classical import (
    ClassicalPattern,
    Comparison,
    classical_pattern,
    compare,
    lower_bound,
)
from persuasive.margins.constraints import ConstraintSystem, constraint_system
from persuasive.margins.losses import CellLosses, cell_losses
from persuasive.margins.planner import InfeasiblePlanError, SuppressionPlan, plan_suppression
from persuasive.margins.posterior import MarginPosterior, posterior_marginals
from persuasive.margins.table import MarginTable, margin_sums, parse_margins
from persuasive.margins.worst import WorstCaseLosses, meets, surprise, worst_case_losses

__all__ = [
    "AttackIntervals",
    "CellLosses",
    "ClassicalPattern",
    "Comparison",
    "ConstraintSystem",
    "InfeasiblePlanError",
    "MarginPosterior",
    "MarginTable",
    "SuppressionPlan",
    "WorstCaseLosses",
    "attacker_intervals",
    "cell_losses",
    "classical_pattern",
    "compare",
    "constraint_system",
    "lower_bound",
    "margin_sums",
    "meets",
    "parse_margins",
    "plan_suppression",
    "posterior_marginals",
    "surprise",
    "worst_case_losses",
]
