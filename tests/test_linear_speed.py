"""The fast paths of the linear release (issue 14) against the reference computations.

* A's column patterns (``A = C E``) and the SVD through them, against ``numpy.linalg.svd``;
* ``analyse`` in the wide (k x n) layout with the pattern SVD, against the same analysis with
  compression switched off (``PATTERN_MAX_SHARE = 0``: dense SVD) and against a dense-Σ oracle
  written from the formulas (pseudo-inverse of G = AΣAᵀ + R);
* exposure and ``variance_spread`` from the patterns against the analysis (group of one person,
  a mean and the mean without one, overlapping subsets);
* the class κ curve used by the calibration, bit for bit against ``noise_kappa``;
* the statistics' selections by one polars select, and the released values, against the
  per-statistic masks and the matrix product; the refusals keep their messages.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import persuasive.linear.structured as structured
from persuasive.errors import ValidationError
from persuasive.linear import LinearGaussianClass, StructuredCovariance, analyse, calibrate_noise
from persuasive.linear.analysis import row_svd
from persuasive.linear.calibrate import ClassCurve, _search
from persuasive.linear.classes import exposed_by, variance_spread
from persuasive.linear.exposure import exposures, pattern_spread
from persuasive.linear.structured import column_patterns
from persuasive.release.linear import release_linear
from persuasive.release.statistics import _mask, build_rows, statistics_matrix

N = 200


def group_matrix(rng: np.random.Generator, n: int = N, singleton: bool = False) -> np.ndarray:
    """Overall mean, group means, overlapping subset sums (and a group of one person)."""
    g = rng.integers(0, 5, n)
    if singleton:
        g[7] = 5
    rows = [np.full(n, 1.0 / n)]
    rows += [(g == j) / max((g == j).sum(), 1) for j in np.unique(g)]
    rows += [(g < 3).astype(float), ((g >= 2) & (g < 5)).astype(float)]
    return np.vstack(rows)


def oracle(mu, cov, a, r):
    """τ², ρ², m(t) from the formulas with a dense pseudo-inverse (well-conditioned cases)."""
    g = a @ cov @ a.T + r
    gp = np.linalg.pinv(g, rcond=1e-10, hermitian=True)
    sat = cov @ a.T
    q = np.einsum("ij,jk,ik->i", sat, gp, sat)
    sig2 = np.diag(cov)
    return sig2 - q, q / sig2, lambda t: mu + sat @ gp @ (t - a @ mu)


@pytest.fixture
def no_patterns(monkeypatch: pytest.MonkeyPatch):
    """Switch the column compression off: every path falls back to the dense SVD."""

    def off() -> None:
        monkeypatch.setattr(structured, "PATTERN_MAX_SHARE", 0.0)

    return off


@pytest.mark.parametrize("seed", range(4))
def test_column_patterns_rebuild_a_and_give_its_svd(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = group_matrix(rng, singleton=seed % 2 == 1)
    pat = column_patterns(a)
    assert pat is not None and pat.count.sum() == N
    np.testing.assert_array_equal(pat.columns[:, pat.index], a)
    np.testing.assert_array_equal(np.bincount(pat.index), pat.count)
    u, s, vt = row_svd(a)
    s0 = np.linalg.svd(a, compute_uv=False)
    assert s.size == int((s0 > 1e-10 * s0[0]).sum())
    np.testing.assert_allclose(s, s0[: s.size], rtol=1e-12)
    np.testing.assert_allclose(vt @ vt.T, np.eye(s.size), atol=1e-12)
    np.testing.assert_allclose(u @ (s[:, None] * vt), a, atol=1e-14)
    # generic dense A: too many distinct columns, no compression
    assert column_patterns(rng.standard_normal((3, N))) is None


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("noisy", [False, True])
def test_analysis_equals_dense_svd_path_and_dense_oracle(
    seed: int, noisy: bool, no_patterns
) -> None:
    rng = np.random.default_rng(10 + seed)
    a = group_matrix(rng)
    g = rng.integers(0, 4, N)
    s = StructuredCovariance.block_equicorrelated(g, rng.uniform(0.5, 2.0, N), 0.3)
    mu = rng.normal(size=N)
    r = 1e-3 * np.diag(rng.uniform(0.5, 2.0, a.shape[0])) if noisy else None
    x = mu + rng.normal(size=N)
    t = a @ x + (rng.normal(size=a.shape[0]) * 0.03 if noisy else 0.0)
    fast = analyse(mu, s, a, r)
    dense_cov = analyse(mu, s.to_dense(), a, r)
    no_patterns()
    slow = analyse(mu, s, a, r)
    for other in (dense_cov, slow):
        np.testing.assert_allclose(fast.post_var, other.post_var, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fast.rho2, other.rho2, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fast.gamma, other.gamma, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fast.kappa(1.0, 0.05), other.kappa(1.0, 0.05), rtol=1e-9)
        np.testing.assert_allclose(fast.posterior_mean(t), other.posterior_mean(t), atol=1e-9)
        np.testing.assert_array_equal(fast.exposed, other.exposed)
        assert fast.rank == other.rank
    post, rho2, mean_of = oracle(
        mu, s.to_dense(), a, np.zeros((a.shape[0],) * 2) if r is None else r
    )
    np.testing.assert_allclose(fast.post_var, post, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fast.rho2, rho2, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fast.posterior_mean(t), mean_of(t), atol=1e-8)
    # the (n, r) view of b_i the audits use: B Bᵀ is basis-free
    np.testing.assert_allclose(fast._B @ fast._B[3], slow._B @ slow._B[3], atol=1e-10)


def test_exposure_from_patterns_equals_the_analysis(no_patterns) -> None:
    rng = np.random.default_rng(3)
    n = 60
    cases = {
        "group of one": group_matrix(rng, n, singleton=True),
        "mean and mean without one": np.vstack(
            [np.full(n, 1 / n), np.r_[np.full(n - 1, 1 / (n - 1)), 0]]
        ),
        "overlapping subsets": np.vstack(
            [np.r_[np.ones(40), np.zeros(20)], np.r_[np.zeros(20), np.ones(40)], np.ones(n)]
        ),
        "sums of all and all but 17": np.vstack([np.ones(n), np.ones(n) - np.eye(n)[17]]),
    }
    fast = {}
    for name, a in cases.items():
        names = [f"s{j}" for j in range(a.shape[0])]
        assert pattern_spread(a) is not None, name
        fast[name] = (exposures(a, names), variance_spread(a, np.full(n, 2.0)), exposed_by(a))
    no_patterns()
    want_exposed = {
        "group of one": [7],
        "mean and mean without one": [n - 1],
        "overlapping subsets": [],
        "sums of all and all but 17": [17],
    }
    for name, a in cases.items():
        names = [f"s{j}" for j in range(a.shape[0])]
        assert pattern_spread(a) is None
        ex, spread, by = fast[name]
        ex0 = exposures(a, names)
        assert [e.row_id for e in ex] == [e.row_id for e in ex0] == want_exposed[name], name
        for e, e0 in zip(ex, ex0, strict=True):
            assert e.combination.keys() == e0.combination.keys()
            np.testing.assert_allclose(list(e.combination.values()), list(e0.combination.values()))
            c = np.array([e.combination.get(s, 0.0) for s in names])
            np.testing.assert_allclose(a.T @ c, np.eye(n)[e.row_id], atol=1e-8)
        np.testing.assert_allclose(spread, variance_spread(a, np.full(n, 2.0)), atol=1e-10)
        np.testing.assert_array_equal(by, exposed_by(a))
        np.testing.assert_array_equal(np.flatnonzero(by), want_exposed[name])


@pytest.mark.parametrize(("v", "delta"), [(None, 0.05), (1.0, 0.5), (0.3, 0.05), (0.3, 0.0)])
def test_class_curve_is_noise_kappa_bit_for_bit(v: float | None, delta: float) -> None:
    cls = LinearGaussianClass(1.0, 4.0, max_stat_sd=v)
    k = 3
    sds = np.r_[0.0, 1e-3, 0.3, 1.0, 1e3]  # 0.3: gamma_max on a grid point when V = 0.3
    rs = [s**2 * np.diag([1.0, 0.5, 0.25]) for s in sds]
    got = ClassCurve(cls, delta).many(rs, k)
    want = [cls.noise_kappa(r, k, delta) for r in rs]
    assert got.tolist() == want


def test_search_with_values_at_once_equals_the_sequential_scan() -> None:
    a = np.ones((2, 3))
    c = np.ones(2)

    def f(s: float) -> float:
        return 3.0 + 2.0 / (1.0 + s) + 0.1 * np.sin(7 * s)

    def f_many(ss: np.ndarray) -> np.ndarray:
        return np.array([f(float(s)) for s in ss])

    for target in (4.0, 3.5):
        one, many = _search(f, a, c, 1.0, target), _search(f, a, c, 1.0, target, f_many)
        assert (one.sd, one.kappa) == (many.sd, many.kappa)
    with pytest.raises(ValidationError, match="unreachable"):
        _search(f, a, c, 1.0, 1.0, f_many)


def test_calibration_under_the_class_checks_exposure_once_and_meets_the_target() -> None:
    rng = np.random.default_rng(4)
    a = group_matrix(rng)
    cls = LinearGaussianClass(1.0, 4.0, max_stat_sd=1.0)
    cal = calibrate_noise(a, 2.0, cls=cls, delta=0.5)
    assert cal.kappa == cls.class_kappa(a, cal.R, 0.5) <= 2.0
    assert cls.class_kappa(a, (cal.sd * (1 - 1e-9)) ** 2, 0.5) > 2.0 or cal.sd == 0.0
    with pytest.raises(ValidationError, match="exposes individual"):
        calibrate_noise(group_matrix(rng, singleton=True), 2.0, cls=cls, delta=0.5)


def frame(rng: np.random.Generator, n: int = N) -> pl.DataFrame:
    return pl.DataFrame({"y": rng.normal(5.0, 2.0, n), "g": rng.integers(0, 4, n)})


STATS = [
    ("all", "mean", "true"),
    ("g0", "mean", "g = 0"),
    ("g1", "mean", "g = 1"),
    ("low", "sum", "g < 2"),
    ("mid", "sum", "g >= 1 AND g <= 2"),
    ("first100", "mean", "row_id < 100"),
]


def test_one_select_gives_the_per_statistic_masks_and_values() -> None:
    df = frame(np.random.default_rng(5))
    stats, a, x = build_rows(df, STATS, "y")
    indexed = df.with_row_index("row_id")
    for j, stat in enumerate(stats):
        m = _mask(indexed, stat)
        want = np.zeros(N)
        want[m] = 1.0 / m.sum() if stat.kind == "mean" else 1.0
        np.testing.assert_array_equal(a[j], want)
    rel = release_linear(df, value="y", statistics=STATS, r1=1.0, r2=4.0)
    assert rel.certificate is not None
    np.testing.assert_array_equal(rel.values["value"].to_numpy(), a @ x)
    by = df.group_by("g").agg(pl.col("y").mean()).sort("g")["y"].to_numpy()
    np.testing.assert_allclose(rel.values["value"].to_numpy()[1:3], by[:2], rtol=1e-12)
    xs, kap, _ = rel.calibration_curve(np.geomspace(0.01, 10, 5))
    cls = LinearGaussianClass(1.0, 4.0)
    assert kap.tolist() == [cls.class_kappa(rel.matrix, float(s) ** 2, 0.05) for s in xs]


def test_refusals_keep_their_messages_and_order() -> None:
    df = frame(np.random.default_rng(6))
    with pytest.raises(ValidationError, match="'none': WHERE 'g = 9' selects no rows"):
        statistics_matrix(df, [("all", "mean", "true"), ("none", "mean", "g = 9")], value="y")
    with pytest.raises(ValidationError, match="'none': WHERE 'g = 9' selects no rows"):
        statistics_matrix(df, [("none", "mean", "g = 9"), ("bad", "mean", "nope = 1")], value="y")
    with pytest.raises(ValidationError, match=r"'bad'.*column that does not exist"):
        statistics_matrix(df, [("all", "mean", "true"), ("bad", "mean", "nope = 1")], value="y")
    with pytest.raises(ValidationError, match=r"'num'.*not a true/false"):
        statistics_matrix(df, [("all", "mean", "true"), ("num", "mean", "g + 1")], value="y")
    nan = df.with_columns(pl.when(pl.int_range(N) == 3).then(None).otherwise("y").alias("y"))
    with pytest.raises(ValidationError, match=r"'all'.*row_id 3"):
        statistics_matrix(nan, [("all", "mean", "true")], value="y")
    assert statistics_matrix(nan, [("g", "mean", "row_id != 3")], value="y")[1].shape == (1, N)


def test_a_group_of_one_is_exposed_and_the_release_refused() -> None:
    df = frame(np.random.default_rng(7)).with_columns(
        pl.when(pl.int_range(N) == 11).then(9).otherwise("g").alias("g")
    )
    stats = [("all", "mean", "true"), ("solo", "mean", "g = 9"), ("g0", "sum", "g = 0")]
    rel = release_linear(df, value="y", statistics=stats, r1=1.0, r2=4.0)
    assert rel.certificate is None and [e.row_id for e in rel.exposed] == [11]
    assert rel.exposed[0].describe() == "row 11 = solo"


@pytest.mark.parametrize("seed", range(3))
def test_withholding_from_patterns_equals_the_analysis(seed: int, no_patterns) -> None:
    from persuasive.linear import greedy_withhold

    rng = np.random.default_rng(20 + seed)
    n = 80
    a = group_matrix(rng, n, singleton=seed == 0)
    a = np.vstack([a, np.r_[np.full(n - 1, 1.0 / (n - 1)), 0.0]])  # the mean without the last
    cov = StructuredCovariance(np.full(n, 2.0))
    kw = dict(mean=np.zeros(n), cov=cov, r1=1.0)
    fast = [greedy_withhold(a, t, **kw) for t in (1e300, 2.5)]
    no_patterns()
    for f, t in zip(fast, (1e300, 2.5), strict=True):
        slow = greedy_withhold(a, t, **kw)
        assert (f.kept, f.dropped) == (slow.kept, slow.dropped)
        np.testing.assert_allclose(f.path, slow.path, rtol=1e-10)
        np.testing.assert_allclose(f.kappa, slow.kappa, rtol=1e-10)


def test_noisy_analysis_builds_the_row_basis_only_for_exposures() -> None:
    n = 50
    a = np.vstack([np.eye(n)[0], np.full(n, 1.0 / n)])  # statistic 0 is person 0, released exact
    an = analyse(np.zeros(n), StructuredCovariance(np.ones(n)), a, np.diag([0.0, 0.01]))
    assert an._svd[2] is None and an.exposed.tolist() == [True] + [False] * (n - 1)
    (e,) = an.exposures()
    assert e.i == 0 and e.residual < 1e-12
    np.testing.assert_allclose(e.combination, [1.0, 0.0], atol=1e-12)


def test_prepared_analysis_is_analyse_and_calibration_unchanged() -> None:
    from persuasive.linear.analysis import Prepared

    rng = np.random.default_rng(8)
    a = np.vstack([np.full(12, 1 / 12), np.r_[np.full(11, 1 / 11), 0.0]])
    mu, cov = rng.normal(size=12), np.diag(rng.uniform(1, 3, 12))
    prep = Prepared(mu, cov, a)
    for r in (None, 0.01, np.diag([0.02, 0.5]), None):
        one, two = analyse(mu, cov, a, r), prep(r)
        for name in ("post_var", "rho2", "gamma", "exposed"):
            assert np.array_equal(getattr(one, name), getattr(two, name)), name
        assert np.array_equal(one.kappa(1.0, 0.05), two.kappa(1.0, 0.05))
    cal = calibrate_noise(a, 5.0, mean=mu, cov=cov, r1=1.0, delta=0.05)
    assert cal.kappa == float(analyse(mu, cov, a, cal.R).kappa(1.0, 0.05).max()) <= 5.0
