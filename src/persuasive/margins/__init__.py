"""Suppressed tables with published margins: exact posteriors, losses and attacker intervals
(issue 5; Bon et al. 2026, beyond Prop 8). See ``docs/margins.md``."""

from persuasive.margins.attack import AttackIntervals, attacker_intervals
from persuasive.margins.constraints import ConstraintSystem, constraint_system
from persuasive.margins.losses import CellLosses, cell_losses
from persuasive.margins.posterior import MarginPosterior, posterior_marginals
from persuasive.margins.table import MarginTable, margin_sums, parse_margins
from persuasive.margins.worst import WorstCaseLosses, meets, surprise, worst_case_losses

__all__ = [
    "AttackIntervals",
    "CellLosses",
    "ConstraintSystem",
    "MarginPosterior",
    "MarginTable",
    "WorstCaseLosses",
    "attacker_intervals",
    "cell_losses",
    "constraint_system",
    "margin_sums",
    "meets",
    "parse_margins",
    "posterior_marginals",
    "surprise",
    "worst_case_losses",
]
