"""Guarantee sentences a reader who never heard of the framework can follow (issue 11).

Every kind's statement (``guarantee.statement`` of its certificate) and ``Certificate.explain()``
are built over a grid of parameters and checked for internal symbols: no ``_`` or ``^``, no
class name of the library (every CamelCase class of every ``persuasive`` module, collected
here), no Python repr (``None``, ``True``, ``h=10``, ``[...]``, ``np.float64``, ``inf``). Each
statement states κ once with its unit, and the line that explains the unit gives the factor
e^κ (log score: a probability) or e^(κ/2) (Dawid–Sebastiani score of a Gaussian belief: a
density), computed here independently and rounded to 2 significant digits as printed.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import math
import pkgutil
import re
from typing import Any

import numpy as np
import polars as pl
import pytest

import persuasive
from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    SmallCellReceiver,
)
from persuasive.release.linear import release_linear
from persuasive.report.kinds.margins import MarginsParams, margins_sentence
from persuasive.report.kinds.mean import KIND as MEAN
from persuasive.report.kinds.mean import MeanParams
from persuasive.report.kinds.table import KIND as TABLE
from persuasive.report.kinds.table import TableParams
from persuasive.report.words import factor, guarantee_sentence, kappa_text


def _class_names() -> set[str]:
    """Every class defined in a module of ``persuasive`` whose name could only be code:
    CamelCase (two capitals or more) or with an underscore."""
    found: set[str] = set()
    for info in pkgutil.walk_packages(persuasive.__path__, "persuasive."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (adapters)
            continue
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__.startswith("persuasive") and (
                sum(c.isupper() for c in name) >= 2 or "_" in name
            ):
                found.add(name)
    return found


CLASSES = _class_names()
REPR = re.compile(
    r"\bNone\b|\bTrue\b|\bFalse\b|\w\(\w+=|\[['\d]|\{'|np\.|object at|\binf\b|\bnan\b"
    r"|\de[+-]?\d|c_Phi|sigma|sqrt\("
)
UNIT = re.compile(
    r"by at most ([\d,.]+(?: million| billion| trillion)?|more than a thousand trillion) "
    r"\(e to the power κ(/2)?"
)
SCALE = {"million": 1e6, "billion": 1e9, "trillion": 1e12}


def _clean(text: str) -> None:
    assert "_" not in text and "^" not in text, text
    leaked = [name for name in CLASSES if re.search(rf"\b{name}\b", text)]
    assert not leaked, (leaked, text)
    assert not REPR.search(text), (REPR.search(text), text)


def _unit(text: str, kappa: float, *, density: bool) -> None:
    """κ once, with its unit; the factor printed is e^κ (or e^(κ/2)) to 2 significant digits."""
    assert text.count(f"κ = {kappa_text(kappa)} nats") == 1, text
    found = UNIT.findall(text)
    assert len(found) == 1, text
    number, half = found[0]
    assert bool(half) is density, text
    expected = math.exp(kappa / 2 if density else kappa)
    if number.startswith("more than"):
        assert expected >= 1e15
    else:
        digits, _, scale = number.partition(" ")
        shown = float(digits.replace(",", "")) * SCALE.get(scale, 1.0)
        assert shown == pytest.approx(float(f"{expected:.2g}"), rel=1e-12), (number, expected)
    assert number == factor(expected)


def test_class_names_are_collected() -> None:
    assert {"GaussianMeanClass", "PoissonReceiver", "SmallCellLogScore", "CellSuppression"} <= (
        CLASSES
    )


RECEIVERS = [
    SmallCellReceiver(0.05),
    SmallCellReceiver(0.2),
    SmallCellReceiver(0.9),
    PoissonReceiver(0.5, 3.0),
    PoissonReceiver(0.0, 40.0),
    NegativeBinomialReceiver(1.0, 40.0, size=1.0),
    NegativeBinomialReceiver(0.5, 4.0, size=2.5),
]


@pytest.mark.parametrize("receiver", RECEIVERS, ids=repr)
@pytest.mark.parametrize(("h", "r"), [(2, 2), (5, 5), (10, 10), (10, 3), (100, 100)])
@pytest.mark.parametrize("target", [None, 0.5, 10.0])
def test_table_statements(receiver: Any, h: int, r: int, target: float | None) -> None:
    body = TABLE.certify(TableParams(h, r, receiver, ("area",), "n", target))
    text = body.guarantee["statement"]
    _clean(text)
    _clean(body.certificate.explain())
    kappa = body.guarantee["kappa"]
    if math.isfinite(kappa):
        _unit(text, kappa, density=False)
        assert f"below {h}" in text and f"true count is below {r}" in text
        assert ("NOT met" in text) is (target is not None and kappa > target)
        # explain(): the same factor for the log score
        assert f"at most {factor(math.exp(kappa))} (e to the power κ)" in (
            body.certificate.explain()
        )


@pytest.mark.parametrize(
    ("r1", "r2", "noise", "group"),
    [
        *itertools.product([0.5, 1.0, 4.0], [1.5, 4.0, 100.0], [None], [None, "region"]),
        (1.0, 4.0, 0.5, None),
        (1.0, 4.0, 2.0, "region"),
    ],
)
def test_mean_statements(r1: float, r2: float, noise: float | None, group: str | None) -> None:
    delta = 0.0 if noise is None else 0.05
    v = None if noise is None else 1.0
    p = MeanParams(r1, r2, noise, v, delta, "income", group, None)
    body = MEAN.certify(p)
    text = body.guarantee["statement"]
    _clean(text)
    _clean(body.certificate.explain())
    _unit(text, body.guarantee["kappa"], density=True)
    assert "“income”" in text  # the column is named
    assert ("except with probability at most 0.05" in text) is (noise is not None)
    assert f"explains at most {100 * (1 - 1 / r2):.3g} %" in text


@pytest.mark.parametrize(("r1", "r2"), [(1.0, 4.0), (0.5, 10.0)])
@pytest.mark.parametrize("noise", [None, 0.5])
def test_linear_statements(r1: float, r2: float, noise: float | None) -> None:
    rng = np.random.default_rng(3)
    df = pl.DataFrame({"y": rng.normal(size=12), "g": [1, 2, 3] * 4})
    stats = [("all", "mean", "true"), ("g1", "sum", "g = 1"), ("g2", "mean", "g = 2")]
    extra: dict[str, Any] = {} if noise is None else {"noise_sd": noise, "max_stat_sd": 1.0}
    rel = release_linear(df, value="y", statistics=stats, r1=r1, r2=r2, **extra)
    from persuasive.report.kinds.linear import KIND as LINEAR

    body = LINEAR.certify(rel.params)
    text = body.guarantee["statement"]
    assert rel.statement() == text  # the release and its certificate say the same
    _clean(text)
    _clean(rel.certificate.explain())
    _unit(text, body.guarantee["kappa"], density=True)
    assert "these 3 linear statistics of “y”" in text


def test_linear_refusal_is_plain() -> None:
    df = pl.DataFrame({"y": [1.0, 2.0, 6.0, 3.0]})
    stats = [("all", "mean", "true"), ("no3", "mean", "row_id != 3")]
    rel = release_linear(df, value="y", statistics=stats, r1=1.0, r2=4.0)
    text = rel.statement()
    assert "1 individual exactly" in text and "individual(s)" not in text


@pytest.mark.parametrize("receiver", RECEIVERS[3:], ids=repr)
@pytest.mark.parametrize("margins", [("a",), ("a", "b"), ("a+b",), ("total",)])
@pytest.mark.parametrize(("kappa", "disclosed"), [(0.2, 0), (4.2234, 1), (12.0, 3)])
def test_margins_statements(
    receiver: Any, margins: tuple[str, ...], kappa: float, disclosed: int
) -> None:
    p = MarginsParams(receiver, 10, 10, margins, ("a", "b"), "n", None)
    text = margins_sentence(p, kappa, certified=True, disclosed=disclosed)
    _clean(text)
    _unit(text, kappa, density=False)
    assert ("1 suppressed cell is" in text) is (disclosed == 1)
    _clean(margins_sentence(p, kappa, certified=False, disclosed=0))


def test_guarantee_sentence_of_a_document() -> None:
    body = TABLE.certify(TableParams(10, 10, PoissonReceiver(1, 40), ("county",), "n"))
    doc = {"guarantee": body.guarantee}
    assert guarantee_sentence(doc) == body.guarantee["statement"]
    assert "Poisson with mean between 1 and 40" in guarantee_sentence(doc)


def test_numbers_and_factors_far_out_of_range() -> None:
    """Whole numbers from 1e15 on keep their exponent (1e20 used to read "1": the zeros of the
    written-out digits were stripped as if they were decimals), and a κ beyond the float range
    of e**κ is written in words instead of raising OverflowError."""
    from persuasive.report.words import number, unit_line

    for x in (1e15, 1e20, 3.5e300, -2e18):
        assert float(number(x)) == x
    huge = unit_line(1500.0, what="the true count")
    assert "more than a thousand trillion" in huge
    assert "more than a thousand trillion" in unit_line(2000.0, what="x", density=True)
