"""Soundness sweep: audit <= certificate on more than 10^4 random instances, every theorem.

For every theorem of the registry (``persuasive.certify.THEOREMS``; Prop 5 only refuses), random
instances are drawn with fixed seeds and, for each, a *genuine* lower bound on κ is computed
here, in numpy batches, by code that shares nothing with the certificate: the loss of an
explicit member of the prior class at an explicit dataset (a Bayes update written out for the
class: two-point priors, Gaussian conditioning, conditioning of a cell pmf), at an output the
mechanism produces with probability above δ (exact enumeration, or a Monte Carlo
Clopper-Pearson rank over sampled outputs). The certificate must be at or above it.

Each test asserts how many instances it checked and prints it (``pytest -s`` shows the lines;
``record_property`` stores them in JUnit XML); tests/conftest.py prints the total of
:data:`COUNTS` at the end of the run, added up over the pytest-xdist workers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import persuasive as pp
from persuasive import _tolerances as tol
from persuasive.certify import THEOREMS, find_theorem
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.linear import LinearGaussianClass
from persuasive.linear.bounded_error import BoundedErrorLinearClass

PDP = pp.probabilistic_dp
Q = 1e-9  # the two-point prior's weight on x (a member of H_x; the sup is the limit q -> 0)
ATOL = tol.LOSS_ATOL  # float noise allowed when an audit meets a sharp certificate
CONF = 1.0 - 1e-6  # per-instance Clopper-Pearson confidence of the Monte Carlo bounds

#: Instances checked, per theorem (filled by the tests; read by tests/conftest.py).
COUNTS: dict[str, int] = {}


def _check(
    name: str,
    audit,
    cert,
    record_property,
    minimum: int,
    *,
    finite: float = 0.6,
    close: float | None = None,
    ratio: float | None = None,
) -> None:
    """Assert audit <= certificate on every instance, count them (asserting at least
    ``minimum``), and guard against a vacuous sweep: at least a fraction ``finite`` of the
    certificates is finite, and (``close``) that fraction of the finite ones has an audit
    within 1e-3 relative of its certificate (theorems whose value is attained), or
    (``ratio``) the median audit / certificate over the finite positive ones is at least that
    (Monte Carlo and searched lower bounds)."""
    audit, cert = np.asarray(audit, dtype=float), np.asarray(cert, dtype=float)
    bad = np.flatnonzero(~(audit <= cert + ATOL))
    assert bad.size == 0, (
        f"{name}: audit > certificate at {bad[:5]}: {audit[bad[:5]]} {cert[bad[:5]]}"
    )
    n = int(audit.size)
    fin = np.isfinite(cert)
    assert fin.mean() >= finite, f"{name}: only {fin.mean():.0%} finite certificates"
    if close is not None:
        near = cert[fin] - audit[fin] <= 1e-3 * np.maximum(1.0, np.abs(cert[fin]))
        assert near.mean() >= close, f"{name}: only {near.mean():.0%} audits near the certificate"
    if ratio is not None:
        pos = fin & (cert > 0)
        med = float(np.median(audit[pos] / cert[pos]))
        assert med >= ratio, f"{name}: median audit / certificate {med:.3f}"
    COUNTS[name] = COUNTS.get(name, 0) + n
    record_property(f"soundness_{name}", n)
    print(f"soundness sweep [{name}]: {n} instances, audit <= certificate")
    assert n >= minimum, f"{name}: only {n} instances checked"


def _basis(mech, d) -> str:
    return find_theorem(mech, d).name


def two_point(ell):
    """The loss of the two-point prior Q({x}) = q (docs/math.md §6), vectorised; +inf -> -log q."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(np.isposinf(ell), -math.log(Q), -np.log(Q + (1.0 - Q) * np.exp(-ell)))


def tail_quantile(values, probs, delta):
    """Per row, max{k : P[V >= k] > delta} of a finite law (values (B, J), probs (B, J))."""
    order = np.argsort(-values, axis=1, kind="stable")
    v = np.take_along_axis(values, order, axis=1)
    p = np.take_along_axis(probs, order, axis=1)
    cum = np.cumsum(p, axis=1)
    ok = cum > (np.asarray(delta)[:, None] + 1e-12)
    first = np.argmax(ok, axis=1)
    out = v[np.arange(v.shape[0]), first]
    return np.where(ok.any(axis=1), out, -np.inf)


def kernel_audit(mats, delta):
    """Exact audit of finite kernels (B, K, J) at neighbours |i - j| = 1, two-point priors."""
    b, k, _ = mats.shape
    best = np.full(b, -np.inf)
    for i in range(k):
        for j in (i - 1, i + 1):
            if not 0 <= j < k:
                continue
            p, pp_ = mats[:, i, :], mats[:, j, :]
            with np.errstate(divide="ignore", invalid="ignore"):
                ell = np.where(pp_ > 0, np.log(p) - np.log(pp_), np.inf)
            vals = np.where(p > 0, two_point(ell), -np.inf)
            best = np.maximum(best, tail_quantile(vals, p, delta))
    return best


def cp_ranks(n: int, delta):
    """Per delta, the smallest k with Beta^{-1}(1 - CONF; k, n - k + 1) > delta (0: none)."""
    delta = np.asarray(delta, dtype=float)
    lo, hi = np.ones(delta.shape, int), np.full(delta.shape, n)
    ok_n = stats.beta.ppf(1 - CONF, n, 1) > delta
    for _ in range(int(math.log2(n)) + 2):
        mid = (lo + hi) // 2
        good = stats.beta.ppf(1 - CONF, mid, n - mid + 1) > delta
        hi, lo = np.where(good, mid, hi), np.where(good, lo, mid + 1)
    return np.where(ok_n, np.where(delta <= 0, 1, lo), 0)


def mc_audit(losses, delta):
    """Clopper-Pearson audit from sampled losses (B, N): Δ_q at the k-th largest (-inf: none)."""
    k = cp_ranks(losses.shape[1], delta)
    srt = -np.sort(-losses, axis=1)
    val = srt[np.arange(losses.shape[0]), np.maximum(k, 1) - 1]
    return np.where(k > 0, two_point(val), -np.inf)


def _random_kernels(rng, b, k, j, zeros):
    m = rng.dirichlet(np.ones(j), size=(b, k))
    if zeros:
        m = np.where(rng.random((b, k, j)) < 0.04, 0.0, m)
        m[..., 0] += (m.sum(axis=2) == 0) * 1.0
        m /= m.sum(axis=2, keepdims=True)
    return m


def _deltas(rng, b):
    return np.where(rng.random(b) < 0.2, 0.0, rng.uniform(0.0, 0.6, b))


# --- Prop 6: finite kernels, randomized response, noise, deterministic releases -------------


def test_prop6_finite_kernels_and_randomized_response(record_property):
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(101)
    n = 0
    for k in (2, 3, 4):
        for j in (2, 3, 5):
            for zeros in (False, True):
                b = 230
                mats = _random_kernels(rng, b, k, j, zeros)
                delta = _deltas(rng, b)
                audit = kernel_audit(mats, delta)
                for i in range(b):
                    mech = pp.FiniteKernel(mats[i])
                    d = PDP(1.0, float(delta[i]))
                    assert _basis(mech, d) == "prop6"
                    cert = pp.certify(mech, d).kappa
                    A.append(audit[i])
                    C.append(cert)
                n += b
    # randomized response: its matrix written here, the certificate from the parameter
    b = 1200
    eps0, kk = rng.uniform(0.0, 4.0, b), rng.integers(2, 6, b)
    delta = _deltas(rng, b)
    for kcat in range(2, 6):
        sel = np.flatnonzero(kk == kcat)
        keep = np.exp(eps0[sel]) / (np.exp(eps0[sel]) + kcat - 1)
        mats = np.repeat(((1 - keep) / (kcat - 1))[:, None, None], kcat, 1).repeat(kcat, 2)
        idx = np.arange(kcat)
        mats[:, idx, idx] = keep[:, None]
        audit = kernel_audit(mats, delta[sel])
        for a, i in zip(audit, sel, strict=True):
            cert = pp.certify(
                pp.RandomizedResponse(float(eps0[i]), kcat), PDP(1.0, float(delta[i]))
            )
            A.append(a)
            C.append(cert.kappa)
    n += b
    _check("prop6 finite", A, C, record_property, 5000, close=0.9)


def test_prop6_noise_by_monte_carlo(record_property):
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(102)
    n_draws, b = 4000, 1000
    n = 0
    for kind in ("laplace", "gaussian", "geometric"):
        scale = np.exp(rng.uniform(np.log(0.2), np.log(20.0), b))
        delta = _deltas(rng, b)
        if kind == "laplace":
            t = rng.laplace(0.0, scale[:, None], (b, n_draws))
            ell = (np.abs(t - 1.0) - np.abs(t)) / scale[:, None]
        elif kind == "gaussian":
            t = rng.normal(0.0, scale[:, None], (b, n_draws))
            ell = ((t - 1.0) ** 2 - t**2) / (2.0 * scale[:, None] ** 2)
            delta = np.maximum(delta, 1e-4)  # delta = 0 has no finite kappa
        else:
            p = 1.0 - np.exp(-1.0 / scale)
            t = rng.geometric(p[:, None], (b, n_draws)) - rng.geometric(p[:, None], (b, n_draws))
            ell = (np.abs(t - 1.0) - np.abs(t)) / scale[:, None]
        audit = mc_audit(ell, delta)
        cls = {
            "laplace": pp.LaplaceMechanism,
            "gaussian": pp.GaussianMechanism,
            "geometric": pp.GeometricMechanism,
        }[kind]
        for i in range(b):
            mech = cls(float(scale[i]))
            d = PDP(1.0, float(delta[i]))
            assert _basis(mech, d) == "prop6"
            A.append(audit[i])
            C.append(pp.certify(mech, d).kappa)
        n += b
    _check("prop6 noise", A, C, record_property, 3000, ratio=0.8)


def test_prop6_deterministic_releases(record_property):
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(103)
    n = 0
    for _ in range(200):
        dim = int(rng.integers(1, 4))
        a = rng.normal(size=(1, dim)) * (rng.random((1, dim)) < 0.6)
        # any integer x and its neighbours x + e_j: the output moves iff A e_j != 0, and
        # then x' cannot produce f(x) (loss +inf)
        moved = np.abs(a[0]) > 0
        audit = float(two_point(np.array(np.inf))) if moved.any() else 0.0
        cert = pp.certify(pp.LinearStatistic(a), pp.pure_dp(1.0)).kappa
        A.append(audit)
        C.append(cert)
        n += 1
    for h in range(1, 101):  # cell suppression: x = h - 1 is suppressed, x' = h released
        A.append(float(two_point(np.array(np.inf))))
        C.append(pp.certify(pp.CellSuppression(h), pp.pure_dp(1.0)).kappa)
        n += 1
    _check("prop6 deterministic", A, C, record_property, 300, finite=0.0)


# --- App. C: PP in expectation ----------------------------------------------------------------


def _risk(name, alpha, dq, p):
    """E_x[phi(Δ)] (docs/math.md §7) over a finite law, per row; dq (B, J), p (B, J)."""
    if name == "renyi":
        with np.errstate(divide="ignore"):
            lw = np.where(p > 0, np.log(np.where(p > 0, p, 1.0)) + (alpha - 1) * dq, -np.inf)
        top = lw.max(axis=1, keepdims=True)
        return (top[:, 0] + np.log(np.exp(lw - top).sum(axis=1))) / (alpha - 1)
    if name == "tv":
        g = np.abs(1.0 - np.exp(-dq)) / 2.0
    elif name == "chi2":
        g = np.expm1(dq) ** 2 * np.exp(-dq)
    else:
        g = dq
    return np.sum(np.where(p > 0, p * g, 0.0), axis=1)


def test_appc_expectation(record_property):
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(104)
    n = 0
    risks = [("mean", 1.0), ("renyi", 2.0), ("renyi", 4.5), ("kl", 1.0), ("tv", 1.0), ("chi2", 1.0)]
    for name, alpha in risks:
        for zeros in (False, True):
            b = 120
            mats = _random_kernels(rng, b, 3, 3, zeros)
            audit = np.full(b, -np.inf)
            for i, j in ((0, 1), (1, 0), (1, 2), (2, 1)):
                p, pp_ = mats[:, i, :], mats[:, j, :]
                with np.errstate(divide="ignore", invalid="ignore"):
                    ell = np.where(pp_ > 0, np.log(p) - np.log(pp_), np.inf)
                dq = np.where(p > 0, two_point(ell), 0.0)
                audit = np.maximum(audit, _risk(name, alpha, dq, p))
            if name == "mean":
                risk = pp.Mean()
            elif name == "renyi":
                risk = pp.Renyi(alpha)
            else:
                risk = pp.FDivergence(name)
            for i in range(b):
                d = pp.PersuasivePrivacyExpectation(pp.LogScore(), pp.NeighbourPriors(), 1.0, risk)
                mech = pp.FiniteKernel(mats[i])
                assert _basis(mech, d) == "appc"
                A.append(audit[i])
                C.append(pp.certify(mech, d).kappa)
            n += b
    # Gaussian noise: E over T ~ N(0, sigma^2) by Gauss-Hermite quadrature, q = 1e-3
    nodes, weights = np.polynomial.hermite_e.hermegauss(160)
    weights = weights / weights.sum()
    for alpha in (1.0, 1.5, 3.0):
        sig = np.exp(rng.uniform(np.log(0.5), np.log(5.0), 150))
        t = sig[:, None] * nodes[None, :]
        ell = (1.0 - 2.0 * t) / (2.0 * sig[:, None] ** 2)
        q = 1e-3
        dq = -np.log(q + (1 - q) * np.exp(-ell))
        if alpha == 1.0:
            audit = (weights * dq).sum(axis=1)
            d = pp.PersuasivePrivacyExpectation(pp.LogScore(), pp.NeighbourPriors(), 1.0, pp.Mean())
        else:
            audit = np.log((weights * np.exp((alpha - 1) * dq)).sum(axis=1)) / (alpha - 1)
            d = pp.renyi_dp(alpha, 1.0)
        for i in range(sig.size):
            mech = pp.GaussianMechanism(float(sig[i]))
            A.append(audit[i])
            C.append(pp.certify(mech, d).kappa)
        n += sig.size
    _check("appc", A, C, record_property, 1500, ratio=0.95)


# --- Prop 7: the exact mean, Gaussian class ------------------------------------------------


def _dss_losses(mu, cov, x):
    """max_i Δ_i for the exact mean (docs/math.md §8): D_i(Q, x) - D_i(Q_xbar, x) with the
    degenerate Gaussian conditioning on the mean written out (batch (B, n))."""
    n = mu.shape[1]
    s = cov.sum(axis=2)  # Sigma 1
    tot = s.sum(axis=1)  # 1' Sigma 1
    m = mu + s * (n * (x.mean(axis=1) - mu.mean(axis=1)) / tot)[:, None]
    var0 = np.diagonal(cov, axis1=1, axis2=2)
    var_t = var0 - s**2 / tot[:, None]
    d = np.log(var0) + (x - mu) ** 2 / var0 - np.log(var_t) - (x - m) ** 2 / var_t
    return d.max(axis=1)


def test_prop7_exact_mean(record_property):
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(105)
    n_inst = 0
    for n in (2, 3, 4, 6):
        b = 450
        g = rng.normal(size=(b, n, n + 2))
        cov = g @ g.transpose(0, 2, 1) + 0.3 * np.eye(n)
        sd = np.sqrt(np.diagonal(cov, axis1=1, axis2=2))
        phi = cov / (sd[:, :, None] * sd[:, None, :])
        eig = np.linalg.eigvalsh(phi)
        c_phi = eig[:, -1] / eig[:, 0]
        spread = 1.0 - sd.max(axis=1) ** 2 / (sd**2).sum(axis=1)
        mu = rng.normal(size=(b, n))
        x = mu + rng.normal(size=(b, n)) * 2.0
        # half the datasets put x_1 where the loss is largest (z_1 = w / rho_1), same mean
        sbar = cov.sum(axis=(1, 2)) / n**2
        w = (x.mean(axis=1) - mu.mean(axis=1)) / np.sqrt(sbar)
        rho1 = cov[:, 0, :].sum(axis=1) / (sd[:, 0] * np.sqrt(n * n * sbar))
        opt = rng.random(b) < 0.5
        x1 = mu[:, 0] + sd[:, 0] * w / rho1
        shift = np.where(opt, x1 - x[:, 0], 0.0)
        x[:, 0] += shift
        x[:, 1:] -= (shift / (n - 1))[:, None]
        # the class parameters: this prior is a member (its own arithmetic) with room to spare
        r2 = np.maximum(c_phi / spread, n / (n - 1.0)) * rng.uniform(1.0, 1.5, b)
        r1 = w**2 * rng.uniform(1.0, 1.5, b) + 1e-3
        audit = _dss_losses(mu, cov, x)
        for i in range(b):
            d = pp.PersuasivePrivacy(
                pp.MarginalDSS(), pp.GaussianMeanClass(float(r1[i]), float(r2[i])), 1.0
            )
            assert _basis(pp.ExactMean(), d) == "prop7"
            A.append(audit[i])
            C.append(pp.certify(pp.ExactMean(), d).kappa)
        n_inst += b
    # near-sharp members: Phi = I, sigma_1^2 share (1 - 1/r2)(1 - eta), w^2 = r1 (1 - eta)
    b = 300
    r1, r2, eta = rng.uniform(0.1, 5.0, b), rng.uniform(2.0, 20.0, b), 1e-9
    share = (1 - 1 / r2) * (1 - eta)
    var = np.stack([share, 1 - share], axis=1) * 4.0
    cov = var[:, :, None] * np.eye(2)
    sbar = var.sum(axis=1) / 4.0
    w = np.sqrt(r1 * (1 - eta))
    rho = np.sqrt(share)
    x = np.empty((b, 2))
    x[:, 0] = w / rho * np.sqrt(var[:, 0])
    x[:, 1] = 2 * w * np.sqrt(sbar) - x[:, 0]
    audit = _dss_losses(np.zeros((b, 2)), cov, x)
    sharp = r1 + np.log(r2)
    assert np.all(audit >= sharp - 1e-6)  # within eta of the sharp value
    for i in range(b):
        d = pp.PersuasivePrivacy(
            pp.MarginalDSS(), pp.GaussianMeanClass(float(r1[i]), float(r2[i])), 1.0
        )
        A.append(audit[i])
        C.append(pp.certify(pp.ExactMean(), d).kappa)
    n_inst += b
    _check("prop7", A, C, record_property, 2000, close=0.1)


# --- Prop 8: cell suppression, small-cell class ------------------------------------------------


def test_prop8_cell_suppression(record_property):
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(106)
    b, v = 2400, 14
    pmf = rng.dirichlet(np.full(v, 0.7), size=b)
    pmf = np.where(rng.random((b, v)) < 0.2, 0.0, pmf)
    pmf[:, 0] += 1e-3
    pmf /= pmf.sum(axis=1, keepdims=True)
    h_c = rng.integers(2, 9, b)
    r = rng.integers(2, 11, b)
    # 75% with h_M >= max(h_C, r) (the certified case; a third of them on the boundary
    # h_M = h_C >= r with alpha = Q(X < h_C), where the sharp value is attained), 25% any h_M
    kind = rng.random(b)
    r = np.where(kind < 0.25, np.minimum(r, h_c), r)
    h_m = np.where(
        kind < 0.25, h_c, np.where(kind < 0.75, np.maximum(h_c, r) + rng.integers(0, 3, b), 0)
    )
    h_m = np.where(h_m == 0, rng.integers(2, 11, b), h_m)
    vals = np.arange(v)
    below_c = np.where(vals[None, :] < h_c[:, None], pmf, 0.0).sum(axis=1)
    alpha = np.where(kind < 0.25, below_c, below_c * rng.uniform(0.3, 1.0, b))  # a member
    below_m = np.where(vals[None, :] < h_m[:, None], pmf, 0.0).sum(axis=1)
    small = vals[None, :] < r[:, None]
    with np.errstate(divide="ignore"):
        before = np.where(small, -np.log(pmf), 0.0)
        supp = vals[None, :] < h_m[:, None]
        # the posterior: Q(. | X < h_M) if suppressed, the point mass x if released
        after = np.where(small & supp, -np.log(pmf / below_m[:, None]), 0.0)
    with np.errstate(invalid="ignore"):
        loss = np.where(pmf > 0, before - after, 0.0)  # q(x) = 0: inf - inf = 0
    audit = loss.max(axis=1)
    for i in range(b):
        d = pp.PersuasivePrivacy(
            pp.SmallCellLogScore(r=int(r[i])),
            pp.SmallCellClass(int(h_c[i]), float(alpha[i])),
            1.0,
        )
        mech = pp.CellSuppression(int(h_m[i]))
        assert _basis(mech, d) == "prop8"
        A.append(audit[i])
        C.append(pp.certify(mech, d).kappa)
    _check("prop8", A, C, record_property, 2000, close=0.2)


# --- noisy mean, linear statistics, Laplace mean -----------------------------------------------


def _interval_quantile(c0, vt, k1, d, mean_u, sd_u, delta):
    r"""Exact upper (1 - delta)-quantile of Δ = c0 - (d - k1 u)^2 / vt, u ~ N(mean_u, sd_u^2)
    (a concave quadratic: {Δ >= k} is an interval of u), by bisection; broadcasting."""
    lo, hi = -2.0 * np.abs(c0) - 1e3, c0
    for _ in range(120):
        k = 0.5 * (lo + hi)
        h = np.sqrt(np.maximum(vt * (c0 - k), 0.0)) / np.abs(k1)
        mass = stats.norm.cdf((d / k1 + h - mean_u) / sd_u) - stats.norm.cdf(
            (d / k1 - h - mean_u) / sd_u
        )
        ok = mass > delta
        lo, hi = np.where(ok, k, lo), np.where(ok, hi, k)
    return lo


def test_noisy_mean(record_property):
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(107)
    b = 150
    r1, r2 = rng.uniform(0.2, 5.0, b), rng.uniform(2.0, 10.0, b)
    s = np.exp(rng.uniform(np.log(0.2), np.log(5.0), b))
    v = np.where(rng.random(b) < 0.3, np.inf, np.exp(rng.uniform(np.log(0.05), np.log(5.0), b)))
    delta = rng.uniform(0.005, 0.3, b)
    with np.errstate(invalid="ignore"):
        gmax = np.where(np.isinf(v), 1.0, v**2 / (v**2 + s**2))
    # members: n = 2, Phi = I, share (1 - 1/r2)(1 - eta), gamma on a grid below gamma_max,
    # mean error w = +-sqrt(r1), x_1 at zeta = rho_1 sqrt(gamma) z_1 on a grid
    frac = np.geomspace(1e-3, 1.0 - 1e-6, 8)[None, :, None, None]
    gam = np.minimum(gmax[:, None, None, None] * frac, 0.999)
    w = np.array([-1.0, 1.0])[None, None, :, None] * np.sqrt(r1)[:, None, None, None]
    zeta = np.linspace(-6.0, 6.0, 25)[None, None, None, :]
    share = ((1 - 1 / r2) * (1 - 1e-9))[:, None, None, None]
    sv = s[:, None, None, None]
    sbar = sv**2 * gam / (1 - gam)
    v1 = share * 4.0 * sbar
    z = zeta / np.sqrt(share * gam)
    k1 = (v1 / 2.0) / (sbar + sv**2)  # Kalman gain of x_1 on T
    vt = v1 - k1 * v1 / 2.0
    d = z * np.sqrt(v1)
    c0 = np.log(v1) + z**2 - np.log(vt)
    q = _interval_quantile(c0, vt, k1, d, w * np.sqrt(sbar), sv, delta[:, None, None, None])
    audit = q.reshape(b, -1).max(axis=1)
    for i in range(b):
        cls = pp.GaussianMeanClass(
            float(r1[i]), float(r2[i]), None if np.isinf(v[i]) else float(v[i])
        )
        mech = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(float(s[i])))
        dd = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 1.0, float(delta[i]))
        assert _basis(mech, dd) == "noisy_mean"
        A.append(audit[i])
        C.append(pp.certify(mech, dd).kappa)
    _check("noisy_mean", A, C, record_property, 150, ratio=0.8)


def test_linear_statistics(record_property):
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(108)
    n_inst = 0
    for noisy in (False, True):
        count = 300 if not noisy else 60
        for _ in range(count):
            n, k = int(rng.integers(3, 6)), int(rng.integers(1, 3))
            a = rng.normal(size=(k, n))
            g = rng.normal(size=(n, n + 2))
            cov = g @ g.T + 0.3 * np.eye(n)
            mu, x = rng.normal(size=n), rng.normal(size=n) * 2
            sd = np.sqrt(np.diag(cov))
            eig = np.linalg.eigvalsh(cov / np.outer(sd, sd))
            # D_i(sigma) = min_c ||diag(sigma)(e_i - A'c)||^2 by least squares
            dmin = min(
                float(
                    np.sum(
                        (
                            sd
                            * (
                                np.eye(n)[i]
                                - a.T
                                @ np.linalg.lstsq(sd[:, None] * a.T, sd * np.eye(n)[i], rcond=None)[
                                    0
                                ]
                            )
                        )
                        ** 2
                    )
                )
                / sd[i] ** 2
                for i in range(n)
            )
            sa = a @ cov @ a.T
            err = a @ (x - mu)
            u2 = float(err @ np.linalg.solve(sa, err))
            r1 = u2 * rng.uniform(1.0, 1.5) + 1e-3
            r2 = max(eig[-1] / eig[0] / dmin, 1.0 + 1e-6) * rng.uniform(1.0, 1.5)
            cls = LinearGaussianClass(r1, r2)
            if not noisy:
                gain = cov @ a.T @ np.linalg.inv(sa)
                m = mu + gain @ err
                vv = np.diag(cov - gain @ a @ cov)
                var0 = np.diag(cov)
                loss = np.log(var0) + (x - mu) ** 2 / var0 - np.log(vv) - (x - m) ** 2 / vv
                audit = float(loss.max())
                mech, delta = pp.LinearStatistic(a), 0.0
            else:
                rr = np.diag(rng.uniform(0.2, 2.0, k))
                delta = float(rng.uniform(0.01, 0.3))
                gain = cov @ a.T @ np.linalg.inv(sa + rr)
                vv = np.diag(cov - gain @ a @ cov)
                var0 = np.diag(cov)
                # Δ_i(T) = c0 - (d_i - K_i u)^2 / V_ii, u = T - A mu ~ N(A(x - mu), R)
                mean_u = gain @ err
                sd_u = np.sqrt(np.einsum("ij,jk,ik->i", gain, rr, gain))
                c0 = np.log(var0) + (x - mu) ** 2 / var0 - np.log(vv)
                audit = float(np.max(_interval_quantile(c0, vv, 1.0, x - mu, mean_u, sd_u, delta)))
                mech = pp.LinearGaussian(a, rr)
            d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 1.0, delta)
            assert _basis(mech, d) == "linear"
            assert cls.contains(pp.GaussianPrior(mu, cov), x, A=a)
            A.append(audit)
            C.append(pp.certify(mech, d).kappa)
            n_inst += 1
    _check("linear", A, C, record_property, 360)


def test_laplace_mean_has_no_finite_certificate(record_property):
    # the certificate is inf (a proof that no finite kappa holds); any member's loss is below
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(109)
    n = 0
    for _ in range(100):
        b = float(np.exp(rng.uniform(-1.0, 1.0)))
        prior = pp.GaussianPrior([0.0, 0.0], np.diag(rng.uniform(0.5, 2.0, 2)))
        x = rng.normal(size=2) * 0.3
        cls = pp.GaussianMeanClass(5.0, 10.0)
        assert cls.contains(prior, x)
        mech = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(b))
        t = float(x.mean() + rng.laplace(0.0, b))
        loss = pp.relative_loss(pp.MarginalDSS(0), prior, mech, x, t)
        d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 1.0, 0.05)
        assert _basis(mech, d) == "noisy_mean_laplace"
        assert np.isfinite(loss)
        A.append(loss)
        C.append(pp.certify(mech, d).kappa)
        n += 1
    _check("noisy_mean_laplace", A, C, record_property, 100, finite=0.0)


# --- bounded error on every person: the mean, linear statistics ---------------------------


def _gauss_quantile(c0, vt, k1, d, mean_u, sd_u, delta):
    """The exact upper δ-quantile of Δ = c0 - (d - k1 u)^2 / vt, u ~ N(mean_u, sd_u^2): the
    value itself when sd_u = 0 (an exact release), else :func:`_interval_quantile`."""
    exact = np.asarray(sd_u) == 0.0
    value = c0 - (d - k1 * mean_u) ** 2 / vt
    q = _interval_quantile(c0, vt, k1, d, mean_u, np.where(exact, 1.0, sd_u), delta)
    return np.where(exact, value, q)


def _mean_conditioning(var0, sa, asa, d, ad, s):
    r"""Gaussian conditioning on :math:`T = \bar x + e`, :math:`e \sim N(0, s^2)`, written out:
    person i's prior variance ``var0``, :math:`\mathrm{Cov}(x_i, \bar x)` = ``sa``,
    :math:`\mathrm{Var}(\bar x)` = ``asa``, ``d`` = x - μ, ``ad`` = :math:`\bar x - \bar\mu`.
    Returns the arguments of :func:`_gauss_quantile`, :math:`\Delta_i = c_0 - (d_i - k_1 u)^2/
    v_t` with the Kalman gain :math:`k_1` and :math:`u = T - \bar\mu \sim N(\bar x - \bar\mu,
    s^2)`."""
    k1 = sa / (asa + s**2)
    vt = var0 - k1 * sa
    c0 = np.log(var0) + d**2 / var0 - np.log(vt)
    return c0, vt, k1, d, ad, s


def _in_bounded_mean_class(mu, cov, x, r1, r2, v, r0) -> bool:
    """Membership of N(mu, cov) in G^{r,V,r0}_x, written out here (slack 1e-9 relative)."""
    n = mu.size
    sd = np.sqrt(np.diag(cov))
    eig = np.linalg.eigvalsh(cov / np.outer(sd, sd))
    sbar = cov.sum() / n**2
    slack = 1.0 + 1e-9
    return bool(
        (x.mean() - mu.mean()) ** 2 / sbar <= r1 * slack
        and eig[-1] / eig[0] <= r2 * (1 - sd.max() ** 2 / (sd**2).sum()) * slack
        and (np.isinf(v) or sbar <= v**2 * slack)
        and np.max(np.abs(x - mu) / sd) <= r0 * slack
    )


def _bounded_mean_instances(rng, b):
    """Random (r1, r2, r0, V, s, δ): a third exact (s = 0), a quarter of the rest at δ = 0."""
    r1, r2 = rng.uniform(0.2, 5.0, b), rng.uniform(2.0, 10.0, b)
    r0 = np.exp(rng.uniform(np.log(0.1), np.log(3.0), b))
    v = np.where(rng.random(b) < 0.25, np.inf, np.exp(rng.uniform(np.log(0.1), np.log(5.0), b)))
    kind = rng.random(b)
    s = np.where(kind < 1 / 3, 0.0, np.exp(rng.uniform(np.log(0.2), np.log(20.0), b)))
    delta = np.where((kind >= 1 / 3) & (kind < 0.5), 0.0, rng.uniform(0.005, 0.3, b))
    return r1, r2, r0, v, s, delta


def _check_kinds(name, audit, cert, s, delta, record_property, ratios) -> None:
    """:func:`_check` separately for the exact release, noise at δ = 0 and noise at δ > 0, with
    the vacuity guard ``ratio`` of each (the three certificates come from different bounds)."""
    audit, cert, s, delta = (np.asarray(a, dtype=float) for a in (audit, cert, s, delta))
    kinds = (s == 0, (s > 0) & (delta == 0), (s > 0) & (delta > 0))
    for sel, ratio in zip(kinds, ratios, strict=True):
        _check(name, audit[sel], cert[sel], record_property, 30, ratio=ratio)


def _mean_release(s: float):
    return pp.ExactMean() if s == 0 else pp.Chain(pp.ExactMean(), pp.GaussianMechanism(s))


def _bounded_mean_check(i, params, mu, cov, x):
    """The class of instance i; asserts N(mu, cov) is in it (its contains, and written out)."""
    r1, r2, r0, v, _, _ = (float(p[i]) for p in params)
    cls = BoundedErrorGaussianClass(
        r1, r2, max_mean_sd=None if math.isinf(v) else v, max_person_error=r0
    )
    prior = pp.GaussianPrior(mu, cov)
    assert cls.contains(prior, x) and _in_bounded_mean_class(mu, cov, x, r1, r2, v, r0), i
    return cls, prior


def _bounded_mean_certs(params):
    out = []
    for i in range(params[0].size):
        r1, r2, r0, v, s, delta = (float(p[i]) for p in params)
        cls = BoundedErrorGaussianClass(
            r1, r2, max_mean_sd=None if math.isinf(v) else v, max_person_error=r0
        )
        d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 1.0, delta)
        assert _basis(_mean_release(s), d) == "bounded_error"
        out.append(pp.certify(_mean_release(s), d).kappa)
    return out


def test_bounded_error_mean(record_property):
    # (1) near the least favourable members of the proof (docs/release_means.md (e)): Phi = I,
    # person 1 holds the share rho_1^2 = c (1 - eta) of the variance and the n - 1 others equal
    # shares; a grid over gamma = Sigmabar / (Sigmabar + s^2) <= gamma_max (Sigmabar <= V^2),
    # the mean error w (|w| <= sqrt r1) and z_1 (|z_1| <= r0). The others' common z_o is what
    # the mean leaves; a grid point is a member only if |z_o| <= r0. mu = 0, x = z sigma.
    rng = np.random.default_rng(114)
    eta, b = 1e-6, 260
    params = _bounded_mean_instances(rng, b)
    r1, r2, r0, v, s, delta = params
    s1 = (1.0 - 1.0 / r2) * (1.0 - eta)
    n = np.clip(np.ceil(1.0 + r2 * (np.sqrt(r1) + r0) ** 2 / r0**2), 2, 40)  # room for z_o
    with np.errstate(divide="ignore", invalid="ignore"):
        gmax = np.where((s == 0) | np.isinf(v), 1.0, v**2 / (v**2 + s**2))
    e = (slice(None), None, None, None)  # axes: instance, gamma, w, z_1
    gam = np.minimum(gmax[e] * np.geomspace(1e-2, 1.0 - 1e-6, 6)[None, :, None, None], 0.999)
    # the exact mean's loss does not depend on the scale: Sigmabar = V^2 (1 - eta), or 1
    exact_sbar = np.where(np.isinf(v), 1.0, v**2 * (1 - eta))[e]
    sbar = np.where((s == 0)[e], exact_sbar, s[e] ** 2 * gam / (1 - gam))
    w = np.concatenate([-np.geomspace(1.0, 0.1, 4), [0.0], np.geomspace(0.1, 1.0, 4)])
    w = w[None, None, :, None] * np.sqrt(r1 * (1 - eta))[e]
    z1 = np.linspace(-1.0, 1.0, 11)[None, None, None, :] * (r0 * (1 - eta))[e]
    sbar, w, z1 = np.broadcast_arrays(sbar, w, z1)
    nn, sh = n[e], s1[e]
    z_o = (w - np.sqrt(sh) * z1) / np.sqrt((nn - 1) * (1 - sh))
    member = np.abs(z_o) <= r0[e] * (1 - eta)
    tot = nn**2 * sbar  # 1' Sigma 1 = ||sigma||^2 (Phi = I)
    var1, var_o = sh * tot, (1 - sh) * tot / (nn - 1)
    q = np.full(sbar.shape, -np.inf)
    for var0, z in ((var1, z1), (var_o, z_o)):  # person 1, and any other (they are alike)
        args = _mean_conditioning(var0, var0 / nn, sbar, z * np.sqrt(var0), w * np.sqrt(sbar), s[e])
        q = np.maximum(q, _gauss_quantile(*args, delta[e]))
    flat = np.where(member, q, -np.inf).reshape(b, -1)
    audit = list(flat.max(axis=1))
    # each instance's worst member as a dense prior: in the class (its own contains, and the
    # check written out here); at a sampled output its loss is the library's exact posterior's
    best = np.unravel_index(flat.argmax(axis=1), sbar.shape[1:])
    for i in range(b):
        at = (i, *(ax[i] for ax in best))
        ni = int(n[i])
        var = np.r_[var1[at], np.full(ni - 1, var_o[at])]
        x = np.r_[z1[at], np.full(ni - 1, z_o[at])] * np.sqrt(var)
        _, prior = _bounded_mean_check(i, params, np.zeros(ni), np.diag(var), x)
        if i < 40:
            t = x.mean() + s[i] * rng.normal()
            c0, vt, k1, d, _, _ = _mean_conditioning(var, var / ni, sbar[at], x, 0.0, s[i])
            mine = np.max(c0 - (d - k1 * t) ** 2 / vt)  # mu = 0: u = T
            lib = pp.relative_loss(pp.MarginalDSS(), prior, _mean_release(float(s[i])), x, t)
            assert math.isclose(mine, lib, rel_tol=1e-7, abs_tol=1e-9), (i, mine, lib)
    cert = _bounded_mean_certs(params)
    _check_kinds("bounded_error", audit, cert, s, delta, record_property, (0.9, 0.9, 0.8))
    # (2) random dense members (n = 2 to 4), the class drawn around each with room to spare
    # (far from the least favourable ones: no ratio guard)
    audit, params2 = [], ([], [], [], [], [], [])
    for n2 in (2, 3, 4):
        b2 = 40
        g = rng.normal(size=(b2, n2, n2 + 2))
        cov = g @ g.transpose(0, 2, 1) + 0.3 * np.eye(n2)
        sd = np.sqrt(np.diagonal(cov, axis1=1, axis2=2))
        eig = np.linalg.eigvalsh(cov / (sd[:, :, None] * sd[:, None, :]))
        spread = 1.0 - sd.max(axis=1) ** 2 / (sd**2).sum(axis=1)
        mu, x = rng.normal(size=(b2, n2)), rng.normal(size=(b2, n2))
        sbar2 = cov.sum(axis=(1, 2)) / n2**2
        w2 = (x.mean(axis=1) - mu.mean(axis=1)) ** 2 / sbar2
        p = _bounded_mean_instances(rng, b2)
        grow = rng.uniform(1.0, 1.5, (4, b2))
        p = (
            w2 * grow[0] + 1e-3,
            np.maximum(eig[:, -1] / eig[:, 0] / spread, n2 / (n2 - 1.0)) * grow[1],
            np.max(np.abs(x - mu) / sd, axis=1) * grow[2],
            np.where(np.isinf(p[3]), np.inf, np.sqrt(sbar2) * grow[3]),
            p[4],
            p[5],
        )
        sa = cov.sum(axis=2) / n2
        args = _mean_conditioning(
            np.diagonal(cov, axis1=1, axis2=2),
            sa,
            sbar2[:, None],
            x - mu,
            (x.mean(axis=1) - mu.mean(axis=1))[:, None],
            p[4][:, None],
        )
        audit.extend(_gauss_quantile(*args, p[5][:, None]).max(axis=1))
        for i in range(b2):
            _bounded_mean_check(i, p, mu[i], cov[i], x[i])
        for acc, new in zip(params2, p, strict=True):
            acc.extend(new)
    cert = _bounded_mean_certs([np.array(a) for a in params2])
    _check("bounded_error", audit, cert, record_property, 120)
    # (3) Laplace noise: the certificate is the pointwise bound log r2 + r0^2, for every output.
    # The member that attains it for the exact mean (z_1 = r0, rho_1^2 = c, w = z_1 / rho_1),
    # small noise, two sampled outputs; the loss from the library's exact (non-Gaussian)
    # posterior, pp.relative_loss, not from the certificate's closed form
    audit, cert = [], []
    for _ in range(30):
        r2, r0 = float(rng.uniform(2.0, 10.0)), float(np.exp(rng.uniform(np.log(0.1), 0.5)))
        sh = (1.0 - 1.0 / r2) * (1.0 - eta)
        z1 = r0 * (1.0 - eta)
        w = z1 / math.sqrt(sh)
        r1 = w**2 * float(rng.uniform(1.0, 2.0))
        var = np.array([sh, 1.0 - sh]) * 4.0  # n = 2, Sigmabar = 1
        z_o = (w - math.sqrt(sh) * z1) / math.sqrt(1.0 - sh)
        x = np.array([z1, z_o]) * np.sqrt(var)
        v = math.inf if rng.random() < 0.5 else float(rng.uniform(1.0, 3.0))
        scale = float(np.exp(rng.uniform(np.log(1e-3), np.log(0.05))))
        pr = (np.array([r1]), np.array([r2]), np.array([r0]), np.array([v]), [scale], [0.05])
        cls, prior = _bounded_mean_check(0, pr, np.zeros(2), np.diag(var), x)
        mech = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(scale))
        d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 1.0, float(rng.choice([0.0, 0.05])))
        assert _basis(mech, d) == "bounded_error"
        ts = x.mean() + rng.laplace(0.0, scale, 2)
        audit.append(max(pp.relative_loss(pp.MarginalDSS(), prior, mech, x, t) for t in ts))
        cert.append(pp.certify(mech, d).kappa)
    _check("bounded_error", audit, cert, record_property, 30, ratio=0.9)


def _linear_conditioning(a, cov, rr, d):
    r"""Gaussian conditioning on :math:`T = Ax + e`, :math:`e \sim N(0, R)`, written out (dense):
    with :math:`K = \Sigma A^\top(A\Sigma A^\top + R)^{-1}`, person i's loss is
    :math:`\Delta_i = c_{0,i} - (d_i - y_i)^2 / v_i` with :math:`y = K(T - A\mu) \sim
    N(KAd, KRK^\top)`, d = x - μ. Returns the arguments of :func:`_gauss_quantile` (k1 = 1),
    then K."""
    gain = cov @ a.T @ np.linalg.inv(a @ cov @ a.T + rr)
    var0 = np.diag(cov)
    vv = var0 - np.einsum("ij,jk,ki->i", gain, a, cov)
    c0 = np.log(var0) + d**2 / var0 - np.log(vv)
    sd_y = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", gain, rr, gain), 0.0))
    return c0, vv, 1.0, d, gain @ (a @ d), sd_y, gain


def _exposed(a) -> bool:
    """Someone is exposed: some e_i lies in A's row space (rank test, written out here)."""
    rank = np.linalg.matrix_rank(a)
    return any(np.linalg.matrix_rank(np.vstack([a, e])) == rank for e in np.eye(a.shape[1]))


def _in_bounded_linear_class(mu, cov, x, a, r1, r2, v, r0) -> bool:
    """Membership of N(mu, cov) in G^{r,V,r0}_{A,x} (docs/linear_bounded.md), written out:
    D_i(sigma) by least squares, as in test_linear_statistics (slack 1e-9 relative)."""
    n = mu.size
    sd = np.sqrt(np.diag(cov))
    eig = np.linalg.eigvalsh(cov / np.outer(sd, sd))
    dmin = min(
        float(
            np.sum(
                (sd * (e - a.T @ np.linalg.lstsq(sd[:, None] * a.T, sd * e, rcond=None)[0])) ** 2
            )
        )
        / sd[i] ** 2
        for i, e in enumerate(np.eye(n))
    )
    sa = a @ cov @ a.T
    err = a @ (x - mu)
    slack = 1.0 + 1e-9
    return bool(
        err @ np.linalg.solve(sa, err) <= r1 * slack
        and eig[-1] / eig[0] <= r2 * dmin * slack
        and (np.isinf(v) or np.linalg.eigvalsh(sa)[-1] <= v**2 * slack)
        and np.max(np.abs(x - mu) / sd) <= r0 * slack
    )


def test_linear_bounded_error(record_property):
    # small random A (k < n <= 6, nobody exposed); members near the proof's least favourable
    # ones (docs/linear_bounded.md): Phi = I, r2 = 1 / min_i D_i (person i* has the largest
    # share c removed by the exact statistics), V = the prior sd of the statistics; the member
    # family is Sigma scaled by t^2 (t <= 1 keeps lambda_max(A Sigma A') <= V^2; without V, t up
    # to 30, so gamma -> 1) times data directions: d in
    # the range of Sigma A' (the posterior mean is then x itself: -log D_i + z_i^2 for the exact
    # statistics), among them the regression of x_{i*} on A x, and random ones; every direction
    # is scaled to max_i |z_i| = r0 (1 - eta). The class's r1 is the largest u^2, times [1, 1.5].
    rng = np.random.default_rng(115)
    eta, b = 1e-6, 240
    params = _bounded_mean_instances(rng, b)  # (r1 is set from the members), r2, r0, V, s, delta
    rows: list[tuple] = []  # (instance, c0, vv, d, mean_y, sd_y) per member and person
    inst: list[dict] = []
    for i in range(b):
        n = int(rng.integers(3, 7))
        k = int(rng.integers(1, min(3, n - 1) + 1))
        a = rng.normal(size=(k, n))
        while _exposed(a):
            a = rng.normal(size=(k, n))
        sd0 = np.exp(rng.normal(0.0, 0.5, n))
        cov0 = np.diag(sd0**2)
        p0 = a @ cov0 @ a.T
        # D_i / sigma_i^2: the share of x_i's variance the exact statistics leave (Phi = I)
        dsh = 1.0 - np.diag(cov0 @ a.T @ np.linalg.solve(p0, a @ cov0)) / sd0**2
        star = int(np.argmin(dsh))
        r2 = float(1.0 / dsh[star]) * (1.0 + eta)
        r0 = float(params[2][i])
        lams = [np.linalg.solve(p0, a[:, star])] + [rng.normal(size=k) for _ in range(3)]
        dirs = [cov0 @ a.T @ lam for lam in lams] + [rng.normal(size=n) * sd0 for _ in range(2)]
        zs = [dd / sd0 / np.max(np.abs(dd / sd0)) * r0 * (1.0 - eta) for dd in dirs]
        u2 = max(float((a @ (z * sd0)) @ np.linalg.solve(p0, a @ (z * sd0))) for z in zs)
        r1 = u2 * float(rng.uniform(1.0, 1.5)) + 1e-9
        v0 = math.sqrt(np.linalg.eigvalsh(p0)[-1]) * (1.0 + eta)
        v = math.inf if np.isinf(params[3][i]) else v0
        s, delta = float(params[4][i]) * v0 / 2.0, float(params[5][i])  # noise sd against V
        rr = np.zeros((k, k)) if s == 0 else np.diag((s * rng.uniform(1.0, 1.5, k)) ** 2)
        scales = [1.0] if s == 0 else list(np.geomspace(0.05, 1.0 if v < math.inf else 30.0, 7))
        inst.append(dict(a=a, r1=r1, r2=r2, r0=r0, v=v, rr=rr, delta=delta, sd0=sd0))
        members = []
        for t in scales:
            cov = cov0 * t**2
            for z in zs:
                d = z * sd0 * t
                c0, vv, _, _, mean_y, sd_y, _ = _linear_conditioning(a, cov, rr, d)
                rows.extend((i, *row) for row in zip(c0, vv, d, mean_y, sd_y, strict=True))
                members.append((t, z))
        inst[-1]["members"] = members
    idx, c0, vv, d, mean_y, sd_y = (np.array(col) for col in zip(*rows, strict=True))
    deltas = np.array([it["delta"] for it in inst])[idx]
    q = _gauss_quantile(c0, vv, 1.0, d, mean_y, sd_y, deltas)
    audit = np.full(b, -np.inf)
    np.maximum.at(audit, idx, q)
    cert = []
    for i, it in enumerate(inst):
        a, rr = it["a"], it["rr"]
        cls = BoundedErrorLinearClass(
            it["r1"],
            it["r2"],
            max_stat_sd=None if math.isinf(it["v"]) else it["v"],
            max_person_error=it["r0"],
        )
        # every member of the instance, in the class by its own contains and written out
        for t, z in it["members"]:
            cov, x = np.diag((it["sd0"] * t) ** 2), z * it["sd0"] * t
            assert cls.contains(pp.GaussianPrior(np.zeros(x.size), cov), x, A=a), i
            assert _in_bounded_linear_class(
                np.zeros(x.size), cov, x, a, it["r1"], it["r2"], it["v"], it["r0"]
            ), i
        mech = pp.LinearStatistic(a) if not np.any(rr) else pp.LinearGaussian(a, rr)
        dd = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 1.0, it["delta"])
        assert _basis(mech, dd) == "linear_bounded_error"
        cert.append(pp.certify(mech, dd).kappa)
        if i < 30:  # the conditioning written out agrees with the library's exact posterior
            t, z = it["members"][-1]
            cov, x = np.diag((it["sd0"] * t) ** 2), z * it["sd0"] * t
            out = a @ x + (rng.multivariate_normal(np.zeros(a.shape[0]), rr) if np.any(rr) else 0.0)
            c0_, vv_, _, d_, _, _, gain = _linear_conditioning(a, cov, rr, x)
            mine = float(np.max(c0_ - (d_ - gain @ out) ** 2 / vv_))
            lib = pp.relative_loss(
                pp.MarginalDSS(), pp.GaussianPrior(np.zeros(x.size), cov), mech, x, out
            )
            assert math.isclose(mine, lib, rel_tol=1e-7, abs_tol=1e-9), (i, mine, lib)
    _check_kinds(
        "linear_bounded_error", audit, cert, params[4], params[5], record_property, (0.9, 0.9, 0.8)
    )


# --- Prop 4, tight composition, Prop 3 ---------------------------------------------------------


def test_prop4_joint_release(record_property):
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(110)
    n = 0
    for k, j, l_out in ((2, 2, 3), (3, 3, 2), (4, 2, 4)):
        b = 350
        m = _random_kernels(rng, b, k, j, True)
        post = _random_kernels(rng, b, j, l_out, True)
        joint = (m[:, :, :, None] * post[:, None, :, :]).reshape(b, k, j * l_out)
        delta = _deltas(rng, b)
        audit = kernel_audit(joint, delta)  # the joint kernel enumerated here
        for i in range(b):
            mech = pp.Joint(pp.FiniteKernel(m[i]), pp.FiniteKernel(post[i]))
            d = PDP(1.0, float(delta[i]))
            assert _basis(mech, d) == "prop4"
            A.append(audit[i])
            C.append(pp.certify(mech, d).kappa)
        n += b
    _check("prop4", A, C, record_property, 1000, close=0.9)


def test_tight_composition_pure(record_property):
    # delta = 0: the worst output tuple at each pair (each part's largest loss, positive
    # probability), plus Laplace/geometric atoms k/b, Delta_q of the sum, max over pairs
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(111)
    n = 0
    for k in (2, 3, 4):
        b = 500
        parts = [_random_kernels(rng, b, k, 3, zeros) for zeros in (False, True)]
        counts = rng.integers(1, 3, (b, 2))
        lap = np.exp(rng.uniform(0.0, 2.0, b))
        n_lap = rng.integers(0, 3, b)
        audit = np.full(b, -np.inf)
        for i in range(k):
            for jj in (i - 1, i + 1):
                if not 0 <= jj < k:
                    continue
                total = n_lap / lap
                for m, c in zip(parts, counts.T, strict=True):
                    with np.errstate(divide="ignore", invalid="ignore"):
                        ell = np.where(m[:, jj] > 0, np.log(m[:, i]) - np.log(m[:, jj]), np.inf)
                    total = total + c * np.where(m[:, i] > 0, ell, -np.inf).max(axis=1)
                audit = np.maximum(audit, two_point(total))
        for i in range(b):
            mechs = [pp.FiniteKernel(parts[0][i]), pp.FiniteKernel(parts[1][i])]
            cnt = [int(counts[i, 0]), int(counts[i, 1])]
            if n_lap[i]:
                mechs.append(pp.LaplaceMechanism(float(lap[i])))
                cnt.append(int(n_lap[i]))
            mech = pp.ComposedRelease(mechs, cnt)
            d = pp.pure_dp(1.0)
            assert _basis(mech, d) == "tight"
            A.append(audit[i])
            C.append(pp.certify(mech, d).kappa)
        n += b
    _check("tight (delta = 0)", A, C, record_property, 1500, close=0.9)


def test_tight_composition_monte_carlo(record_property):
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(112)
    n_draws, b = 20_000, 120
    n = 0
    for _ in range(b):
        eps0 = float(rng.uniform(0.1, 1.5))
        kk = int(rng.integers(2, 4))
        c_rr = int(rng.integers(2, 5))  # at least two releases: a composition
        lap = float(np.exp(rng.uniform(0.5, 2.5)))
        c_lap = int(rng.integers(0, 3))
        geo = float(np.exp(rng.uniform(0.0, 1.5)))
        c_geo = int(rng.integers(0, 2))
        delta = float(rng.uniform(1e-3, 0.3))
        # x = 0 against x' = 1: RR keeps 0 with e^eps0/(e^eps0 + k - 1) (loss eps0), outputs 1
        # with 1/(...) (loss -eps0), else 0; Laplace and geometric losses from their draws
        keep = math.exp(eps0) / (math.exp(eps0) + kk - 1)
        u = rng.random((c_rr, n_draws))
        ell = np.where(u < keep, eps0, np.where(u < keep + (1 - keep) / (kk - 1), -eps0, 0.0))
        total = ell.sum(axis=0)
        t = rng.laplace(0.0, lap, (c_lap, n_draws))
        total += ((np.abs(t - 1) - np.abs(t)) / lap).sum(axis=0)
        p = 1 - math.exp(-1 / geo)
        t = rng.geometric(p, (c_geo, n_draws)) - rng.geometric(p, (c_geo, n_draws))
        total += ((np.abs(t - 1) - np.abs(t)) / geo).sum(axis=0)
        audit = float(mc_audit(total[None, :], np.array([delta]))[0])
        mechs, cnt = [pp.RandomizedResponse(eps0, kk)], [c_rr]
        for mm, cc in ((pp.LaplaceMechanism(lap), c_lap), (pp.GeometricMechanism(geo), c_geo)):
            if cc:
                mechs.append(mm)
                cnt.append(cc)
        mech = pp.ComposedRelease(mechs, cnt)
        d = PDP(1.0, delta)
        assert _basis(mech, d) == "tight"
        A.append(audit)
        C.append(pp.certify(mech, d).kappa)
        n += 1
    _check("tight (delta > 0)", A, C, record_property, 120, ratio=0.8)


def test_prop3_additive_composition(record_property):
    # finite kernels on different numbers of datasets: the tight composition refuses, Prop 3
    # adds the parts' certificates; audit on the common datasets, exact over output pairs
    A: list[float] = []
    C: list[float] = []
    rng = np.random.default_rng(113)
    n = 0
    for _ in range(150):
        k1, k2 = rng.choice([2, 3, 4], 2, replace=False)
        m1, m2 = _random_kernels(rng, 1, k1, 3, True)[0], _random_kernels(rng, 1, k2, 2, True)[0]
        delta = float(_deltas(rng, 1)[0])
        kmin = min(k1, k2)
        joint = (m1[:kmin, :, None] * m2[:kmin, None, :]).reshape(1, kmin, -1)
        audit = float(kernel_audit(joint, np.array([delta]))[0])
        mech = pp.Composition(pp.FiniteKernel(m1), pp.FiniteKernel(m2))
        d = PDP(1.0, delta)
        assert _basis(mech, d) == "prop3"
        A.append(audit)
        C.append(pp.certify(mech, d).kappa)
        n += 1
    _check("prop3", A, C, record_property, 150)


def test_every_theorem_is_swept():
    names = {t.name for t in THEOREMS}
    swept = {
        "prop6",
        "appc",
        "prop7",
        "prop8",
        "noisy_mean",
        "linear",
        "noisy_mean_laplace",
        "prop4",
        "tight",
        "prop3",
        "bounded_error",
        "linear_bounded_error",
    }
    assert names - swept == {"prop5"}  # Prop 5 only refuses (sender post-processing)
    with pytest.raises(pp.UnsupportedCombinationError):
        pp.certify(pp.Chain(pp.GaussianMechanism(1.0), pp.GaussianMechanism(1.0)), PDP(1.0, 0.1))
