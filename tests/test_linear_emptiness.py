"""The linear Receiver class is refused when it is empty (docs/linear.md §4).

Oracles: the leverage identities against the dense analysis (variance_spread), the
emptiness verdicts against a numerical search over sds (Nelder-Mead from many starts and
random draws) and against LinearGaussianClass.contains on the witness prior, group means
against the closed form max_g n_g/(n_g - 1) (Prop 7's condition for each group's mean).
"""

from __future__ import annotations

import time

import numpy as np
import polars as pl
import pytest
from scipy.optimize import minimize

import persuasive as pp
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.linear import BoundedErrorLinearClass, LinearGaussianClass, variance_spread
from persuasive.linear.emptiness import class_emptiness, patterns_of_matrix
from persuasive.linear.structured import ColumnPatterns, patterns_of_masks
from persuasive.release.linear import release_linear


def _spread(a: np.ndarray, log_sd: np.ndarray) -> float:
    """min_i D_i(σ)/σ_i² by the dense analysis."""
    return float(variance_spread(a, np.exp(log_sd)).min())


def _numerical_sup(
    a: np.ndarray, index: np.ndarray, rng: np.random.Generator, starts: int = 8
) -> float:
    """sup over σ of min_i D_i(σ)/σ_i², searched (a lower bound on the true sup): random
    draws and Nelder-Mead over all n log sds and over one log sd per column pattern."""
    n, m = a.shape[1], int(index.max()) + 1
    best = _spread(a, np.zeros(n))
    for _ in range(starts):
        for dim, lift in ((n, lambda z: z), (m, lambda z: z[index])):
            x0 = rng.normal(0.0, 1.0, dim)
            best = max(best, _spread(a, lift(x0)))
            res = minimize(
                lambda z, lift=lift: -_spread(a, lift(z)),
                x0,
                method="Nelder-Mead",
                options={"maxiter": 300},
            )
            best = max(best, -float(res.fun))
    return best


def _group_means(sizes: list[int]) -> ColumnPatterns:
    index = np.repeat(np.arange(len(sizes)), sizes)
    masks = [index == g for g in range(len(sizes))]
    return patterns_of_masks(masks, [1.0 / s for s in sizes])


def _definition(r2: float, bounded: bool = False) -> pp.PersuasivePrivacy:
    cls = (
        BoundedErrorLinearClass(1.0, r2, max_stat_sd=1.0, max_person_error=1.0)
        if bounded
        else LinearGaussianClass(1.0, r2)
    )
    return pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 10.0, 0.05)


def test_two_pair_means_refused_at_r2_one_and_a_half() -> None:
    """Issue 14's case: a pair's mean leaves one of the two with D_i/σ_i² ≤ 1/2 < 1/1.5."""
    df = pl.DataFrame({"y": [1.0, 2.0, 3.0, 4.0], "g": [1, 1, 2, 2]})
    stats = [("a", "mean", "g = 1"), ("b", "mean", "g = 2")]
    with pytest.raises(ValidationError, match="needs r2 >= 2"):
        release_linear(df, value="y", statistics=stats, r1=1.0, r2=1.5)
    a = np.array([[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]])
    for bounded in (False, True):
        with pytest.raises(UnsupportedCombinationError, match="class is empty"):
            pp.certify(pp.LinearGaussian(a), _definition(1.5, bounded))
    with pytest.raises(ValidationError, match="class is empty"):
        LinearGaussianClass(1.0, 1.5).class_kappa(a)
    ok = release_linear(df, value="y", statistics=stats, r1=1.0, r2=2.0)
    assert ok.certificate is not None and ok.certificate.exact
    # the independent check: equal sds give D_i/σ_i² = 1/2 for all four (a member at r2 = 2)
    np.testing.assert_allclose(variance_spread(a, np.ones(4)), 0.5)


@pytest.mark.parametrize("sizes", [[2, 3], [5, 2, 4], [3, 3, 3], [7]])
def test_group_means_refused_exactly_below_the_largest_group_bound(sizes: list[int]) -> None:
    pat = _group_means(sizes)
    need = max(s / (s - 1) for s in sizes)
    for r2 in (need * (1 - 1e-6), need, need * (1 + 1e-6), 1.05, 3.0):
        e = class_emptiness(pat, r2)
        assert e.empty == (r2 < need), (sizes, r2, e)
        if not e.empty:
            assert e.verdict == "non-empty"
        mech = pp.LinearGaussian.from_patterns(pat)
        if r2 < need:
            with pytest.raises(UnsupportedCombinationError, match="class is empty"):
                pp.certify(mech, _definition(r2))
        else:
            assert pp.certify(mech, _definition(r2)).exact


def test_the_mean_is_prop7s_condition() -> None:
    """A = 1ᵀ/n is one pattern of n records: empty iff r2 < n/(n-1) (Prop 7)."""
    for n in (2, 3, 10):
        a = np.full((1, n), 1.0 / n)
        assert class_emptiness(patterns_of_matrix(a), n / (n - 1) * 0.999).empty
        assert class_emptiness(patterns_of_matrix(a), n / (n - 1)).verdict == "non-empty"


def test_leverages_sum_to_rank_and_merged_pattern_leverage() -> None:
    """Σ_i ℓ_i(σ) = rank A and, for an isolated pattern, Σ_{i∈P} ℓ_i = 1 at any σ (dense)."""
    rng = np.random.default_rng(3)
    c = rng.normal(size=(2, 3))
    a = c[:, [0, 0, 1, 1, 1, 2]]  # patterns of sizes 2, 3, 1; rank 2 in R^2
    a = np.vstack([a, [1.0, 1.0, 0, 0, 0, 0]])  # pattern 0's column now isolated
    for _ in range(5):
        sd = np.exp(rng.normal(size=6))
        ell = 1.0 - variance_spread(a, sd)
        assert ell.sum() == pytest.approx(np.linalg.matrix_rank(a), rel=1e-9)
        assert ell[:2].sum() == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_verdicts_against_a_numerical_search(seed: int) -> None:
    """Never "empty" when the search finds a member; never "non-empty" when the searched
    sup is below 1/r2; the witness is a member by LinearGaussianClass.contains."""
    rng = np.random.default_rng(100 + seed)
    k, m = int(rng.integers(1, 3)), int(rng.integers(2, 4))
    cols = rng.normal(size=(k, m))
    if seed % 2:
        cols[:, -1] = 0.0  # a record in no statistic
    sizes = rng.integers(1, 4, m)
    sizes[0] = max(sizes[0], 2)
    idx = np.repeat(np.arange(m), sizes)
    a = np.ascontiguousarray(cols[:, idx])
    n = a.shape[1]
    if pp.LinearGaussian(a).exposed().any():
        pytest.skip("an exposed record: refused by the exposure check, not tested here")
    sup = _numerical_sup(a, idx, rng)
    for r2 in (1.05, 1.3, 1.6, 2.0, 3.0, 6.0):
        e = class_emptiness(patterns_of_matrix(a), r2)
        if e.empty:
            assert sup < 1.0 / r2 * (1 + 1e-9), (seed, r2, sup, e.reason)

        if sup < 1.0 / r2 * (1 - 1e-6):
            assert e.verdict != "non-empty", (seed, r2, sup)
        if e.verdict == "non-empty":
            sd = e.sd[patterns_of_matrix(a).index]
            x = rng.normal(size=n)
            assert LinearGaussianClass(1.0, r2).contains(pp.GaussianPrior(x, sd**2), x=x, A=a)
        assert e.needed_r2 <= 1.0 / sup * (1 + 1e-6)  # the proven bound is below the sup's


def test_undecided_certificates_carry_the_note(monkeypatch: pytest.MonkeyPatch) -> None:
    import persuasive.linear.emptiness as em

    monkeypatch.setattr(em, "SEARCH_STEPS", 1)
    rng = np.random.default_rng(7)
    a = rng.normal(size=(2, 5))
    pat = patterns_of_matrix(a)
    r2 = 1.8  # the full-set bound is 5/3; equal sds need more (checked below)
    assert 1.0 / variance_spread(a, np.ones(5)).min() > r2
    e = class_emptiness(pat, r2)
    assert e.verdict == "undecided"
    cert = pp.certify(pp.LinearGaussian(a), _definition(r2))
    assert not cert.exact and any("not proven" in n for n in cert.notes)


def test_a_million_group_means_decided_fast_without_a_dense_a(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    n, sizes = 10**6, [300_000, 200_000, 499_998, 2]
    pat = _group_means(sizes)
    assert pat.shape == (4, n)
    mech = pp.LinearGaussian.from_patterns(pat, R=4.0)
    monkeypatch.setattr(ColumnPatterns, "dense", lambda self: pytest.fail("dense A formed"))
    t0 = time.perf_counter()
    e = class_emptiness(pat, 1.5)
    took = time.perf_counter() - t0
    assert e.empty and e.needed_r2 == 2.0 and e.records.tolist() == [n - 2, n - 1]
    assert took < 1.0
    for bounded in (False, True):
        with pytest.raises(UnsupportedCombinationError, match="class is empty"):
            pp.certify(mech, _definition(1.5, bounded))
        cert = pp.certify(mech, _definition(2.5, bounded))
        assert cert.kappa < np.inf and not any("not proven" in x for x in cert.notes)


def test_the_search_decides_just_above_the_proven_bound() -> None:
    """Small random patterns (some columns zero or tiny): 1 % above the largest proven empty
    bound, the search finds a member, checked by contains on the witness prior."""
    rng = np.random.default_rng(0)
    decided = tried = 0
    while tried < 40:
        k, m = int(rng.integers(1, 4)), int(rng.integers(2, 7))
        cols = rng.normal(size=(k, m))
        if rng.random() < 0.3:
            cols[:, rng.integers(m)] = 0.0
        cnt = rng.integers(1, 5, m).astype(np.int64)
        idx = np.repeat(np.arange(m), cnt)
        a = np.ascontiguousarray(cols[:, idx])
        if pp.LinearGaussian(a).exposed().any():
            continue
        tried += 1
        pat = ColumnPatterns(cols, idx, cnt)
        r2 = class_emptiness(pat, 1e9).needed_r2 * 1.01
        e = class_emptiness(pat, r2)
        if e.verdict == "non-empty":
            decided += 1
            sd, x = e.sd[idx], rng.normal(size=idx.size)
            assert LinearGaussianClass(1.0, r2).contains(pp.GaussianPrior(x, sd**2), x=x, A=a)
    assert decided == tried


def test_the_release_refuses_an_empty_class_in_one_line(tmp_path) -> None:
    """Two pair means at r2 = 1.5: the library and the command line refuse in one line naming
    r2 and the records (exit 2, nothing written), as the mean's release refuses r2 < n/(n-1);
    at r2 = 2 the class has members and the release certifies."""
    import polars as pl
    from typer.testing import CliRunner

    from persuasive.cli import app
    from persuasive.errors import ValidationError
    from persuasive.release.linear import release_linear

    df = pl.DataFrame({"g": [1, 1, 2, 2], "y": [1.0, 2.0, 3.0, 4.0]})
    stats = [("a", "mean", "g = 1"), ("b", "mean", "g = 2")]
    with pytest.raises(ValidationError) as info:
        release_linear(df, value="y", statistics=stats, r1=1.0, r2=1.5)
    text = str(info.value)
    assert "\n" not in text and text.startswith("r2 = 1.5:") and "r2 >= 2" in text
    assert release_linear(df, value="y", statistics=stats, r1=1.0, r2=2.0).certificate.holds
    data = tmp_path / "p.csv"
    df.write_csv(data)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, [
        "release", "linear", str(data), "--value", "y", "--stat", "a:mean:g = 1",
        "--stat", "b:mean:g = 2", "--r1", "1", "--r2", "1.5", "--out", str(out),
    ])  # fmt: skip
    assert res.exit_code == 2 and not out.exists(), res.output
    assert "error: r2 = 1.5:" in res.output
