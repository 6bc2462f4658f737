"""Hypothesis strategies built from the declared parameter domains (persuasive._domains).

Every strategy here reads only the data of a :class:`~persuasive._domains.Param` (its kind,
bounds, openness, ``allow_inf``, choices, ``ndim``), so a change of a declared domain changes
what the property tests draw. Import it from any test module (``tests/`` is on ``sys.path``)::

    from strategies import invalid_value, valid_value

``valid_value(p)`` draws values inside the domain, ``invalid_value(p)`` values outside it, both
restricted to what a TOML document can hold (numbers, strings, booleans, lists, tables), so
the same value can be passed to the Python API and to the spec parser.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

import persuasive as pp
from persuasive import _domains as dm
from persuasive._domains import Param
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.linear.bounded_error import BoundedErrorLinearClass

#: Cap on drawn magnitudes of unbounded real parameters (the interesting values are small).
REAL_CAP = 1e6
#: How far above the lower bound drawn integers go (the upper bound is tested separately).
INT_SPAN = 50


@st.composite
def stochastic(draw: st.DrawFn, max_side: int = 4) -> list[list[float]]:
    """A row-stochastic matrix as nested lists (a valid ``finite_kernel`` matrix)."""
    k = draw(st.integers(1, max_side))
    j = draw(st.integers(1, max_side))
    rows = draw(
        st.lists(st.lists(st.floats(0.01, 1.0), min_size=j, max_size=j), min_size=k, max_size=k)
    )
    return [[x / sum(r) for x in r] for r in rows]


def _finite_floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def _array(ndim: tuple[int, ...]) -> st.SearchStrategy[Any]:
    options: list[st.SearchStrategy[Any]] = []
    if 0 in ndim:
        options.append(_finite_floats(-10, 10))
    if 1 in ndim:
        options.append(st.lists(_finite_floats(-10, 10), min_size=1, max_size=4))
    if 2 in ndim:
        options.append(
            st.integers(1, 3).flatmap(
                lambda w: st.lists(
                    st.lists(_finite_floats(-10, 10), min_size=w, max_size=w),
                    min_size=1,
                    max_size=3,
                )
            )
        )
    return st.one_of(*options)


def valid_value(p: Param) -> st.SearchStrategy[Any]:
    """Values inside the declared domain of ``p`` (never ``None``).

    Parameters whose constructor adds structure the domain cannot state get values that also
    satisfy it: a ``finite_kernel`` matrix is row-stochastic, neighbour pairs are distinct.
    """
    if p.kind == "real":
        lo = p.low if p.low is not None else -REAL_CAP
        hi = p.high if p.high is not None else REAL_CAP
        inside = st.floats(
            lo,
            hi,
            exclude_min=p.low_open,
            exclude_max=p.high_open,
            allow_nan=False,
            allow_infinity=False,
        )
        return st.one_of(inside, st.just(math.inf)) if p.allow_inf else inside
    if p.kind == "int":
        lo = int(p.low if p.low is not None else -INT_SPAN) + int(p.low_open)
        hi = lo + INT_SPAN if p.high is None else min(int(p.high) - int(p.high_open), lo + INT_SPAN)
        return st.integers(lo, hi)
    if p.kind == "bool":
        return st.booleans()
    if p.kind == "str":
        return st.sampled_from(p.choices) if p.choices else st.text(max_size=20)
    if p.kind == "pairs":
        return st.lists(
            st.tuples(st.integers(0, 5), st.integers(0, 5))
            .filter(lambda t: t[0] != t[1])
            .map(list),
            min_size=1,
            max_size=4,
        )
    if p.kind == "range":
        lo = p.low if p.low is not None else 0.0
        return st.tuples(_finite_floats(lo, REAL_CAP), _finite_floats(lo, REAL_CAP)).map(
            lambda ab: (min(ab), max(ab))
        )
    if p.kind == "array":
        if p == dm.KERNEL_MATRIX:
            return stochastic()
        return _array(p.ndim)
    raise AssertionError(f"no valid-value strategy for kind {p.kind!r}")


_WRONG_TYPE: list[Any] = ["x", {"a": 1}, [1.0], True]


def invalid_value(p: Param) -> st.SearchStrategy[Any]:
    """Values outside the declared domain of ``p`` (TOML-representable)."""
    if p.kind in ("real", "int"):
        outside: list[st.SearchStrategy[Any]] = [st.sampled_from(_WRONG_TYPE), st.just(math.nan)]
        if not p.allow_inf or p.high is not None:
            outside.append(st.just(math.inf))
        if p.low is not None:
            top = p.low if p.low_open else math.nextafter(p.low, -math.inf)
            outside.append(st.floats(top - max(100.0, abs(top) * 1e-6), top, allow_nan=False))
            outside.append(st.just(-math.inf))
        if p.high is not None:
            bottom = p.high if p.high_open else math.nextafter(p.high, math.inf)
            span = max(100.0, abs(bottom) * 1e-6)
            outside.append(st.floats(bottom, bottom + span, allow_nan=False))
            if p.kind == "int":
                outside.append(st.integers(int(p.high) + 1, int(p.high) + 10**6))
        if p.kind == "int":
            base = p.low if p.low is not None else 0
            outside.append(st.floats(0.1, 0.9).map(lambda f: base + 1 + f))
            if p.high is not None:
                outside.append(st.just(1e300))
        return st.one_of(*outside)
    if p.kind == "bool":
        return st.sampled_from(["x", 1, 0, 0.5, [True]])
    if p.kind == "str":
        bad = st.sampled_from([1, 2.5, True, ["pp"]])
        if p.choices:
            return st.one_of(bad, st.text(max_size=10).filter(lambda t: t not in p.choices))
        return bad
    if p.kind == "pairs":
        return st.sampled_from([[], "01", [[0]], [[0, 1, 2]], [[-1, 0]], [[0.5, 1]], [["a", 1]], 3])
    if p.kind == "range":
        return st.sampled_from([(1.0,), (2.0, 1.0), (-1.0, 1.0), (0.0, math.inf), "1:2", 3.0])
    if p.kind == "array":
        bad: list[Any] = ["x", [], [[1.0], [1.0, 2.0]], [1.0, "a"], [[1.0, math.nan]], True]
        if 1 not in p.ndim:
            bad.append([1.0, 2.0])
        if 2 not in p.ndim:
            bad.append([[1.0, 2.0]])
        if 0 not in p.ndim:
            bad.append(1.0)
        return st.sampled_from(bad)
    raise AssertionError(f"no invalid-value strategy for kind {p.kind!r}")


# --------------------------------------------------------------------------------------------
# The Python constructors behind each spec type (for agreement tests)
# --------------------------------------------------------------------------------------------

#: Spec mechanism type -> API constructor (the leaves: no nested mechanism tables).
API_MECHANISMS: dict[str, Any] = {
    "exact_mean": pp.ExactMean,
    "linear_statistic": pp.LinearStatistic,
    "cell_suppression": pp.CellSuppression,
    "laplace": pp.LaplaceMechanism,
    "gaussian": pp.GaussianMechanism,
    "geometric": pp.GeometricMechanism,
    "randomized_response": pp.RandomizedResponse,
    "finite_kernel": pp.FiniteKernel,
}

#: Spec score type -> API constructor.
API_SCORES: dict[str, Any] = {
    "log": pp.LogScore,
    "dss": pp.DawidSebastiani,
    "marginal_dss": pp.MarginalDSS,
    "small_cell_log": pp.SmallCellLogScore,
    "interval": pp.IntervalScore,
    "brier": pp.BrierScore,
    "spherical": pp.SphericalScore,
}

#: Spec prior class -> API constructor.
API_PRIOR_CLASSES: dict[str, Any] = {
    "neighbours": pp.NeighbourPriors,
    "gaussian_mean": pp.GaussianMeanClass,
    "small_cell": pp.SmallCellClass,
    "bounded_error_gaussian": BoundedErrorGaussianClass,
    "bounded_error_linear": BoundedErrorLinearClass,
}
