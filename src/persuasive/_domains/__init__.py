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

This package sits at the bottom of the import graph: it imports only numpy,
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

The package has three parts: :mod:`persuasive._domains.param` (what a declaration is:
:class:`Param` and its checks), :mod:`persuasive._domains.declarations` (the documented bounds
and every shared declaration) and this module (the registries and the look-up by name), which
re-exports the other two, so ``dm.THRESHOLD``, ``dm.Param`` and ``dm.H_MAX`` read as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from persuasive._domains import declarations as d
from persuasive._domains.declarations import *  # noqa: F403  (re-exported: dm.THRESHOLD, dm.H_MAX ...)
from persuasive._domains.param import KINDS, Param

__all__ = [
    "AUDIT",
    "DEFINITION",
    "KINDS",
    "MECHANISMS",
    "PRESETS",
    "PRIORS",
    "PRIOR_CLASSES",
    "RECEIVERS",
    "REGISTRIES",
    "RELEASE",
    "SCORES",
    "Param",
    "Table",
    "check",
    "describe",
    "iter_params",
    "lookup",
    *d.__all__,
]


# --------------------------------------------------------------------------------------------
# Registries: {name: {parameter: Param}}, parameter names of the Python constructors
# --------------------------------------------------------------------------------------------

Table = Mapping[str, Param]

#: Mechanisms, by spec ``type`` (plus the API-only ``linear_gaussian``).
MECHANISMS: dict[str, dict[str, Param]] = {
    "exact_mean": {},
    "linear_statistic": {"A": d.LINEAR_A},
    "cell_suppression": {"h": d.THRESHOLD},
    "laplace": {"scale": d.LAPLACE_SCALE},
    "gaussian": {"sigma": d.GAUSSIAN_SIGMA},
    "geometric": {"scale": d.GEOMETRIC_SCALE},
    "randomized_response": {"epsilon": d.RR_EPSILON, "k": d.RR_K},
    "finite_kernel": {"matrix": d.KERNEL_MATRIX},
    "linear_gaussian": {"A": d.LINEAR_A, "R": d.NOISE_COVARIANCE},
}

#: Scores, by spec ``type``.
SCORES: dict[str, dict[str, Param]] = {
    "log": {},
    "dss": {},
    "marginal_dss": {"i": d.INDEX},
    "small_cell_log": {"i": d.INDEX, "r": d.SCORE_R},
    "interval": {"s": d.INTERVAL_S},
    "brier": {},
    "spherical": {},
}

#: Prior classes, by spec ``class`` (plus the API-only ``linear_gaussian``); the two
#: bounded-error classes add ``max_person_error`` (r0) to the Gaussian mean and linear classes.
PRIOR_CLASSES: dict[str, dict[str, Param]] = {
    "neighbours": {"anchored": d.ANCHORED, "pairs": d.PAIRS},
    "gaussian_mean": {"r1": d.R1, "r2": d.R2, "max_mean_sd": d.MAX_MEAN_SD},
    "small_cell": {"h": d.THRESHOLD, "alpha": d.SMALL_CELL_ALPHA},
    "linear_gaussian": {"r1": d.R1, "r2": d.R2, "max_stat_sd": d.MAX_STAT_SD},
    "bounded_error_gaussian": {
        "r1": d.R1,
        "r2": d.R2,
        "max_mean_sd": d.MAX_MEAN_SD,
        "max_person_error": d.MAX_PERSON_ERROR,
    },
    "bounded_error_linear": {
        "r1": d.R1,
        "r2": d.R2,
        "max_stat_sd": d.MAX_STAT_SD,
        "max_person_error": d.MAX_PERSON_ERROR,
    },
}

#: Receiver families of :mod:`persuasive.classes.receivers`, by ``model``.
RECEIVERS: dict[str, dict[str, Param]] = {
    "small_cell": {"alpha": d.SMALL_CELL_ALPHA},
    "poisson": {"mean_min": d.CELL_MEAN, "mean_max": d.CELL_MEAN},
    "negative_binomial": {"mean_min": d.CELL_MEAN, "mean_max": d.CELL_MEAN, "size": d.NEGBIN_SIZE},
}

#: Data-priors (array parameters; structure such as definiteness is the constructor's).
PRIORS: dict[str, dict[str, Param]] = {
    "gaussian": {"mean": d.PRIOR_MEAN, "cov": d.PRIOR_COV, "allow_singular": d.ALLOW_SINGULAR},
    "discrete": {"support": d.SUPPORT, "probs": d.PROBS},
    "two_point": {"x": d.DATASET, "x_prime": d.DATASET, "q": d.TWO_POINT_Q},
}

#: Parameters of the definitions (:class:`~persuasive.PersuasivePrivacy`, its expectation
#: variant and the risks).
DEFINITION: dict[str, Param] = {
    "kappa": d.KAPPA,
    "delta": d.DELTA,
    "alpha": d.RENYI_ORDER,
    "risk": d.RISK,
    "name": d.F_DIVERGENCE,
}

#: The DP presets of :mod:`persuasive.definitions`.
PRESETS: dict[str, dict[str, Param]] = {
    "pure_dp": {"epsilon": d.EPSILON},
    "probabilistic_dp": {"epsilon": d.EPSILON, "delta": d.DELTA.but(required=True)},
    "renyi_dp": {"alpha": d.RENYI_ORDER, "epsilon": d.EPSILON},
}

#: Options of :func:`persuasive.audit` (and of a spec's ``[audit]`` table), each optional:
#: absent means :func:`persuasive.audit`'s default.
AUDIT: dict[str, Param] = {
    "n_samples": d.N_SAMPLES.but(required=False),
    "seed": d.SEED.but(required=False),
    "n_starts": d.N_STARTS.but(required=False),
    "confidence": d.CONFIDENCE.but(required=False),
}

#: Command-line level parameters (``persuasive release ...``, ``audit``), by Python name.
RELEASE: dict[str, Param] = {
    "h": d.THRESHOLD.but(low=d.R_MIN, doc="suppress the cells with a count below h"),
    "r": d.SCORE_R.but(required=True, default=None, doc="small-cell score threshold (r <= h)"),
    "alpha": d.SMALL_CELL_ALPHA.but(doc="Receivers with P(cell < h) >= alpha"),
    "poisson_mean": d.MEAN_RANGE.but(doc="Poisson cell priors, mean in LO:HI"),
    "negbin_mean": d.MEAN_RANGE.but(doc="negative-binomial cell priors, mean in LO:HI"),
    "negbin_size": d.NEGBIN_SIZE,
    "mean_min": d.CELL_MEAN,
    "mean_max": d.CELL_MEAN,
    "target_kappa": d.TARGET_KAPPA,
    "kappa": d.KAPPA,
    "epsilon": d.EPSILON,
    "delta": d.DELTA,
    "r1": d.R1,
    "r2": d.R2,
    "max_mean_sd": d.MAX_MEAN_SD,
    "max_stat_sd": d.MAX_STAT_SD,
    "max_person_error": d.MAX_PERSON_ERROR,
    "noise_sd": d.NOISE_SCALE.but(doc="Gaussian noise sd on every statistic"),
    "noise_scale": d.NOISE_SCALE,
    "seed": d.SEED,
    "n_samples": d.N_SAMPLES,
    "samples": d.N_SAMPLES,
    "n_starts": d.N_STARTS,
    "confidence": d.CONFIDENCE,
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
