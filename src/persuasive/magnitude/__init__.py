"""Magnitude tables: certified κ of published cell totals against outsiders and insiders
(issue 15), beside the p% and (n,k)-dominance rules.

This library's extension of Prop 7 (Bon et al. 2026); the model and proof are in
``docs/magnitude.md``.
"""

from persuasive.magnitude.audit import audit_cells, class_member, loss, witness
from persuasive.magnitude.certificate import MagnitudeCertificate, MagnitudeClass, certify_cells
from persuasive.magnitude.contributors import Contributions, contributions, from_cells
from persuasive.magnitude.rules import nk_dominance, p_percent

__all__ = [
    "Contributions",
    "MagnitudeCertificate",
    "MagnitudeClass",
    "audit_cells",
    "certify_cells",
    "class_member",
    "contributions",
    "from_cells",
    "loss",
    "nk_dominance",
    "p_percent",
    "witness",
]
