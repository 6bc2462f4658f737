"""The documented bounds and every shared parameter declaration, each declared once.

:data:`H_MAX` (the largest threshold h or r, 10⁶: a suppressed cell's posterior holds h
probabilities and the worst Receiver prior h + 1, and a larger threshold is never meaningful for
a count table), :data:`R_MIN` (= 2, the smallest score threshold of §5.2, Bon et al. 2026),
:data:`SEED_MAX` (2⁶³ − 1, a TOML integer and what numpy's ``default_rng`` takes as one word),
:data:`N_SAMPLES_MAX` (10¹⁰ Monte Carlo samples: audits draw in chunks, so memory is not the
limit; this bounds the running time, about a minute per 10⁸ draws), :data:`K_MAX` (4096
categories of randomized response: its kernel is a dense k × k matrix), :data:`N_STARTS_MAX`.

The shared declarations below are referenced by name from the constructors and from the
registries of :mod:`persuasive._domains`.
"""

from __future__ import annotations

from typing import Any

from persuasive._domains.param import DATASET_INDEX, Param

__all__ = [
    "ALLOW_SINGULAR",
    "ANCHORED",
    "CELL_MEAN",
    "CONFIDENCE",
    "DATASET",
    "DATASET_INDEX",
    "DELTA",
    "EPSILON",
    "F_DIVERGENCE",
    "GAUSSIAN_SIGMA",
    "GEOMETRIC_SCALE",
    "H_MAX",
    "INDEX",
    "INTERVAL_S",
    "KAPPA",
    "KERNEL_MATRIX",
    "K_MAX",
    "LAPLACE_SCALE",
    "LINEAR_A",
    "MAX_MEAN_SD",
    "MAX_PERSON_ERROR",
    "MAX_STAT_SD",
    "MEAN_RANGE",
    "NEGBIN_SIZE",
    "NOISE_COVARIANCE",
    "NOISE_SCALE",
    "N_SAMPLES",
    "N_SAMPLES_MAX",
    "N_STARTS",
    "N_STARTS_MAX",
    "PAIRS",
    "PRIOR_COV",
    "PRIOR_MEAN",
    "PROBS",
    "R1",
    "R2",
    "RENYI_ORDER",
    "REPEATS",
    "RISK",
    "RISKS",
    "RR_EPSILON",
    "RR_K",
    "R_MIN",
    "SCORE_R",
    "SEED",
    "SEED_MAX",
    "SMALL_CELL_ALPHA",
    "SUPPORT",
    "TARGET_KAPPA",
    "THRESHOLD",
    "TWO_POINT_Q",
]

#: Largest suppression threshold h (and score threshold r) accepted anywhere.
H_MAX: int = 1_000_000
#: Smallest score threshold r of the small-cell log score (§5.2: r >= 2), hence of a release's h.
R_MIN: int = 2
#: Largest random seed (an int64, the range of a TOML integer).
SEED_MAX: int = 2**63 - 1
#: Largest Monte Carlo sample size.
N_SAMPLES_MAX: int = 10**10
#: Largest number of refined starts of a search.
N_STARTS_MAX: int = 1_000_000
#: Largest number of categories of randomized response (dense k x k kernel).
K_MAX: int = 4096


def _positive(doc: str, **extra: Any) -> Param:
    return Param("real", low=0.0, low_open=True, doc=doc, **extra)


# Shared declarations (referenced by name from the constructors; DATASET_INDEX, the entries of
# neighbour pairs, is declared with :class:`Param`, whose pairs check uses it)

#: Suppression / small-count threshold h of a mechanism or prior class.
THRESHOLD = Param("int", low=1, high=H_MAX, doc="cells with a count below h are suppressed")
#: A coordinate or cell index (0-based); absent: the family of every coordinate.
INDEX = Param("int", low=0, required=False, doc="coordinate (0-based); absent: every coordinate")
#: Score threshold r of the small-cell log score (§5.2: r >= 2).
SCORE_R = Param(
    "int",
    low=R_MIN,
    high=H_MAX,
    required=False,
    default=R_MIN,
    doc="counts >= r are inherently private (score 0)",
)
#: Length s of the Receiver's interval (Examples 1 and 3).
INTERVAL_S = _positive("length of the Receiver's interval")

LAPLACE_SCALE = _positive("Laplace scale b (epsilon = 1/b at sensitivity 1)")
GAUSSIAN_SIGMA = _positive("noise standard deviation")
GEOMETRIC_SCALE = _positive("two-sided geometric scale b, P(k) ∝ exp(-|k|/b)")
RR_EPSILON = Param("real", low=0.0, doc="keep probability e^eps / (e^eps + k - 1)")
RR_K = Param("int", low=2, high=K_MAX, required=False, default=2, doc="number of categories")
LINEAR_A = Param(
    "array",
    ndim=(1, 2),
    example="[[1, 1, 0], [0, 1, 1]]",
    doc="coefficients of T = A x (k x n, or n for k = 1)",
)
KERNEL_MATRIX = Param(
    "array",
    ndim=(2,),
    example="[[0.75, 0.25], [0.25, 0.75]]",
    doc="row-stochastic matrix, row x = M(x, ·)",
)
NOISE_COVARIANCE = Param(
    "array",
    ndim=(0, 1, 2),
    required=False,
    example="4.0",
    doc="noise covariance R: a variance s² (R = s² I), variances, or a PSD matrix",
)
#: How many times a release is repeated (ComposedRelease).
REPEATS = Param("int", low=1, doc="number of independent repetitions of a release")

R1 = _positive("bound on the standardised error of the prior mean of the statistic")
R2 = Param("real", low=1.0, low_open=True, doc="bound on the correlation condition number / spread")
MAX_MEAN_SD = _positive(
    "bound V on the prior sd of the mean (absent: unbounded, Prop 7's class)", required=False
)
MAX_STAT_SD = _positive(
    "bound V on the prior sd of the statistics (absent: unbounded)", required=False
)
#: r0 of the bounded-error classes; optional as a domain (the constructors' default is None),
#: required by the classes themselves, which refuse None.
MAX_PERSON_ERROR = _positive(
    "bound r0 on every person's standardized prior error |x_i - mu_i| / sigma_i "
    "(required by the bounded-error classes)",
    required=False,
)
SMALL_CELL_ALPHA = Param(
    "real", low=0.0, high=1.0, low_open=True, doc="minimum prior mass on counts below h"
)
ANCHORED = Param(
    "bool",
    required=False,
    default=False,
    doc="true: 𝓗_x (the pair contains the Sender's x); false: 𝓗",
)
PAIRS = Param(
    "pairs", required=False, doc="neighbour relation on datasets 0..K-1; absent: |x - x'| <= 1"
)

#: Mean of a Poisson / negative-binomial cell prior.
CELL_MEAN = Param("real", low=0.0, doc="prior mean of a cell count")
NEGBIN_SIZE = _positive("negative-binomial size n (variance mu + mu^2/n)")

DATASET = Param("array", ndim=(0, 1), example="[1.0, 2.0]", doc="a dataset x (n numbers)")
PRIOR_MEAN = DATASET.but(doc="prior mean μ")
PRIOR_COV = Param(
    "array",
    ndim=(0, 1, 2),
    example="[[1.0, 0.5], [0.5, 1.0]]",
    doc="prior covariance Σ (a 1-d array is a diagonal)",
)
ALLOW_SINGULAR = Param("bool", required=False, default=False, doc="accept a singular covariance")
SUPPORT = Param(
    "array", ndim=(1, 2), example="[0, 1, 2]", doc="the datasets of a finite prior, one per row"
)
PROBS = Param("array", ndim=(1,), example="[0.25, 0.75]", doc="probabilities summing to one")
TWO_POINT_Q = Param("real", low=0.0, high=1.0, doc="Q({x}) of the two-point prior")

KAPPA = Param("real", low=0.0, allow_inf=True, doc="allowed relative loss κ")
DELTA = Param(
    "real",
    low=0.0,
    high=1.0,
    high_open=True,
    required=False,
    default=0.0,
    doc="allowed failure probability δ",
)
EPSILON = Param("real", low=0.0, allow_inf=True, doc="the DP parameter ε (becomes κ)")
RENYI_ORDER = Param("real", low=1.0, low_open=True, doc="Rényi order α")
F_DIVERGENCE = Param("str", choices=("kl", "tv", "chi2"), doc="the f-divergence")
#: Risk transforms of the expectation variant.
RISKS: tuple[str, ...] = ("mean", "renyi", "kl", "tv", "chi2")
RISK = Param("str", choices=RISKS, required=False, default="mean", doc="risk transform")

N_SAMPLES = Param("int", low=2, high=N_SAMPLES_MAX, doc="Monte Carlo sample size")
SEED = Param("int", low=0, high=SEED_MAX, doc="random seed")
N_STARTS = Param("int", low=1, high=N_STARTS_MAX, doc="refined starts of a search")
CONFIDENCE = Param(
    "real",
    low=0.0,
    high=1.0,
    low_open=True,
    high_open=True,
    doc="confidence level of Monte Carlo bounds",
)
TARGET_KAPPA = Param("real", low=0.0, doc="the κ to calibrate for")
NOISE_SCALE = _positive("noise scale (Gaussian sd or Laplace scale)")
MEAN_RANGE = Param("range", low=0.0, doc="range LO:HI of the prior mean of a cell")
