"""The tables of the spec format: which keys each table has, and how it is built.

The value domain of every key is declared once in :mod:`persuasive._domains` and shared with
the Python API, the command line and the property tests; this module only adds the spec's
structure (which keys a ``type`` or ``class`` has, nested mechanism tables, the top-level and
``[definition]`` layout) and the builders. :mod:`persuasive.spec.parse` reads documents with it
and ``docs/cli.md`` documents it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from persuasive import _domains as dm
from persuasive import classes as cls
from persuasive import mechanisms as mech
from persuasive._domains import Param
from persuasive._validation import echo
from persuasive.errors import ValidationError

__all__ = [
    "AUDIT",
    "DEFINITION",
    "DEFINITION_KEYS",
    "MECHANISMS",
    "PRIOR_CLASSES",
    "RISKS",
    "SCORES",
    "TOP_LEVEL",
    "Builder",
    "Param",
    "echo",
]


def _sub_mechanism(doc: str) -> Param:
    return Param("table", doc=doc)


Builder = Callable[[dict[str, Any]], Any]

_M = dm.MECHANISMS

#: Mechanism types: ``type -> (keys, builder)``; nested tables ("table" keys) are mechanisms.
MECHANISMS: dict[str, tuple[dict[str, Param], Builder]] = {
    "exact_mean": (_M["exact_mean"], lambda p: mech.ExactMean()),
    "linear_statistic": (_M["linear_statistic"], lambda p: mech.LinearStatistic(p["A"])),
    "cell_suppression": (_M["cell_suppression"], lambda p: mech.CellSuppression(p["h"])),
    "laplace": (_M["laplace"], lambda p: mech.LaplaceMechanism(p["scale"])),
    "gaussian": (_M["gaussian"], lambda p: mech.GaussianMechanism(p["sigma"])),
    "geometric": (_M["geometric"], lambda p: mech.GeometricMechanism(p["scale"])),
    "randomized_response": (
        _M["randomized_response"],
        lambda p: mech.RandomizedResponse(p["epsilon"], p["k"]),
    ),
    "finite_kernel": (_M["finite_kernel"], lambda p: mech.FiniteKernel(p["matrix"])),
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


_S = dm.SCORES

#: Score types: ``type -> (keys, builder)``.
SCORES: dict[str, tuple[dict[str, Param], Builder]] = {
    "log": (_S["log"], _score("LogScore")),
    "dss": (_S["dss"], _score("DawidSebastiani")),
    "marginal_dss": (_S["marginal_dss"], _score("MarginalDSS")),
    "small_cell_log": (_S["small_cell_log"], _score("SmallCellLogScore")),
    "interval": (_S["interval"], _score("IntervalScore")),
    "brier": (_S["brier"], _score("BrierScore")),
    "spherical": (_S["spherical"], _score("SphericalScore")),
}


def _neighbours(p: dict[str, Any]) -> cls.NeighbourPriors:
    return cls.NeighbourPriors(pairs=p["pairs"], anchored=p["anchored"])


def _bounded_gaussian(p: dict[str, Any]) -> Any:
    """Prop 7's class with a bounded error on every person (``docs/release_means.md`` (e));
    an absent ``max_person_error`` is refused by the class, naming it."""
    from persuasive.classes.bounded_error import BoundedErrorGaussianClass

    return BoundedErrorGaussianClass(
        p["r1"], p["r2"], max_mean_sd=p["max_mean_sd"], max_person_error=p["max_person_error"]
    )


def _bounded_linear(p: dict[str, Any]) -> Any:
    """The linear class with a bounded error on every person (``docs/linear_bounded.md``); the
    statistics A are the mechanism's."""
    from persuasive.linear.bounded_error import BoundedErrorLinearClass

    return BoundedErrorLinearClass(
        p["r1"], p["r2"], max_stat_sd=p["max_stat_sd"], max_person_error=p["max_person_error"]
    )


_C = dm.PRIOR_CLASSES

#: Prior classes: ``class -> (keys, builder)``.
PRIOR_CLASSES: dict[str, tuple[dict[str, Param], Builder]] = {
    "neighbours": (_C["neighbours"], _neighbours),
    "gaussian_mean": (
        _C["gaussian_mean"],
        lambda p: cls.GaussianMeanClass(p["r1"], p["r2"], max_mean_sd=p["max_mean_sd"]),
    ),
    "small_cell": (_C["small_cell"], lambda p: cls.SmallCellClass(p["h"], p["alpha"])),
    "bounded_error_gaussian": (_C["bounded_error_gaussian"], _bounded_gaussian),
    "bounded_error_linear": (_C["bounded_error_linear"], _bounded_linear),
}

#: Risk transforms of the expectation variant (``kind = "ppe"``).
RISKS: tuple[str, ...] = dm.RISKS

#: Keys of ``[definition]``; ``delta`` only for kind "pp", ``risk``/``alpha`` only for "ppe".
DEFINITION: dict[str, Param] = {
    "kind": Param(
        "str",
        choices=("pp", "ppe"),
        doc='"pp": Definition 3 (tail); "ppe": in expectation (App. C)',
    ),
    "kappa": dm.KAPPA,
    "delta": dm.DELTA.but(doc="allowed failure probability δ (kind pp)"),
    "risk": dm.RISK.but(doc="risk transform (kind ppe)"),
    "alpha": dm.RENYI_ORDER.but(required=False, doc='Rényi order α (kind ppe with risk = "renyi")'),
    "scores": Param("tables", doc='the privacy scores 𝒮, e.g. [{type = "log"}]'),
    "priors": Param("table", doc='the prior class 𝒬_x, e.g. {class = "neighbours"}'),
}

DEFINITION_KEYS = {
    "pp": ("kind", "kappa", "delta", "scores", "priors"),
    "ppe": ("kind", "kappa", "risk", "alpha", "scores", "priors"),
}

#: Keys of the optional ``[audit]`` table, passed to :func:`persuasive.audit`.
AUDIT: dict[str, Param] = {
    **dm.AUDIT,
    "seed": dm.AUDIT["seed"].but(doc="random seed (audit's rng)"),
    "n_starts": dm.AUDIT["n_starts"].but(doc="refined starts of the Prop 7 search"),
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
