"""Parameter domains of the spec format, declared once as data (docs/architecture.md, rule 4).

The same declarations drive validation (:mod:`persuasive.spec.parse`), the documentation
(``docs/cli.md``) and the property tests.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from persuasive import _validation as v
from persuasive import classes as cls
from persuasive import mechanisms as mech
from persuasive.errors import ValidationError


def echo(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _fmt(x: float | None, default: str) -> str:
    return default if x is None else f"{x:g}"


# --------------------------------------------------------------------------------------------
# Parameter domains, declared as data (docs/architecture.md, rule 4)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """The declared domain of one key of a spec table.

    Parameters
    ----------
    kind : {"real", "int", "bool", "str", "matrix", "vector_or_matrix", "pairs", "table", \
"tables"}
        The TOML type: a number, an integer, a boolean, a string (one of ``choices`` if given),
        a 2-d array of numbers, a 1-d or 2-d array of numbers, a list of integer pairs, a table
        or an array of tables.
    low, high : float, optional
        Bounds of a number (``None``: unbounded).
    low_open, high_open : bool
        Whether the bound is excluded.
    allow_inf : bool
        Whether ``inf`` is allowed (``nan`` never is).
    required : bool
        Whether the key must be present; otherwise ``default`` is used.
    default : object
        Value used when an optional key is absent.
    choices : tuple of str
        Allowed strings for ``kind = "str"``.
    doc : str
        One-line meaning, used by ``docs/cli.md``.
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
    doc: str = ""

    def domain(self) -> str:
        """A human description of the allowed values, e.g. ``a real number in (0, inf)``."""
        if self.kind in ("real", "int"):
            noun = "a real number" if self.kind == "real" else "an integer"
            if self.low is None and self.high is None:
                return noun
            lb = "(" if self.low_open or self.low is None else "["
            hb = ")" if self.high_open or (self.high is None and not self.allow_inf) else "]"
            return f"{noun} in {lb}{_fmt(self.low, '-inf')}, {_fmt(self.high, 'inf')}{hb}"
        if self.kind == "str" and self.choices:
            return "one of " + ", ".join(f'"{c}"' for c in self.choices)
        return {
            "bool": "true or false",
            "str": "a string",
            "matrix": "a 2-d array of numbers, e.g. [[0.75, 0.25], [0.25, 0.75]]",
            "vector_or_matrix": "a 1-d or 2-d array of numbers, e.g. [[1, 1, 0], [0, 1, 1]]",
            "pairs": "a list of integer pairs, e.g. [[0, 1], [1, 2]]",
            "table": "a table",
            "tables": 'an array of tables, e.g. [{type = "log"}]',
        }[self.kind]

    def check(self, name: str, value: Any) -> Any:
        """Return ``value`` validated and converted, else raise ValidationError naming ``name``."""
        if self.kind == "real":
            unbounded_above = self.high is None and not self.allow_inf
            return v.real(
                name,
                value,
                low=self.low,
                high=math.inf if unbounded_above else self.high,
                low_open=self.low_open,
                high_open=self.high_open or unbounded_above,
                allow_inf=self.allow_inf,
            )
        if self.kind == "int":
            if isinstance(value, float) and not math.isfinite(value):
                raise ValidationError(f"{name} must be {self.domain()}; got {echo(value)}")
            n = v.integer(name, value)
            too_low = self.low is not None and (n < self.low or (self.low_open and n == self.low))
            too_high = self.high is not None and (
                n > self.high or (self.high_open and n == self.high)
            )
            if too_low or too_high:
                raise ValidationError(f"{name} must be {self.domain()}; got {n}")
            return n
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ValidationError(f"{name} must be true or false; got {echo(value)}")
            return value
        if self.kind == "str":
            if not isinstance(value, str) or (self.choices and value not in self.choices):
                raise ValidationError(f"{name} must be {self.domain()}; got {echo(value)}")
            return value
        if self.kind in ("matrix", "vector_or_matrix"):
            return _numeric_array(name, value, self.kind == "matrix", self.domain())
        if self.kind == "pairs":
            return _pairs(name, value)
        if self.kind == "table":
            if not isinstance(value, dict):
                raise ValidationError(f"{name} must be a table; got {echo(value)}")
            return value
        if self.kind == "tables":
            if not isinstance(value, list) or not value:
                raise ValidationError(
                    f"{name} must be {self.domain()} (at least one); got {echo(value)}"
                )
            for k, item in enumerate(value):
                if not isinstance(item, dict):
                    raise ValidationError(f"{name}[{k}] must be a table; got {echo(item)}")
            return value
        raise AssertionError(f"unknown Param kind {self.kind!r}")  # pragma: no cover


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _numeric_array(name: str, value: Any, matrix_only: bool, domain: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise ValidationError(f"{name} must be {domain}; got {echo(value)}")
    if all(_is_number(x) for x in value) and not matrix_only:
        rows: list[Any] = value
    elif all(isinstance(r, list) for r in value):
        width = len(value[0])
        for i, row in enumerate(value):
            if not row or len(row) != width:
                raise ValidationError(
                    f"{name} must be rectangular: row {i} has {len(row)} entries, row 0 has {width}"
                )
            for j, x in enumerate(row):
                if not _is_number(x):
                    raise ValidationError(f"{name}[{i}][{j}] must be a number; got {echo(x)}")
        rows = value
    else:
        raise ValidationError(f"{name} must be {domain}; got {echo(value)}")
    v.array(name, rows)  # finiteness, with the offending entry named
    return rows


def _pairs(name: str, value: Any) -> tuple[tuple[int, int], ...]:
    if not isinstance(value, list) or not value:
        raise ValidationError(
            f"{name} must be a non-empty list of integer pairs, "
            f"e.g. [[0, 1], [1, 2]]; got {echo(value)}"
        )
    out = []
    for k, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValidationError(f"{name}[{k}] must be a pair [i, j]; got {echo(pair)}")
        i = v.integer(f"{name}[{k}][0]", pair[0], low=0)
        j = v.integer(f"{name}[{k}][1]", pair[1], low=0)
        out.append((i, j))
    return tuple(out)


def _positive(doc: str) -> Param:
    return Param("real", low=0.0, low_open=True, doc=doc)


def _sub_mechanism(doc: str) -> Param:
    return Param("table", doc=doc)


Builder = Callable[[dict[str, Any]], Any]


#: Mechanism types: ``type -> (keys, builder)``; nested tables ("table" keys) are mechanisms.
MECHANISMS: dict[str, tuple[dict[str, Param], Builder]] = {
    "exact_mean": ({}, lambda p: mech.ExactMean()),
    "linear_statistic": (
        {"A": Param("vector_or_matrix", doc="coefficients of T = A x (k x n, or n for k = 1)")},
        lambda p: mech.LinearStatistic(p["A"]),
    ),
    "cell_suppression": (
        {"h": Param("int", low=1, doc="cells with a count below h are suppressed")},
        lambda p: mech.CellSuppression(p["h"]),
    ),
    "laplace": (
        {"scale": _positive("Laplace scale b (epsilon = 1/b at sensitivity 1)")},
        lambda p: mech.LaplaceMechanism(p["scale"]),
    ),
    "gaussian": (
        {"sigma": _positive("noise standard deviation")},
        lambda p: mech.GaussianMechanism(p["sigma"]),
    ),
    "geometric": (
        {"scale": _positive("two-sided geometric scale b, P(k) ∝ exp(-|k|/b)")},
        lambda p: mech.GeometricMechanism(p["scale"]),
    ),
    "randomized_response": (
        {
            "epsilon": Param("real", low=0.0, doc="keep probability e^eps / (e^eps + k - 1)"),
            "k": Param("int", low=2, required=False, default=2, doc="number of categories"),
        },
        lambda p: mech.RandomizedResponse(p["epsilon"], p["k"]),
    ),
    "finite_kernel": (
        {"matrix": Param("matrix", doc="row-stochastic matrix, row x = M(x, ·)")},
        lambda p: mech.FiniteKernel(p["matrix"]),
    ),
    "joint": (
        {
            "first": _sub_mechanism("the mechanism M"),
            "post": _sub_mechanism("the kernel K applied to M's output; both are published"),
        },
        lambda p: mech.Joint(p["first"], p["post"]),
    ),
    "chain": (
        {
            "first": _sub_mechanism("the mechanism M"),
            "post": _sub_mechanism("the kernel K applied to M's output; only K's is published"),
        },
        lambda p: mech.Chain(p["first"], p["post"]),
    ),
    "composition": (
        {
            "first": _sub_mechanism("the first release of x"),
            "second": _sub_mechanism("the second release of the same x"),
        },
        lambda p: mech.Composition(p["first"], p["second"]),
    ),
}


def _score(name: str) -> Builder:
    def build(p: dict[str, Any]) -> Any:
        module = importlib.import_module("persuasive.scores")
        try:
            factory = getattr(module, name)
        except AttributeError:
            raise ValidationError(
                f"this version of persuasive has no {name}; use another score type"
            ) from None
        return factory(**p)

    return build


_INDEX = Param("int", low=0, required=False, doc="coordinate (0-based); absent: every coordinate")

#: Score types: ``type -> (keys, builder)``.
SCORES: dict[str, tuple[dict[str, Param], Builder]] = {
    "log": ({}, _score("LogScore")),
    "dss": ({}, _score("DawidSebastiani")),
    "marginal_dss": ({"i": _INDEX}, _score("MarginalDSS")),
    "small_cell_log": (
        {
            "i": _INDEX,
            "r": Param(
                "int",
                low=2,
                required=False,
                default=2,
                doc="counts >= r are inherently private (score 0)",
            ),
        },
        _score("SmallCellLogScore"),
    ),
    "interval": ({"s": _positive("length of the Receiver's interval")}, _score("IntervalScore")),
    "brier": ({}, _score("BrierScore")),
    "spherical": ({}, _score("SphericalScore")),
}


def _neighbours(p: dict[str, Any]) -> cls.NeighbourPriors:
    return cls.NeighbourPriors(pairs=p["pairs"], anchored=p["anchored"])


#: Prior classes: ``class -> (keys, builder)``.
PRIOR_CLASSES: dict[str, tuple[dict[str, Param], Builder]] = {
    "neighbours": (
        {
            "anchored": Param(
                "bool",
                required=False,
                default=False,
                doc="true: 𝓗_x (the pair contains the Sender's x); false: 𝓗",
            ),
            "pairs": Param(
                "pairs",
                required=False,
                doc="neighbour relation on datasets 0..K-1; absent: |x - x'| <= 1",
            ),
        },
        _neighbours,
    ),
    "gaussian_mean": (
        {
            "r1": _positive("bound on the standardised error of the prior mean of x̄"),
            "r2": Param(
                "real",
                low=1.0,
                low_open=True,
                doc="bound on the correlation condition number / variance spread",
            ),
            "max_mean_sd": Param(
                "real",
                low=0.0,
                low_open=True,
                required=False,
                doc="bound V on the prior sd of the mean (absent: unbounded, Prop 7's class)",
            ),
        },
        lambda p: cls.GaussianMeanClass(p["r1"], p["r2"], max_mean_sd=p["max_mean_sd"]),
    ),
    "small_cell": (
        {
            "h": Param("int", low=1, doc="small-count threshold"),
            "alpha": Param(
                "real", low=0.0, high=1.0, low_open=True, doc="minimum prior mass on counts below h"
            ),
        },
        lambda p: cls.SmallCellClass(p["h"], p["alpha"]),
    ),
}

#: Risk transforms of the expectation variant (``kind = "ppe"``).
RISKS: tuple[str, ...] = ("mean", "renyi", "kl", "tv", "chi2")

#: Keys of ``[definition]``; ``delta`` only for kind "pp", ``risk``/``alpha`` only for "ppe".
DEFINITION: dict[str, Param] = {
    "kind": Param(
        "str",
        choices=("pp", "ppe"),
        doc='"pp": Definition 3 (tail); "ppe": in expectation (App. C)',
    ),
    "kappa": Param("real", low=0.0, allow_inf=True, doc="allowed relative loss κ"),
    "delta": Param(
        "real",
        low=0.0,
        high=1.0,
        high_open=True,
        required=False,
        default=0.0,
        doc="allowed failure probability δ (kind pp)",
    ),
    "risk": Param(
        "str", choices=RISKS, required=False, default="mean", doc="risk transform (kind ppe)"
    ),
    "alpha": Param(
        "real",
        low=1.0,
        low_open=True,
        required=False,
        doc='Rényi order α (kind ppe with risk = "renyi")',
    ),
    "scores": Param("tables", doc='the privacy scores 𝒮, e.g. [{type = "log"}]'),
    "priors": Param("table", doc='the prior class 𝒬_x, e.g. {class = "neighbours"}'),
}

DEFINITION_KEYS = {
    "pp": ("kind", "kappa", "delta", "scores", "priors"),
    "ppe": ("kind", "kappa", "risk", "alpha", "scores", "priors"),
}

#: Keys of the optional ``[audit]`` table, passed to :func:`persuasive.audit`.
AUDIT: dict[str, Param] = {
    "n_samples": Param("int", low=2, required=False, doc="Monte Carlo sample size"),
    "seed": Param("int", low=0, required=False, doc="random seed (audit's rng)"),
    "n_starts": Param("int", low=1, required=False, doc="refined starts of the Prop 7 search"),
    "confidence": Param(
        "real",
        low=0.0,
        high=1.0,
        low_open=True,
        high_open=True,
        required=False,
        doc="confidence level of Monte Carlo bounds",
    ),
}

#: Top-level keys of a spec.
TOP_LEVEL: dict[str, Param] = {
    "name": Param("str", required=False, doc="short name (default: the file name)"),
    "description": Param("str", required=False, default="", doc="one line for humans"),
    "expected": Param(
        "str",
        choices=("holds", "fails"),
        required=False,
        doc="the verdict the author expects; `persuasive examples` checks it",
    ),
    "mechanism": Param("table", doc="the release mechanism"),
    "definition": Param("table", doc="the privacy guarantee"),
    "audit": Param("table", required=False, doc="options for the audit"),
}


# --------------------------------------------------------------------------------------------
# Reading tables
