"""Magnitude-table certificates (docs/magnitude.md) against independent computations: dense
Gaussian conditioning with numpy, Monte Carlo, brute force over coalitions and over the class,
and the audit (never above the certificate)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

from persuasive.errors import ValidationError
from persuasive.magnitude import (
    MagnitudeClass,
    audit_cells,
    certify_cells,
    contributions,
    from_cells,
    loss,
    witness,
)


def dense_loss(x_rest, k, mu, sig):
    """Condition N(mu, sig) on 1ᵀx = t with the generic formula (pseudo-inverse), take the
    full posterior covariance and the marginal DSS of coordinate k."""
    a = np.ones((1, x_rest.size))
    g = a @ sig @ a.T
    gain = sig @ a.T @ np.linalg.pinv(g)
    post_mean = mu + (gain @ (a @ x_rest - a @ mu)).ravel()
    post_cov = sig - gain @ a @ sig

    def dss(m, var):
        return math.log(var) + (x_rest[k] - m) ** 2 / var

    return dss(mu[k], sig[k, k]) - dss(post_mean[k], post_cov[k, k])


def cells(rng, n_cells=12, low=2, high=7):
    return [list(rng.lognormal(0.0, 1.2, size=rng.integers(low, high + 1))) for _ in range(n_cells)]


def test_closed_form_matches_certificate_example():
    # 1 + log(1 + 9/(1 + 1)) for the outsider of (3, 1, 1); the insider 2 reads 1 + log(10)
    cert = certify_cells(from_cells([[3.0, 1.0, 1.0]]), MagnitudeClass(1.0), 1)
    assert cert.cell_outsider[0] == pytest.approx(1.0 + math.log(1 + 9 / 2), rel=1e-12)
    assert cert.cell[0] == pytest.approx(1.0 + math.log(10.0), rel=1e-12)


@pytest.mark.parametrize("gamma", [1.0, 2.5])
def test_witness_attains_the_certificate_by_dense_conditioning(gamma):
    rng = np.random.default_rng(3)
    cls = MagnitudeClass(1.3, 1.0, gamma)
    c = from_cells(cells(rng, low=3))
    for m in (0, 1, 2):
        cert = certify_cells(c, cls, m)
        for cell in range(c.n_cells):
            x = c.of_cell(cell)
            coalition = list(range(1, m + 1))
            if x.size - m <= 1:
                assert math.isinf(cert.cell[cell])
                continue
            mu, sig = witness(x, coalition, 0, cls)
            rest = np.asarray([j for j in range(x.size) if j not in coalition])
            got = dense_loss(x[rest], 0, mu, sig)
            assert got == pytest.approx(cert.cell[cell], rel=1e-9)
            assert loss(x, coalition, 0, mu, sig) == pytest.approx(got, rel=1e-9)


def test_loss_by_monte_carlo():
    """The posterior moments from samples of the prior (regression of x_i on the total)."""
    rng = np.random.default_rng(7)
    x = np.array([6.0, 3.0, 2.0, 1.5, 1.0])
    cls = MagnitudeClass(1.0, 2.0, 1.5)
    from persuasive.magnitude.audit import _random_phi, class_member

    phi = _random_phi(4, 2.0, rng)
    mu, sig = class_member(x, [1], 0, cls, spreads=[1.5, 1.0, 1.2, 1.0], phi=phi, w=0.7)
    draws = rng.multivariate_normal(mu, sig, size=400_000)
    s = draws.sum(axis=1)
    c = np.cov(draws[:, 0], s)
    beta = c[0, 1] / c[1, 1]
    resid = draws[:, 0] - beta * s
    t = x[[0, 2, 3, 4]].sum()
    m = mu[0] + beta * (t - mu.sum())
    tau2 = resid.var()
    mc = math.log(sig[0, 0] / tau2) + (x[0] - mu[0]) ** 2 / sig[0, 0] - (x[0] - m) ** 2 / tau2
    exact = loss(x, [1], 0, mu, sig)
    assert mc == pytest.approx(exact, abs=0.02)
    assert exact <= certify_cells(from_cells([x]), cls, 1).cell[0]


@pytest.mark.parametrize("m", [0, 1, 2])
def test_each_contributor_against_every_coalition_by_brute_force(m):
    """κ of each contribution = the max over *all* coalitions of ≤ m others of the witness
    loss (enumerated), so the m largest others are indeed the worst coalition."""
    rng = np.random.default_rng(11)
    cls = MagnitudeClass(0.8, 1.0, 1.7)
    c = from_cells(cells(rng, n_cells=6, low=2, high=6))
    cert = certify_cells(c, cls, m)
    for cell in range(c.n_cells):
        x = c.of_cell(cell)
        start = int(c.start[cell])
        for i in range(x.size):
            others = [j for j in range(x.size) if j != i]
            best = -math.inf
            for size in range(0, m + 1):
                for coalition in itertools.combinations(others, size):
                    if x.size - size <= 1:
                        best = math.inf
                        continue
                    best = max(best, loss(x, list(coalition), i, *witness(x, coalition, i, cls)))
            want = cert.contributor_insider[start + i]
            assert best == pytest.approx(want, rel=1e-9) or (math.isinf(best) and math.isinf(want))


def test_no_member_of_the_class_beats_the_certificate():
    """Brute force over the class (random spreads within γ, random correlations with
    c_Φ ≤ r2, the worst mean for each): every loss ≤ κ."""
    rng = np.random.default_rng(5)
    from persuasive.magnitude.audit import _random_phi, class_member

    for r2, gamma in [(1.0, 1.0), (1.0, 3.0), (2.0, 1.0), (4.0, 2.0)]:
        cls = MagnitudeClass(1.0, r2, gamma)
        x = np.sort(rng.lognormal(0, 1, size=5))[::-1]
        kappa = certify_cells(from_cells([x]), cls, 1).cell[0]
        for _ in range(200):
            s = rng.uniform(1.0, gamma, size=4)
            phi = _random_phi(4, r2, rng)
            mu, sig = class_member(x, [1], 0, cls, spreads=s, phi=phi)
            assert loss(x, [1], 0, mu, sig) <= kappa * (1 + 1e-12)


def test_audit_never_exceeds_the_certificate():
    rng = np.random.default_rng(2)
    c = from_cells(cells(rng, n_cells=20, low=1, high=8))
    for r2, gamma, m in [(1.0, 1.0, 1), (1.0, 2.0, 2), (3.0, 1.5, 1), (2.0, 1.0, 0)]:
        cls = MagnitudeClass(1.0, r2, gamma)
        cert = certify_cells(c, cls, m).cell
        found = audit_cells(c, cls, m, draws=10, rng=rng)
        finite = np.isfinite(cert)
        # floating point only: the certificate carries a (1 + 4nε) margin
        assert np.all(found[finite] <= cert[finite] * (1 + 1e-12))
        assert np.all(np.isinf(found[~finite]))
        if r2 == 1.0:  # sharp: the witness attains it
            np.testing.assert_allclose(found[finite], cert[finite], rtol=1e-9)


def test_two_contributor_cells_expose_each_to_the_other():
    rng = np.random.default_rng(4)
    c = from_cells([list(rng.lognormal(size=2)) for _ in range(10)] + [[5.0, 1.0, 1.0]])
    cert = certify_cells(c, MagnitudeClass(1.0), 1)
    assert cert.exposed.tolist() == [True] * 10 + [False]
    assert np.all(np.isinf(cert.contributor_insider[:20]))
    assert np.all(np.isfinite(cert.contributor_outsider[:20]))  # not to an outsider
    out = certify_cells(c, MagnitudeClass(1.0), 0)
    assert not out.exposed.any()
    assert certify_cells(from_cells([[3.0]]), MagnitudeClass(1.0), 0).exposed.tolist() == [True]


def test_holdings_are_one_contributor_and_one_coalition():
    df = pl.DataFrame(
        {
            "k": ["a"] * 4 + ["b"] * 3,
            "firm": ["f1", "f2", "f3", "f4", "f1", "f5", "f5"],
            "v": [10.0, 6.0, 4.0, 1.0, 2.0, 3.0, 0.5],
            "group": ["G", None, "G", None, "G", None, None],
        }
    )
    c = contributions(df, keys=["k"], value="v", unit="firm", holding="group")
    assert c.of_cell(0).tolist() == [14.0, 6.0, 1.0]
    assert c.label[:3] == ("holding G", "f2", "f4")
    assert c.of_cell(1).tolist() == [3.5, 2.0]  # f5's two rows summed
    plain = contributions(df, keys=["k"], value="v", unit="firm")
    assert plain.count.tolist() == [4, 2]
    cert = certify_cells(c, MagnitudeClass(1.0), 1)
    assert cert.cell[0] == pytest.approx(1.0 + math.log1p(14.0**2 / 1.0), rel=1e-12)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ({"k": ["a"], "id": [1], "v": [-1.0]}, "column 'v', row 1: -1.0 is negative"),
        (
            {"k": ["a", "a"], "id": [1, 2], "v": [1.0, None]},
            "column 'v', row 2: the value is missing",
        ),
        ({"k": ["a"], "id": [None], "v": [1.0]}, "column 'id', row 1: the value is missing"),
        ({"k": ["a"], "id": [1], "v": [float("nan")]}, "is not finite"),
        ({"k": ["a"], "id": [1], "v": ["x"]}, "column 'v', row 1: 'x' is not a number"),
        ({"k": ["a"], "id": [1], "v": [True]}, "value column 'v' must be numeric"),
    ],
)
def test_bad_microdata_is_one_line(frame, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(")) as err:
        contributions(pl.DataFrame(frame), keys=["k"], value="v", unit="id")
    assert "\n" not in str(err.value)


def test_bad_class_and_holding():
    with pytest.raises(ValidationError, match=r"r2 must be in \[1, inf\); got 0.5"):
        MagnitudeClass(1.0, 0.5)
    with pytest.raises(ValidationError, match=r"insiders must be an integer in \[0, inf\]"):
        certify_cells(from_cells([[1.0]]), MagnitudeClass(), -1)
    df = pl.DataFrame({"k": ["a", "b"], "id": [1, 1], "v": [1.0, 2.0], "h": ["G", "H"]})
    with pytest.raises(ValidationError, match="unit '1' belongs to more than one holding"):
        contributions(df, keys=["k"], value="v", unit="id", holding="h")


def sized_cells(rng, n_cells=8, low=2, high=6):
    vals, sizes = [], []
    for _ in range(n_cells):
        n = int(rng.integers(low, high + 1))
        vals.append(list(rng.lognormal(0.0, 1.2, size=n) * (rng.uniform(size=n) > 0.2)))
        sizes.append(list(rng.lognormal(0.0, 1.0, size=n)))
    return vals, sizes


@pytest.mark.parametrize("m", [0, 1, 2])
def test_public_sizes_against_every_coalition_by_dense_conditioning(m):
    """With public sizes the spreads scale with them: κ of each contribution is the max over
    all coalitions of ≤ m others of the witness loss, computed by dense conditioning."""
    rng = np.random.default_rng(21)
    cls = MagnitudeClass(1.1, 1.0, 1.4)
    vals, sizes = sized_cells(rng)
    c = from_cells(vals, sizes)
    cert = certify_cells(c, cls, m)
    for cell in range(c.n_cells):
        start, n = int(c.start[cell]), int(c.count[cell])
        x, sz = c.value[start : start + n], c.size[start : start + n]
        for i in range(n):
            best = -math.inf
            others = [j for j in range(n) if j != i]
            for size in range(m + 1):
                for coalition in itertools.combinations(others, size):
                    if n - size <= 1:
                        best = math.inf
                        continue
                    mu, sig = witness(x, coalition, i, cls, sz)
                    rest = np.asarray([j for j in range(n) if j not in coalition])
                    k = int(np.flatnonzero(rest == i)[0])
                    best = max(best, dense_loss(x[rest], k, mu, sig))
            want = cert.contributor_insider[start + i]
            assert best == pytest.approx(want, rel=1e-8) or (math.isinf(best) and math.isinf(want))


def test_public_sizes_make_kappa_independent_of_the_values():
    rng = np.random.default_rng(8)
    vals, sizes = sized_cells(rng, n_cells=30)
    cls = MagnitudeClass(1.0, 2.0, 1.5)
    a = certify_cells(from_cells(vals, sizes), cls, 1)
    other = [list(rng.permutation(v) * 7.0) for v in vals]
    b = certify_cells(from_cells(other, sizes), cls, 1)
    np.testing.assert_array_equal(a.cell, b.cell)  # the suppression pattern cannot depend on x
    found = audit_cells(from_cells(vals, sizes), cls, 1, draws=10, rng=1)
    finite = np.isfinite(a.cell)
    assert np.all(found[finite] <= a.cell[finite] * (1 + 1e-12))


def test_size_column_is_summed_and_checked():
    df = pl.DataFrame(
        {"k": ["a"] * 4, "id": ["p", "p", "q", "r"], "v": [0.0, 0.0, 5.0, 1.0],
         "emp": [3.0, 1.0, 2.0, 2.0]}
    )  # fmt: skip
    c = contributions(df, keys=["k"], value="v", unit="id", size="emp")
    assert c.value.tolist() == [5.0, 1.0, 0.0] and c.size.tolist() == [2.0, 2.0, 4.0]
    cert = certify_cells(c, MagnitudeClass(1.0), 0)
    assert cert.cell[0] == pytest.approx(1.0 + math.log1p(16.0 / 8.0), rel=1e-12)
    with pytest.raises(ValidationError, match=r"column 'emp', row 2: 0\.0 is not a size"):
        contributions(
            df.with_columns(pl.Series("emp", [1.0, 0.0, 1.0, 1.0])),
            keys=["k"], value="v", unit="id", size="emp",
        )  # fmt: skip


@pytest.mark.parametrize("s", [0.1, 10.0, 1e4])
def test_interval_score_worst_case_is_one(s):
    """docs/magnitude.md §2: for any interval length s some prior of the class has x_i outside
    its prior interval and inside its posterior one (relative interval score 1), by the
    posterior mean computed with the generic conditioning formula."""
    x = np.array([5.0, 3.0, 1.0])
    cls = MagnitudeClass(1.0, 1.0, 1.0)
    a = np.ones((1, 3))
    scale = 4.0 * s  # spreads proportional to size, all scaled up: still in the class
    sig = np.diag((scale * x) ** 2)
    rho = math.sqrt(sig[0, 0] / sig.sum())
    w = math.sqrt(cls.r1)
    mu = x.copy()
    mu[0] = x[0] - rho * math.sqrt(sig[0, 0]) * w
    mu[1:] = (x.sum() - w * math.sqrt(sig.sum()) - mu[0]) / 2  # total's error is w sds
    gain = sig @ a.T / float((a @ sig @ a.T)[0, 0])
    post_mean = mu + (gain @ (a @ x - a @ mu)).ravel()
    assert abs(x[0] - mu[0]) > s / 2  # outside the prior's interval [μ ± s/2]
    assert post_mean[0] == pytest.approx(x[0], abs=1e-12 * scale * x.sum())  # its centre
