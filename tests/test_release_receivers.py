"""Receiver models of count-table releases, against scipy, dense grids and closed forms."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import persuasive as pp
from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    SmallCellReceiver,
    check_thresholds,
    receiver_from_dict,
)

REL = 1e-10  # the models shrink α by 1e-12 (pessimistic rounding); compare above that


def _nb_cdf(k: int, size: float, mean: float) -> float:
    """NB(size, mean) cdf from the pmf formula written out with lgamma (independent of scipy)."""
    p = size / (size + mean)
    total = 0.0
    for j in range(k + 1):
        log_pmf = (
            math.lgamma(j + size)
            - math.lgamma(size)
            - math.lgamma(j + 1)
            + size * math.log(p)
            + (j * math.log1p(-p) if j else 0.0)
        )
        total += math.exp(log_pmf)
    return total


@pytest.mark.parametrize("h", [1, 2, 3, 5, 10, 30])
@pytest.mark.parametrize(("lo", "hi"), [(0.0, 0.5), (0.5, 4.0), (2.0, 25.0)])
def test_poisson_alpha_is_cdf_at_mean_max_and_grid_minimum(h: int, lo: float, hi: float) -> None:
    rc = PoissonReceiver(lo, hi)
    grid = np.linspace(lo, hi, 2001)
    on_grid = stats.poisson.cdf(h - 1, grid)
    assert np.all(np.diff(on_grid) <= 1e-15)  # non-increasing in the mean (stochastic order)
    assert rc.alpha(h) == pytest.approx(stats.poisson.cdf(h - 1, hi), rel=REL)
    assert rc.alpha(h) == pytest.approx(on_grid.min(), rel=REL)
    assert rc.alpha(h) <= on_grid.min()  # pessimistic: never above the true infimum
    closed = math.exp(-hi) * sum(hi**j / math.factorial(j) for j in range(h))
    assert rc.alpha(h) == pytest.approx(closed, rel=1e-9)


@pytest.mark.parametrize("h", [1, 2, 4, 9])
@pytest.mark.parametrize(("lo", "hi", "size"), [(0.1, 3.0, 0.5), (1.0, 4.0, 2.0), (0, 20, 30)])
def test_nb_alpha_is_cdf_at_mean_max_and_grid_minimum(
    h: int, lo: float, hi: float, size: float
) -> None:
    rc = NegativeBinomialReceiver(lo, hi, size)
    grid = np.linspace(lo, hi, 2001)
    on_grid = stats.nbinom.cdf(h - 1, size, size / (size + grid))
    assert np.all(np.diff(on_grid) <= 1e-15)
    assert rc.alpha(h) == pytest.approx(on_grid.min(), rel=REL)
    assert rc.alpha(h) <= on_grid.min()
    assert rc.alpha(h) == pytest.approx(_nb_cdf(h - 1, size, hi), rel=1e-9)
    law = rc.worst_prior(h)
    assert law.mean() == pytest.approx(hi) and law.var() == pytest.approx(hi + hi**2 / size)


def test_worst_priors_attain_alpha() -> None:
    for rc in (PoissonReceiver(1, 6), NegativeBinomialReceiver(1, 6, 3)):
        for h in (2, 5, 8):
            assert rc.worst_prior(h).cdf(h - 1) == pytest.approx(rc.alpha(h), rel=REL)
    pmf = SmallCellReceiver(0.3).worst_prior(4)
    assert pmf.sum() == pytest.approx(1.0) and pmf[:4].sum() == pytest.approx(0.3)
    assert np.all(pmf[:4] > 0)


def test_worst_prior_is_in_the_class_and_boundary_members_are_not() -> None:
    rc = PoissonReceiver(0.5, 4.0)
    h = 3
    cls = pp.SmallCellClass(h, rc.alpha(h))
    assert cls.contains(pp.IndependentCellsPrior([rc.worst_prior(h)]))
    assert cls.contains(pp.IndependentCellsPrior([stats.poisson(0.5)]))
    assert not cls.contains(pp.IndependentCellsPrior([stats.poisson(4.5)]))


@pytest.mark.parametrize(
    "rc",
    [SmallCellReceiver(0.2), PoissonReceiver(0, 4), NegativeBinomialReceiver(0.5, 4, 1.5)],
)
def test_prop8_kappa_is_minus_log_alpha(rc: object) -> None:
    for h in (2, 3, 7):
        alpha = rc.alpha(h)  # type: ignore[attr-defined]
        # a hair of slack: the certificate may round κ outwards by a few ulps
        d = pp.PersuasivePrivacy(
            pp.SmallCellLogScore(r=h), pp.SmallCellClass(h, alpha), -math.log(alpha) + 1e-12, 0.0
        )
        cert = pp.certify(pp.CellSuppression(h), d)
        assert cert.holds and cert.exact
        assert cert.kappa == pytest.approx(-math.log(alpha), rel=1e-14)
        assert rc.kappa(h) == pytest.approx(cert.kappa, rel=1e-14)  # type: ignore[attr-defined]


def test_worst_prior_loss_through_the_engine_equals_kappa() -> None:
    """The engine's relative loss under the worst prior, on a suppressed small cell, is κ."""
    h = 4
    for rc in (SmallCellReceiver(0.25), PoissonReceiver(1, 5), NegativeBinomialReceiver(1, 5, 2)):
        q = pp.IndependentCellsPrior([rc.worst_prior(h)])
        for x in range(h):
            loss = pp.relative_loss(pp.SmallCellLogScore(r=h), q, pp.CellSuppression(h), [x])
            assert loss == pytest.approx(rc.kappa(h), rel=1e-9)


def test_describe_round_trips_through_json() -> None:
    for rc in (SmallCellReceiver(0.2), PoissonReceiver(0, 4), NegativeBinomialReceiver(1, 3, 2)):
        doc = json.loads(json.dumps(rc.describe()))
        assert "model" in doc
        assert receiver_from_dict(doc) == rc
    assert repr(SmallCellReceiver(alpha=0.5)) == "SmallCellReceiver(alpha=0.5)"


def test_small_cell_alpha_is_constant_and_kappa_zero_at_alpha_one() -> None:
    rc = SmallCellReceiver(1.0)
    assert rc.alpha(2) == rc.alpha(50) == 1.0
    assert rc.kappa(5) == 0.0 and math.copysign(1.0, rc.kappa(5)) == 1.0


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: SmallCellReceiver(0.0), "alpha must be in (0, 1]; got 0.0"),
        (lambda: SmallCellReceiver(1.5), "alpha must be in (0, 1]; got 1.5"),
        (lambda: SmallCellReceiver(float("nan")), "alpha must be a finite number; got nan"),
        (lambda: SmallCellReceiver("0.2"), "alpha must be a real number; got '0.2'"),
        (lambda: PoissonReceiver(-1, 2), "mean_min must be in [0, inf); got -1"),
        (lambda: PoissonReceiver(0, float("inf")), "mean_max must be a finite number; got inf"),
        (lambda: PoissonReceiver(3, 2), "mean_max must be at least mean_min = 3; got 2"),
        (lambda: NegativeBinomialReceiver(0, 2, 0), "size must be in (0, inf); got 0"),
        (lambda: NegativeBinomialReceiver(0, 2, -1.0), "size must be in (0, inf); got -1.0"),
        (lambda: PoissonReceiver(0, 2).alpha(0), "h must be an integer in [1, 1000000]; got 0"),
        (
            lambda: PoissonReceiver(0, 2).alpha(10**30),
            "h must be an integer in [1, 1000000]; got 1000000000000000000000000000000",
        ),
        (
            lambda: PoissonReceiver(0, 2).kappa(1e30),
            "h must be an integer in [1, 1000000]; got 1e+30",
        ),
        (
            lambda: NegativeBinomialReceiver(0, 2, 1.0).worst_prior(2**31),
            "h must be an integer in [1, 1000000]; got 2147483648",
        ),
        (lambda: SmallCellReceiver(0.5).worst_prior(10**7), "h must be an integer in [1, 1000000]"),
        (lambda: PoissonReceiver(0, 2).alpha(2.5), "h must be an integer; got 2.5"),
        (lambda: PoissonReceiver(0, 2).alpha(True), "h must be an integer; got True"),
        (lambda: NegativeBinomialReceiver(0, 2, math.inf), "size must be a finite number; got inf"),
        (lambda: NegativeBinomialReceiver(0, 2, "1"), "size must be a real number; got '1'"),
        (lambda: receiver_from_dict({"alpha": 0.2}), "receiver.model is required"),
        (lambda: receiver_from_dict({"model": "zip"}), "receiver.model must be one of"),
        (
            lambda: receiver_from_dict({"model": "poisson", "mean_max": 2}),
            "receiver.mean_min is required",
        ),
        (
            lambda: receiver_from_dict({"model": "small_cell", "alpha": 0.2, "h": 3}),
            "unknown key 'receiver.h'",
        ),
    ],
)
def test_bad_parameters(make: object, needle: str) -> None:
    with pytest.raises(pp.ValidationError) as err:
        make()  # type: ignore[operator]
    assert needle in str(err.value)


@given(
    lo=st.floats(0, 20),
    width=st.floats(0, 20),
    size=st.floats(0.05, 50),
    h=st.integers(1, 60),
)
def test_alpha_nondecreasing_in_h(lo: float, width: float, size: float, h: int) -> None:
    for rc in (PoissonReceiver(lo, lo + width), NegativeBinomialReceiver(lo, lo + width, size)):
        a, b = rc.alpha(h), rc.alpha(h + 1)
        assert 0.0 <= a <= b <= 1.0
        assert rc.kappa(h) >= rc.kappa(h + 1) >= 0.0


@pytest.mark.parametrize(
    ("h", "r", "message"),
    [
        (10**30, None, "h must be an integer in [2, 1000000]; got 1000000000000000000000000000000"),
        (1e30, None, "h must be an integer in [2, 1000000]; got 1e+30"),
        (2**31 - 1, None, "h must be an integer in [2, 1000000]; got 2147483647"),
        (0, None, "h must be an integer >= 2: counts below h are suppressed"),
        (2.5, None, "h must be an integer; got 2.5"),
        (5, 1, "r must be an integer in [2, 1000000]; got 1"),
        (5, 6, "r = 6 exceeds h = 5"),
    ],
)
def test_thresholds_are_checked_against_the_declared_domain(h, r, message: str) -> None:  # type: ignore[no-untyped-def]
    # A huge --h reaches a clear error, never scipy (before: an overflow inside poisson.cdf).
    with pytest.raises(pp.ValidationError) as err:
        check_thresholds(h, r)
    assert str(err.value).startswith(message)


def test_largest_threshold_is_usable() -> None:
    from persuasive import _domains as dm

    assert check_thresholds(dm.H_MAX) == (dm.H_MAX, dm.H_MAX)
    alpha = PoissonReceiver(0.0, 4.0).alpha(dm.H_MAX)
    assert alpha == pytest.approx(1.0, rel=1e-11) and alpha <= 1.0
    assert SmallCellReceiver(0.5).worst_prior(dm.H_MAX).sum() == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda v: SmallCellReceiver(v), "alpha"),
        (lambda v: PoissonReceiver(v, 10.0), "mean_min"),
        (lambda v: PoissonReceiver(0.0, v), "mean_max"),
        (lambda v: NegativeBinomialReceiver(0.0, 2.0, v), "size"),
    ],
)
@given(st.data())
def test_receiver_parameters_follow_their_declared_domain(make, name: str, data) -> None:  # type: ignore[no-untyped-def]
    from strategies import invalid_value, valid_value

    from persuasive import _domains as dm

    params = {"alpha": dm.SMALL_CELL_ALPHA, "mean_min": dm.CELL_MEAN, "mean_max": dm.CELL_MEAN}
    p = params.get(name, dm.NEGBIN_SIZE)
    good = data.draw(valid_value(p).filter(lambda x: name != "mean_min" or x <= 10.0))
    make(good)
    with pytest.raises(pp.ValidationError, match=f"^{name} must"):
        make(data.draw(invalid_value(p)))
