r"""Parameter domains, declared once as data and shared by every entry point.

Every public parameter with a value domain (a number in an interval, an integer, a flag, one
of a few strings, an array of numbers, a list of pairs) is declared here exactly once, as a
:class:`Param`. The Python API validates its arguments with these declarations, the spec
parser (:mod:`persuasive.spec`) reads its tables with the same ones, the command line checks
its options through :func:`check`, the documentation prints :meth:`Param.domain`, and the
hypothesis strategies of the test suite (``tests/strategies.py``) draw valid and invalid
values from the data of each declaration (``kind``, ``low``/``high``, ``low_open``/``high_open``,
``allow_inf``, ``choices``). So the API, the spec and the CLI cannot disagree about what is
allowed. Structure that is not a value domain (a matrix being row-stochastic, a covariance
being positive definite, ``r <= h``) stays with the constructor that owns it.

This module sits at the bottom of the import graph: it imports only numpy,
:mod:`persuasive.errors` and :mod:`persuasive._validation`.

Registries
----------
The declarations are grouped by what they parametrise; each registry maps a name to
``{parameter name: Param}``, with the parameter names of the Python constructor (which are
also the keys of a spec table):

* :data:`MECHANISMS`, :data:`SCORES`, :data:`PRIOR_CLASSES` — keyed by the spec ``type`` /
  ``class`` names (``"cell_suppression"``, ``"small_cell_log"``, ``"gaussian_mean"``, ...);
* :data:`PRIORS`, :data:`RECEIVERS` (the Receiver families of
  :mod:`persuasive.classes.receivers`, keyed by their ``model`` name);
* :data:`DEFINITION` (κ, δ, the Rényi order, the risk) and :data:`PRESETS` (``pure_dp``,
  ``probabilistic_dp``, ``renyi_dp``);
* :data:`AUDIT` (options of :func:`persuasive.audit`);
* :data:`RELEASE` — the flat table of command-line level parameters (below).

Lookup for the command line
---------------------------
:data:`RELEASE` maps a parameter name to its declaration; :func:`check` validates a value by
that name and :func:`describe` gives the allowed values for ``--help``. Dashes and leading
dashes are ignored when looking a name up, and the error names the option as given:

>>> from persuasive import _domains as dm
>>> dm.check("--h", 5)
5
>>> dm.check("--h", 1)
Traceback (most recent call last):
...
persuasive.errors.ValidationError: --h must be an integer in [2, 1000000]; got 1
>>> dm.check("negbin_size", 0.0, name="--negbin-size")
Traceback (most recent call last):
...
persuasive.errors.ValidationError: --negbin-size must be in (0, inf); got 0.0
>>> dm.describe("--poisson-mean")
'a pair LO:HI of real numbers with 0 <= LO <= HI < inf'
>>> dm.check("--poisson-mean", (1.0, 40.0))
(1.0, 40.0)
>>> sorted(dm.RELEASE)[:4]
['alpha', 'confidence', 'delta', 'epsilon']

Documented bounds
-----------------
:data:`H_MAX` (the largest threshold h or r, 10⁶: a suppressed cell's posterior holds h
probabilities and the worst Receiver prior h + 1, and a larger threshold is never meaningful for
a count table), :data:`R_MIN` (= 2, the smallest score threshold of §5.2, Bon et al. 2026),
:data:`SEED_MAX` (2⁶³ − 1, a TOML integer and what numpy's ``default_rng`` takes as one word),
:data:`N_SAMPLES_MAX` (10¹⁰ Monte Carlo samples: audits draw in chunks, so memory is not the
limit; this bounds the running time, about a minute per 10⁸ draws), :data:`K_MAX` (4096
categories of randomized response: its kernel is a dense k × k matrix), :data:`N_STARTS_MAX`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from persuasive import _validation as v
from persuasive._validation import echo
from persuasive.errors import ValidationError

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

#: The kinds of value a :class:`Param` can declare.
KINDS: tuple[str, ...] = (
    "real",
    "int",
    "bool",
    "str",
    "array",
    "pairs",
    "range",
    "table",
    "tables",
)

_NDIM_TEXT = {
    (0, 1): "a number or a 1-d array of numbers",
    (1,): "a 1-d array of numbers",
    (2,): "a 2-d array of numbers",
    (1, 2): "a 1-d or 2-d array of numbers",
    (0, 1, 2): "a number, a 1-d or a 2-d array of numbers",
}


def _fmt(x: float | None, default: str) -> str:
    if x is None:
        return default
    if isinstance(x, int):
        return str(x)
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))  # 1000000, not 1e+06
    return f"{x:g}"


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(
        x, (bool, np.bool_)
    )


@dataclass(frozen=True)
class Param:
    """The declared domain of one parameter (a constructor argument, a spec key, an option).

    Parameters
    ----------
    kind : {"real", "int", "bool", "str", "array", "pairs", "range", "table", "tables"}
        A real number, an integer, a boolean, a string (one of ``choices`` if given), an array
        of finite numbers with ``ndim`` dimensions, a non-empty list of pairs of integers >= 0,
        a pair ``(lo, hi)`` of reals with ``low <= lo <= hi`` (a range of means), a table or a
        non-empty array of tables (the last two only for spec documents).
    low, high : float, optional
        Bounds of a number (``None``: unbounded); for ``"range"``, ``low`` bounds both ends.
    low_open, high_open : bool
        Whether the bound is excluded.
    allow_inf : bool
        Whether ``inf`` is allowed (``nan`` never is).
    required : bool
        Whether the parameter must be given. An optional parameter whose ``default`` is
        ``None`` accepts ``None`` ("absent") in :meth:`check`.
    default : object
        Value used when an optional parameter is absent.
    choices : tuple of str
        Allowed strings for ``kind = "str"``.
    ndim : tuple of int
        Allowed numbers of dimensions for ``kind = "array"`` (0: a single number).
    example : str
        An example value, shown by :meth:`domain` for arrays.
    doc : str
        One-line meaning, for the documentation and ``--help``.
    """

    kind: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    allow_inf: bool = False
    required: bool = True
    default: Any = None
    choices: tuple[str, ...] = ()
    ndim: tuple[int, ...] = ()
    example: str = ""
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:  # pragma: no cover - a programming error in a declaration
            raise AssertionError(f"unknown Param kind {self.kind!r}")

    def but(self, **changes: Any) -> Param:
        """The same domain with other fields changed (e.g. ``required=False``, ``doc=...``)."""
        return replace(self, **changes)

    @property
    def accepts_none(self) -> bool:
        """Whether ``None`` means "absent" (an optional parameter without a default)."""
        return not self.required and self.default is None

    def _interval(self) -> str:
        lb = "(" if self.low_open or self.low is None else "["
        hb = ")" if self.high_open or (self.high is None and not self.allow_inf) else "]"
        return f"{lb}{_fmt(self.low, '-inf')}, {_fmt(self.high, 'inf')}{hb}"

    def domain(self) -> str:
        """A human description of the allowed values, e.g. ``a real number in (0, inf)``."""
        if self.kind in ("real", "int"):
            noun = "a real number" if self.kind == "real" else "an integer"
            if self.low is None and self.high is None:
                return noun
            return f"{noun} in {self._interval()}"
        if self.kind == "str" and self.choices:
            return "one of " + ", ".join(f'"{c}"' for c in self.choices)
        if self.kind == "array":
            text = _NDIM_TEXT.get(self.ndim, f"an array of numbers with {self.ndim} dimension(s)")
            return f"{text}, e.g. {self.example}" if self.example else text
        if self.kind == "range":
            lo = _fmt(self.low, "-inf")
            return f"a pair LO:HI of real numbers with {lo} <= LO <= HI < inf"
        return {
            "bool": "true or false",
            "str": "a string",
            "pairs": "a list of integer pairs, e.g. [[0, 1], [1, 2]]",
            "table": "a table",
            "tables": 'an array of tables, e.g. [{type = "log"}]',
        }[self.kind]

    # ----------------------------------------------------------------------------------------
    # Validation
    # ----------------------------------------------------------------------------------------

    def check(self, name: str, value: Any) -> Any:
        """Return ``value`` validated and converted, else raise ValidationError naming ``name``.

        Numbers come back as ``float`` / ``int``, arrays as float64 ndarrays, pairs as a tuple
        of ``(int, int)``; ``None`` comes back unchanged when :attr:`accepts_none`.
        """
        if value is None and self.accepts_none:
            return None
        if self.kind == "real":
            return self._real(name, value)
        if self.kind == "int":
            return self._int(name, value)
        if self.kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise ValidationError(f"{name} must be true or false; got {echo(value)}")
            return bool(value)
        if self.kind == "str":
            if not isinstance(value, str) or (self.choices and value not in self.choices):
                raise ValidationError(f"{name} must be {self.domain()}; got {echo(value)}")
            return value
        if self.kind == "array":
            return self._array(name, value)
        if self.kind == "pairs":
            return _pairs(name, value)
        if self.kind == "range":
            return self._range(name, value)
        if self.kind == "table":
            if not isinstance(value, dict):
                raise ValidationError(f"{name} must be a table; got {echo(value)}")
            return value
        if not isinstance(value, list) or not value:  # "tables"
            raise ValidationError(
                f"{name} must be {self.domain()} (at least one); got {echo(value)}"
            )
        for k, item in enumerate(value):
            if not isinstance(item, dict):
                raise ValidationError(f"{name}[{k}] must be a table; got {echo(item)}")
        return value

    def _real(self, name: str, value: Any) -> float:
        return v.real(
            name,
            value,
            low=self.low,
            high=self.high,
            low_open=self.low_open,
            high_open=self.high_open,
            allow_inf=self.allow_inf,
        )

    def _int(self, name: str, value: Any) -> int:
        if isinstance(value, (bool, np.bool_)):
            raise ValidationError(f"{name} must be an integer; got {echo(value)}")
        if isinstance(value, (float, np.floating)):
            f = float(value)
            if not math.isfinite(f) or not f.is_integer():
                raise ValidationError(f"{name} must be an integer; got {echo(value)}")
            n = int(f)
        elif isinstance(value, (int, np.integer)):
            n = int(value)
        else:
            raise ValidationError(f"{name} must be an integer; got {echo(value)}")
        too_low = self.low is not None and (n < self.low or (self.low_open and n == self.low))
        too_high = self.high is not None and (n > self.high or (self.high_open and n == self.high))
        if too_low or too_high:
            raise ValidationError(f"{name} must be {self.domain()}; got {echo(value)}")
        return n

    def _array(self, name: str, value: Any) -> np.ndarray:
        if isinstance(value, (list, tuple)):
            _nested_numbers(name, value, self.ndim, self.domain())
        return v.array(name, value, ndim=self.ndim)

    def _range(self, name: str, value: Any) -> tuple[float, float]:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise ValidationError(f"{name} must be {self.domain()}; got {echo(value)}")
        point = Param("real", low=self.low, low_open=self.low_open)
        lo = point.check(f"{name} (LO)", value[0])
        hi = point.check(f"{name} (HI)", value[1])
        if hi < lo:
            raise ValidationError(f"{name} must be {self.domain()}; got LO = {lo:g} > HI = {hi:g}")
        return lo, hi


def _nested_numbers(name: str, value: Any, ndim: tuple[int, ...], domain: str) -> None:
    """Structural checks of an array given as (nested) lists, naming the bad entry."""
    if not value:
        raise ValidationError(f"{name} must be {domain}; got {echo(value)}")
    if all(_is_number(x) for x in value):
        if 1 not in ndim:
            raise ValidationError(f"{name} must be {domain}; got {echo(value)}")
        return
    if not all(isinstance(r, (list, tuple)) for r in value) or 2 not in ndim:
        raise ValidationError(f"{name} must be {domain}; got {echo(value)}")
    width = len(value[0])
    for i, row in enumerate(value):
        if not row or len(row) != width:
            raise ValidationError(
                f"{name} must be rectangular: row {i} has {len(row)} entries, row 0 has {width}"
            )
        for j, x in enumerate(row):
            if not _is_number(x):
                raise ValidationError(f"{name}[{i}][{j}] must be a number; got {echo(x)}")


def _pairs(name: str, value: Any) -> tuple[tuple[int, int], ...]:
    if not isinstance(value, (list, tuple, set, frozenset)) or not value:
        raise ValidationError(
            f"{name} must be a non-empty list of integer pairs, "
            f"e.g. [[0, 1], [1, 2]]; got {echo(value)}"
        )
    out = []
    for k, pair in enumerate(value):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValidationError(f"{name}[{k}] must be a pair [i, j]; got {echo(pair)}")
        i = DATASET_INDEX.check(f"{name}[{k}][0]", pair[0])
        j = DATASET_INDEX.check(f"{name}[{k}][1]", pair[1])
        out.append((i, j))
    return tuple(out)


def _positive(doc: str, **extra: Any) -> Param:
    return Param("real", low=0.0, low_open=True, doc=doc, **extra)


# --------------------------------------------------------------------------------------------
# Shared declarations (referenced by name from the constructors)
# --------------------------------------------------------------------------------------------

#: A dataset label of a finite data space {0, 1, ...} (the entries of neighbour pairs).
DATASET_INDEX = Param("int", low=0, doc="a dataset of a finite space {0, 1, ...}")

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


# --------------------------------------------------------------------------------------------
# Registries: {name: {parameter: Param}}, parameter names of the Python constructors
# --------------------------------------------------------------------------------------------

Table = Mapping[str, Param]

#: Mechanisms, by spec ``type`` (plus the API-only ``linear_gaussian``).
MECHANISMS: dict[str, dict[str, Param]] = {
    "exact_mean": {},
    "linear_statistic": {"A": LINEAR_A},
    "cell_suppression": {"h": THRESHOLD},
    "laplace": {"scale": LAPLACE_SCALE},
    "gaussian": {"sigma": GAUSSIAN_SIGMA},
    "geometric": {"scale": GEOMETRIC_SCALE},
    "randomized_response": {"epsilon": RR_EPSILON, "k": RR_K},
    "finite_kernel": {"matrix": KERNEL_MATRIX},
    "linear_gaussian": {"A": LINEAR_A, "R": NOISE_COVARIANCE},
}

#: Scores, by spec ``type``.
SCORES: dict[str, dict[str, Param]] = {
    "log": {},
    "dss": {},
    "marginal_dss": {"i": INDEX},
    "small_cell_log": {"i": INDEX, "r": SCORE_R},
    "interval": {"s": INTERVAL_S},
    "brier": {},
    "spherical": {},
}

#: Prior classes, by spec ``class`` (plus the API-only ``linear_gaussian``).
PRIOR_CLASSES: dict[str, dict[str, Param]] = {
    "neighbours": {"anchored": ANCHORED, "pairs": PAIRS},
    "gaussian_mean": {"r1": R1, "r2": R2, "max_mean_sd": MAX_MEAN_SD},
    "small_cell": {"h": THRESHOLD, "alpha": SMALL_CELL_ALPHA},
    "linear_gaussian": {"r1": R1, "r2": R2, "max_stat_sd": MAX_STAT_SD},
}

#: Receiver families of :mod:`persuasive.classes.receivers`, by ``model``.
RECEIVERS: dict[str, dict[str, Param]] = {
    "small_cell": {"alpha": SMALL_CELL_ALPHA},
    "poisson": {"mean_min": CELL_MEAN, "mean_max": CELL_MEAN},
    "negative_binomial": {"mean_min": CELL_MEAN, "mean_max": CELL_MEAN, "size": NEGBIN_SIZE},
}

#: Data-priors (array parameters; structure such as definiteness is the constructor's).
PRIORS: dict[str, dict[str, Param]] = {
    "gaussian": {"mean": PRIOR_MEAN, "cov": PRIOR_COV, "allow_singular": ALLOW_SINGULAR},
    "discrete": {"support": SUPPORT, "probs": PROBS},
    "two_point": {"x": DATASET, "x_prime": DATASET, "q": TWO_POINT_Q},
}

#: Parameters of the definitions (:class:`~persuasive.PersuasivePrivacy`, its expectation
#: variant and the risks).
DEFINITION: dict[str, Param] = {
    "kappa": KAPPA,
    "delta": DELTA,
    "alpha": RENYI_ORDER,
    "risk": RISK,
    "name": F_DIVERGENCE,
}

#: The DP presets of :mod:`persuasive.definitions`.
PRESETS: dict[str, dict[str, Param]] = {
    "pure_dp": {"epsilon": EPSILON},
    "probabilistic_dp": {"epsilon": EPSILON, "delta": DELTA.but(required=True)},
    "renyi_dp": {"alpha": RENYI_ORDER, "epsilon": EPSILON},
}

#: Options of :func:`persuasive.audit` (and of a spec's ``[audit]`` table), each optional:
#: absent means :func:`persuasive.audit`'s default.
AUDIT: dict[str, Param] = {
    "n_samples": N_SAMPLES.but(required=False),
    "seed": SEED.but(required=False),
    "n_starts": N_STARTS.but(required=False),
    "confidence": CONFIDENCE.but(required=False),
}

#: Command-line level parameters (``persuasive release ...``, ``audit``), by Python name.
RELEASE: dict[str, Param] = {
    "h": THRESHOLD.but(low=R_MIN, doc="suppress the cells with a count below h"),
    "r": SCORE_R.but(required=True, default=None, doc="small-cell score threshold (r <= h)"),
    "alpha": SMALL_CELL_ALPHA.but(doc="Receivers with P(cell < h) >= alpha"),
    "poisson_mean": MEAN_RANGE.but(doc="Poisson cell priors, mean in LO:HI"),
    "negbin_mean": MEAN_RANGE.but(doc="negative-binomial cell priors, mean in LO:HI"),
    "negbin_size": NEGBIN_SIZE,
    "mean_min": CELL_MEAN,
    "mean_max": CELL_MEAN,
    "target_kappa": TARGET_KAPPA,
    "kappa": KAPPA,
    "epsilon": EPSILON,
    "delta": DELTA,
    "r1": R1,
    "r2": R2,
    "max_mean_sd": MAX_MEAN_SD,
    "max_stat_sd": MAX_STAT_SD,
    "noise_sd": NOISE_SCALE.but(doc="Gaussian noise sd on every statistic"),
    "noise_scale": NOISE_SCALE,
    "seed": SEED,
    "n_samples": N_SAMPLES,
    "samples": N_SAMPLES,
    "n_starts": N_STARTS,
    "confidence": CONFIDENCE,
}

#: Every registry, by name (for the documentation and the tests).
REGISTRIES: dict[str, Mapping[str, Table]] = {
    "mechanism": MECHANISMS,
    "score": SCORES,
    "prior_class": PRIOR_CLASSES,
    "receiver": RECEIVERS,
    "prior": PRIORS,
    "preset": PRESETS,
}


def _key(name: str) -> str:
    return name.lstrip("-").replace("-", "_")


def lookup(name: str) -> Param:
    """The declaration of the command-line level parameter ``name`` (see :data:`RELEASE`).

    Leading dashes are dropped and inner dashes read as underscores, so ``"--negbin-size"``,
    ``"negbin-size"`` and ``"negbin_size"`` are the same parameter.

    Raises
    ------
    KeyError
        If no parameter of that name is declared (a programming error, not bad input).
    """
    key = _key(name)
    if key not in RELEASE:
        raise KeyError(f"no declared domain for {name!r}; declared: {', '.join(sorted(RELEASE))}")
    return RELEASE[key]


def check(key: str, value: Any, *, name: str | None = None) -> Any:
    """Validate ``value`` against the declared domain of the parameter ``key``.

    Parameters
    ----------
    key : str
        The parameter, as in :func:`lookup` (``"h"``, ``"--h"``, ``"--negbin-size"``, ...).
    value : object
        The value to check.
    name : str, optional
        How the error message names the parameter (default: ``key`` as given).

    Returns
    -------
    object
        The value converted (``int``, ``float``, a ``(lo, hi)`` pair, ...).

    Raises
    ------
    ValidationError
        Naming the parameter, echoing the value and saying what is allowed.
    """
    return lookup(key).check(key if name is None else name, value)


def describe(key: str) -> str:
    """The allowed values of the parameter ``key`` (for ``--help``), e.g. ``an integer in [2,
    1000000]``."""
    return lookup(key).domain()


def iter_params() -> Iterator[tuple[str, Param]]:
    """Every declaration in the registries, as ``("registry.entry.parameter", Param)``, then
    the flat tables as ``("definition.kappa", ...)``, ``("audit.seed", ...)``,
    ``("release.h", ...)``."""
    for reg_name, reg in REGISTRIES.items():
        for entry, params in reg.items():
            for pname, p in params.items():
                yield f"{reg_name}.{entry}.{pname}", p
    for flat_name, flat in (("definition", DEFINITION), ("audit", AUDIT), ("release", RELEASE)):
        for pname, p in flat.items():
            yield f"{flat_name}.{pname}", p
