r"""Privacy-loss distributions for the (log score, neighbour priors) class, where PP is PDP.

Prop 6 (Bon et al. 2026) turns the persuasive-privacy failure probability into the PDP tail
:math:`P[\ell > \varepsilon]` of the privacy loss; for many releases of the same data that is
the tail of a sum of independent losses, computed here by FFT convolution of pessimistically
discretised pmfs (Koskela et al. 2020), with a reported two-sided error bracket. See
``docs/composition.md``.
"""

from persuasive.pld.calibrate import NoiseCalibration, calibrate_noise
from persuasive.pld.compose import ComposedPLD, as_parts, compose, gaussian_sigma
from persuasive.pld.dots import DotsPLD, dots_compose  # noqa: F401 (hockey-stick path)
from persuasive.pld.laws import (
    atoms_pmf,
    finite_pmfs,
    gaussian_pmf,
    geometric_pmf,
    laplace_pmf,
    mechanism_pmfs,
)
from persuasive.pld.pmf import SNAP, STEP, TAIL_MASS, LossPMF, convolve
from persuasive.pld.renyi import composed_renyi, pdp_tail_from_renyi, renyi_divergence

__all__ = [
    "SNAP",
    "STEP",
    "TAIL_MASS",
    "ComposedPLD",
    "LossPMF",
    "NoiseCalibration",
    "as_parts",
    "atoms_pmf",
    "calibrate_noise",
    "compose",
    "composed_renyi",
    "convolve",
    "finite_pmfs",
    "gaussian_pmf",
    "gaussian_sigma",
    "geometric_pmf",
    "laplace_pmf",
    "mechanism_pmfs",
    "pdp_tail_from_renyi",
    "renyi_divergence",
]
