"""Privacy scores: negatively oriented (mostly proper) scoring rules (Bon et al. 2026, §2)."""

from persuasive.scores.base import Score
from persuasive.scores.dss import DawidSebastiani, MarginalDSS
from persuasive.scores.log import LogScore

__all__ = ["DawidSebastiani", "LogScore", "MarginalDSS", "Score"]
