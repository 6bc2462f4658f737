"""Independent oracles for privacy-loss accounting: exact lattices and Monte Carlo.

Written from the definitions (docs/math.md §6), sharing no code with ``persuasive.pld`` or
``persuasive.certify``: each part's privacy-loss law against the worst neighbour is put on a
fine lattice ``h Z`` rounding *down* (a lower bound on every tail) or *up* (an upper bound),
composed by ``scipy.signal.fftconvolve``, and read off. Monte Carlo oracles sample the outputs
with numpy, compute the loss from the densities and report a Clopper-Pearson lower confidence
bound on the (1 - δ)-quantile.

A part is a dict: ``{"atoms": [(value, prob), ...], "cont": (a, b, cdf, mass)}`` where the
continuous part has mass ``mass`` on (a, b) with cdf ``cdf`` (an increasing function with
cdf(a) = 0); ``inf`` atoms are allowed.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import signal, stats

#: Allowance for the floating-point error of the FFT convolutions in a tail (each oracle errs
#: by this much in its own safe direction).
FFT_ATOL = 1e-12


def laplace_part(b: float) -> dict:
    """Loss of Laplace(b) noise at x = 0 against x' = 1: atoms +c (1/2), -c (e^{-c}/2), and on
    (-c, c) the cdf 1/2 exp(-(c - u)/2) - 1/2 exp(-c) (c = 1/b)."""
    c = 1.0 / b
    base = 0.5 * math.exp(-c)

    def cdf(u):
        return 0.5 * np.exp(-(c - np.asarray(u)) / 2.0) - base

    return {"atoms": [(c, 0.5), (-c, base)], "cont": (-c, c, cdf, 0.5 - base)}


def geometric_part(b: float) -> dict:
    """Two-sided geometric, P(k) ∝ exp(-|k|/b): the loss is +1/b on k <= 0, -1/b on k >= 1."""
    a = math.exp(-1.0 / b)
    p_up = 1.0 / (1.0 + a)  # P(k <= 0) = (1 - a)/(1 + a) * 1/(1 - a)
    return {"atoms": [(1.0 / b, p_up), (-1.0 / b, 1.0 - p_up)]}


def kernel_parts(matrix: np.ndarray, pairs) -> dict:
    """Per ordered pair (x, x'), the atoms log(m[x, t] / m[x', t]) with mass m[x, t]."""
    out = {}
    for a, b in pairs:
        atoms = []
        for t in range(matrix.shape[1]):
            p, q = matrix[a, t], matrix[b, t]
            if p > 0:
                atoms.append((math.inf if q == 0 else math.log(p / q), p))
        out[(a, b)] = {"atoms": atoms}
    return out


def rr_matrix(eps0: float, k: int) -> np.ndarray:
    keep = math.exp(eps0) / (math.exp(eps0) + k - 1)
    m = np.full((k, k), (1.0 - keep) / (k - 1))
    np.fill_diagonal(m, keep)
    return m


class Lattice:
    """A sub-probability on h Z (``mass[i]`` at ``h (offset + i)``) plus an atom at +inf."""

    def __init__(self, h: float, offset: int, mass: np.ndarray, inf: float = 0.0):
        self.h, self.offset, self.mass, self.inf = h, offset, mass, inf

    @classmethod
    def of_part(cls, part: dict, h: float, down: bool, snap: float = 0.0) -> Lattice:
        """``part`` on the lattice, rounding down or up; an atom within ``snap`` lattice units
        of a lattice point is put on it (for lattices aligned with the atoms by construction,
        whose float quotient is off by ~1e-16; the caller allows for that error)."""
        atoms = [(v, p) for v, p in part.get("atoms", []) if p > 0]
        inf = sum(p for v, p in atoms if v == math.inf)
        fin = [(v, p) for v, p in atoms if v != math.inf]
        idx, w = [], []
        for v, p in fin:
            u = v / h
            if snap > 0 and abs(u - round(u)) <= snap:
                j = round(u)
            else:  # a hair beyond the float quotient, in the safe direction
                j = math.floor(u - 1e-9) if down else math.ceil(u + 1e-9)
            idx.append(j)
            w.append(p)
        if "cont" in part:
            a, b, cdf, _ = part["cont"]
            j0, j1 = math.floor(a / h) - 1, math.ceil(b / h) + 1
            edges = np.clip(h * np.arange(j0, j1 + 1, dtype=np.float64), a, b)
            m = np.diff(cdf(edges))
            js = np.arange(j0, j1) if down else np.arange(j0 + 1, j1 + 1)
            idx.extend(js.tolist())
            w.extend(np.maximum(m, 0.0).tolist())
        idx_a = np.asarray(idx, dtype=np.int64)
        lo = int(idx_a.min())
        mass = np.bincount(idx_a - lo, weights=np.asarray(w)).astype(np.float64)
        return cls(h, lo, mass, inf)

    def __mul__(self, other: Lattice) -> Lattice:
        conv = (
            signal.fftconvolve(self.mass, other.mass)
            if min(self.mass.size, other.mass.size) > 64
            else np.convolve(self.mass, other.mass)
        )
        fin1, fin2 = 1.0 - self.inf, 1.0 - other.inf
        return Lattice(
            self.h,
            self.offset + other.offset,
            np.maximum(conv, 0.0),
            1.0 - fin1 * fin2,
        )

    def power(self, k: int) -> Lattice:
        out, base = None, self
        while k:
            if k & 1:
                out = base if out is None else out * base
            k >>= 1
            if k:
                base = base * base
        assert out is not None
        return out

    def tail_index(self, j: np.ndarray) -> np.ndarray:
        """P[J > j] for lattice indices j (finite part plus the +inf atom)."""
        cum = np.concatenate([np.cumsum(self.mass[::-1])[::-1], [0.0]])
        pos = np.clip(np.asarray(j) - self.offset + 1, 0, self.mass.size)
        return cum[pos] + self.inf


def composed(parts: list[tuple[dict, int]], h: float, down: bool, snap: float = 0.0) -> Lattice:
    lat = None
    for part, k in parts:
        piece = Lattice.of_part(part, h, down, snap).power(k)
        lat = piece if lat is None else lat * piece
    assert lat is not None
    return lat


class Bracket:
    r"""Lower and upper lattices of a composition, one pair per neighbour pair, composed once.

    ``per_pair`` holds one list of (part, count) per neighbour pair; the supremum over pairs is
    taken of each side."""

    def __init__(self, per_pair: list[list[tuple[dict, int]]], h: float, snap: float = 0.0):
        self.h = h
        self.lats = [
            (composed(parts, h, True, snap), composed(parts, h, False, snap)) for parts in per_pair
        ]

    def kappa(self, delta: float) -> tuple[float, float]:
        r"""``(lower, upper)`` bounds on :math:`\kappa(\delta) = \inf\{\varepsilon \ge 0 :
        \sup_{pairs} P[\sum \ell > \varepsilon] \le \delta\}`."""
        lows, ups = [], []
        for down, up in self.lats:
            for lat, target, out in ((down, delta + FFT_ATOL, lows), (up, delta - FFT_ATOL, ups)):
                js = np.arange(0, max(lat.offset + lat.mass.size, 0) + 1)
                ok = np.flatnonzero(lat.tail_index(js) <= target)
                out.append(math.inf if ok.size == 0 else float(js[ok[0]] * self.h))
        return max(lows), max(ups)

    def tail(self, eps: float) -> tuple[float, float]:
        r"""``(lower, upper)`` bounds on :math:`\sup_{pairs} P[\sum\ell > \varepsilon]`."""
        # P[S_down > eps] <= P[S > eps] <= P[S_up > eps]; on the lattice "> eps" is
        # "index > floor(eps / h)", taken a hair wider on the safe side of each
        j_lo = np.array([math.floor(eps / self.h + 1e-9)])
        j_up = np.array([math.floor(eps / self.h - 1e-9)])
        lows = [float(d.tail_index(j_lo)[0]) - FFT_ATOL for d, _ in self.lats]
        ups = [float(u.tail_index(j_up)[0]) + FFT_ATOL for _, u in self.lats]
        return max(0.0, max(lows)), min(1.0, max(ups))


def kappa_bracket(
    per_pair: list[list[tuple[dict, int]]], delta: float, h: float
) -> tuple[float, float]:
    """:meth:`Bracket.kappa` of a freshly composed bracket."""
    return Bracket(per_pair, h).kappa(delta)


# --- Monte Carlo ------------------------------------------------------------------------------


def sample_loss(part: str, param: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """Privacy losses at x = 0 against x' = 1, from sampled outputs and the two densities."""
    if part == "laplace":
        t = rng.laplace(0.0, param, size)
        return (np.abs(t - 1.0) - np.abs(t)) / param
    if part == "geometric":
        q = 1.0 - math.exp(-1.0 / param)
        t = rng.geometric(q, size) - rng.geometric(q, size)  # two-sided geometric on Z
        return (np.abs(t - 1.0) - np.abs(t)) / param
    raise ValueError(part)


def sample_kernel_loss(
    matrix: np.ndarray, a: int, b: int, size: int, rng: np.random.Generator
) -> np.ndarray:
    t = rng.choice(matrix.shape[1], size=size, p=matrix[a] / matrix[a].sum())
    with np.errstate(divide="ignore"):
        return np.log(matrix[a, t]) - np.log(matrix[b, t])


def cp_rank(n: int, delta: float, confidence: float) -> int:
    """Smallest k with Beta^{-1}(1 - confidence; k, n - k + 1) > delta (k-th largest sample),
    by bisection (the bound increases with k); 0 if no k <= n works."""

    def low(k: int) -> float:
        return float(stats.beta.ppf(1.0 - confidence, k, n - k + 1))

    if low(n) <= delta:
        return 0
    lo, hi = 1, n
    while lo < hi:
        mid = (lo + hi) // 2
        if low(mid) > delta:
            hi = mid
        else:
            lo = mid + 1
    return lo


def mc_kappa_lower(losses: np.ndarray, delta: float, confidence: float = 0.999) -> float:
    r"""A value v with :math:`P[\ell \ge v] > \delta` at the given confidence: the k-th
    largest sample for the Clopper-Pearson rank k (so κ(δ) >= v, ties ℓ = κ not failures
    being irrelevant: P[ℓ > v'] > δ for every v' < v)."""
    k = cp_rank(losses.size, delta, confidence)
    assert k > 0, "too few samples"
    return float(np.partition(losses, losses.size - k)[losses.size - k])
