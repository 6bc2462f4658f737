r"""Release the mean of a numeric column (or one mean per group) with a certificate.

* Exact mean: Prop 7 (Bon et al. 2026), :math:`(\mathcal I, \mathcal G^r_x, r_1 + \log r_2,
  0)`-PP, sharp.
* Mean plus Gaussian noise: :class:`~persuasive.certify.NoisyMean`, this library's extension
  (``docs/release_means.md``), an upper bound at δ > 0 under the class with the prior sd of the
  mean bounded by ``max_mean_sd``. Laplace noise is refused: it has no finite κ against this
  class (:class:`~persuasive.certify.noisy_mean_laplace.NoisyMeanLaplace`, proved).
* Group means over disjoint groups: under a product prior across groups each individual's
  posterior depends only on its own group's mean, so κ is the largest per-group κ (parallel
  composition, proved in ``docs/release_means.md``); a joint (correlated) prior is refused.

Nothing in a release's ``spec`` or ``certificate`` depends on the data (Assumption 1): both are
functions of (r1, r2, noise, max_mean_sd, delta) only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from persuasive import _validation as v
from persuasive.certify import certify
from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.certify.noisy_mean_laplace import LAPLACE_NO_FINITE_KAPPA
from persuasive.classes import GaussianMeanClass
from persuasive.definitions import PersuasivePrivacy
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms import Chain, ExactMean, GaussianMechanism, Mechanism
from persuasive.results import Certificate
from persuasive.scores import MarginalDSS

Noise = tuple[str, float] | None

#: Relative width at which the calibration bisections stop (the proven end is returned).
CALIBRATION_RTOL: float = 1e-6


def _noise(noise: Any) -> Noise:
    if noise is None:
        return None
    if not isinstance(noise, tuple) or len(noise) != 2 or noise[0] not in ("gaussian", "laplace"):
        raise ValidationError(
            f'noise must be None, ("gaussian", sigma) or ("laplace", scale); got {noise!r}'
        )
    return noise[0], v.real("noise scale", noise[1], low=0.0, low_open=True)


def n_min(r2: float) -> int:
    """The smallest n for which 𝒢^r is non-empty: r2 >= n/(n-1), and n >= 2."""
    return max(2, math.ceil(r2 / (r2 - 1.0) - 1e-12))


def _parts(
    r1: float, r2: float, noise: Noise, max_mean_sd: float | None, delta: float
) -> tuple[Mechanism, PersuasivePrivacy, Certificate, dict[str, Any]]:
    """Mechanism, definition (κ = the certified κ), certificate and spec: data-free."""
    cls = GaussianMeanClass(r1, r2, max_mean_sd=max_mean_sd)
    delta = v.real("delta", delta, low=0.0, high=1.0, high_open=True)
    mech_doc: dict[str, Any] = {"type": "exact_mean"}
    mech: Mechanism = ExactMean()
    if noise is not None:
        kind, scale = noise
        if kind == "laplace":
            raise UnsupportedCombinationError(LAPLACE_NO_FINITE_KAPPA)
        if delta <= 0.0:
            raise ValidationError(
                "delta must be > 0 with Gaussian noise (e.g. delta = 0.05); got delta = 0: "
                "unbounded noise gives no finite kappa at delta = 0 (docs/release_means.md)"
            )
        mech = Chain(ExactMean(), GaussianMechanism(scale))
        mech_doc = {
            "type": "chain",
            "first": mech_doc,
            "post": {"type": "gaussian", "sigma": scale},
        }
    probe = certify(mech, PersuasivePrivacy(MarginalDSS(), cls, math.inf, delta))
    definition = PersuasivePrivacy(MarginalDSS(), cls, probe.kappa, delta)
    cert = certify(mech, definition)
    priors: dict[str, Any] = {"class": "gaussian_mean", "r1": cls.r1, "r2": cls.r2}
    if max_mean_sd is not None:
        priors["max_mean_sd"] = cls.max_mean_sd
    spec = {
        "mechanism": mech_doc,
        "definition": {
            "kind": "pp",
            "kappa": cert.kappa,
            "delta": delta,
            "scores": [{"type": "marginal_dss"}],
            "priors": priors,
        },
    }
    return mech, definition, cert, spec


def _statement(cert: Certificate, cls: dict[str, Any], noise: Noise, what: str) -> str:
    how = "exactly" if noise is None else f"with Gaussian noise of sd {noise[1]:g}"
    v_part = (
        f", whose prior sd of the mean is at most {cls['max_mean_sd']:g}"
        if "max_mean_sd" in cls
        else ""
    )
    prob = "" if cert.delta == 0 else f" except with probability at most {cert.delta:g}"
    return (
        f"Publishing {what} {how} protects every individual against any Receiver with a "
        f"Gaussian prior on the data whose guess of the mean is within sqrt(r1) = "
        f"{math.sqrt(cls['r1']):.4g} prior sds of the true mean, whose correlations satisfy "
        f"c_Phi <= {cls['r2']:g} * (1 - max_i sigma_i^2 / sum_j sigma_j^2){v_part}: such a "
        f"Receiver cannot improve its Dawid-Sebastiani score for any one person's value by "
        f"more than {cert.kappa:.4g} nats{prob} ({cert.basis})."
    )


def _curve(
    r1: float, r2: float, noise: Noise, max_mean_sd: float | None, delta: float, xs: Any
) -> tuple[NDArray[np.float64], NDArray[np.float64], str]:
    if noise is None:
        grid = np.linspace(0.0, 2.0 * r1, 41)[1:] if xs is None else np.asarray(xs, float)
        return grid, grid + math.log(r2), "r1 (squared prior-mean error bound)"
    s = noise[1]
    grid = np.geomspace(s / 10.0, s * 10.0, 41) if xs is None else np.asarray(xs, float)
    kap = [gaussian_noise_kappa(r1, r2, float(g), max_mean_sd, delta)[0] for g in grid]
    return grid, np.asarray(kap), "Gaussian noise sd"


@dataclass(frozen=True)
class MeanRelease:
    """A released mean with its certificate (``kind = "mean"``; RELEASE_CONTRACT.md)."""

    value: float
    n: int
    r1: float
    r2: float
    noise: Noise
    max_mean_sd: float | None
    delta: float
    certificate: Certificate
    spec: dict[str, Any] = field(repr=False)
    kind: str = "mean"

    def summary(self) -> dict[str, Any]:
        """Data-dependent facts for the report (never for the certificate)."""
        return {
            "n": self.n,
            "value": self.value,
            "kappa": self.certificate.kappa,
            "delta": self.delta,
            "exact": self.certificate.exact,
            "noise": None if self.noise is None else list(self.noise),
        }

    def calibration_curve(self, xs: ArrayLike | None = None) -> Any:
        """κ against r1 (exact mean) or against the noise sd: ``(xs, kappas, label)``."""
        return _curve(self.r1, self.r2, self.noise, self.max_mean_sd, self.delta, xs)

    def statement(self) -> str:
        """The guarantee in one plain sentence."""
        priors = self.spec["definition"]["priors"]
        return _statement(self.certificate, priors, self.noise, "the mean")


@dataclass(frozen=True)
class GroupMeansRelease:
    """One released mean per group (``kind = "group_means"``); ``values`` has columns
    group, ``mean`` and ``n``."""

    values: pl.DataFrame
    r1: float
    r2: float
    noise: Noise
    max_mean_sd: float | None
    delta: float
    certificate: Certificate
    spec: dict[str, Any] = field(repr=False)
    kind: str = "group_means"

    def summary(self) -> dict[str, Any]:
        """Data-dependent facts for the report (never for the certificate)."""
        return {
            "n_groups": self.values.height,
            "min_group_size": int(self.values["n"].min()),  # type: ignore[arg-type]
            "kappa": self.certificate.kappa,
            "delta": self.delta,
            "exact": self.certificate.exact,
            "noise": None if self.noise is None else list(self.noise),
        }

    def calibration_curve(self, xs: ArrayLike | None = None) -> Any:
        """κ against r1 (exact means) or against the noise sd: ``(xs, kappas, label)``."""
        return _curve(self.r1, self.r2, self.noise, self.max_mean_sd, self.delta, xs)

    def statement(self) -> str:
        """The guarantee in one plain sentence (per group; groups independent a priori)."""
        priors = self.spec["definition"]["priors"]
        return _statement(
            self.certificate,
            priors,
            self.noise,
            "one mean per group (a Receiver whose prior treats the groups as independent)",
        )


def _values(values: Any) -> NDArray[np.float64]:
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf" or arr.dtype.kind == "b":
        raise ValidationError(
            f"values must be a 1-d array of real numbers; got dtype {arr.dtype} ({values!r:.60})"
        )
    arr = arr.astype(np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValidationError(f"values must be a non-empty 1-d array; got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValidationError(f"values[{i}] = {arr[i]} is not finite; remove NaN/inf first")
    return arr


def _check_n(n: int, r2: float, where: str) -> None:
    if n < n_min(r2):
        raise ValidationError(
            f"{where} has n = {n} value(s), but the class G^r is empty unless r2 >= n/(n-1) "
            f"(r2 = {r2:g} needs n >= {n_min(r2)}); a vacuous guarantee is not certified "
            "(the mean of one person is that person's value)"
        )


def release_mean(
    values: ArrayLike,
    *,
    r1: float,
    r2: float,
    noise: Noise = None,
    max_mean_sd: float | None = None,
    delta: float = 0.0,
    rng: Any = None,
) -> MeanRelease:
    r"""Release the mean of ``values`` (exactly, or plus Gaussian noise) with a certificate.

    Parameters
    ----------
    values : array_like, shape (n,)
        Finite real numbers, n >= 2 and r2 >= n/(n-1).
    r1, r2 : float
        The class :math:`\mathcal G^r_x` of Prop 7 (r1 > 0, r2 > 1).
    noise : None, ("gaussian", sigma) or ("laplace", scale)
        Laplace noise raises UnsupportedCombinationError: it has no finite κ against
        :math:`\mathcal G^{r,V}_x` (NoisyMeanLaplace, proved in ``docs/release_means.md``).
    max_mean_sd : float, optional
        Bound V on the Receiver's prior sd of the mean (only noise uses it).
    delta : float
        Failure probability; must be > 0 with noise (κ is infinite at δ = 0).
    rng : None, int or numpy.random.Generator
        Randomness of the noise.

    Examples
    --------
    >>> from persuasive.release.means import release_mean
    >>> rel = release_mean([1.0, 2.0, 6.0], r1=1.0, r2=4.0)
    >>> rel.value, round(rel.certificate.kappa, 6), rel.certificate.basis
    (3.0, 2.386294, 'Prop 7 (Bon et al. 2026)')
    """
    arr = _values(values)
    nz = _noise(noise)
    mech, _, cert, spec = _parts(r1, r2, nz, max_mean_sd, delta)
    _check_n(arr.size, float(r2), "values")
    out = float(np.atleast_1d(mech.sample(arr, 1, np.random.default_rng(rng))).ravel()[0])
    spec = {"name": "mean_release", "description": "the mean of a numeric column", **spec}
    return MeanRelease(
        out, int(arr.size), float(r1), float(r2), nz, max_mean_sd, float(delta), cert, spec
    )


def release_group_means(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    value: str,
    group: str,
    r1: float,
    r2: float,
    noise: Noise = None,
    max_mean_sd: float | None = None,
    delta: float = 0.0,
    rng: Any = None,
    independent_groups: bool = True,
) -> GroupMeansRelease:
    r"""Release one mean of ``value`` per level of ``group`` (disjoint groups).

    κ is the per-group κ (parallel composition under a product prior across groups,
    ``docs/release_means.md``). ``independent_groups=False`` (a joint prior class over all
    individuals, groups correlated) is refused: composing the groups would need Prop 3, whose
    conjugacy condition fails for an exact release of a Gaussian class.

    Examples
    --------
    >>> import polars as pl
    >>> from persuasive.release.means import release_group_means
    >>> df = pl.DataFrame({"g": ["a", "a", "b", "b", "b"], "y": [1.0, 3.0, 2.0, 2.0, 5.0]})
    >>> rel = release_group_means(df, value="y", group="g", r1=1.0, r2=4.0)
    >>> rel.values.sort("g")["mean"].to_list(), round(rel.certificate.kappa, 6)
    ([2.0, 3.0], 2.386294)
    """
    if not independent_groups:
        raise UnsupportedCombinationError(
            "group means under a joint (correlated) prior over all groups are not certified: "
            "combining the groups would need Prop 3, which requires a class conjugate to the "
            "first release, and the posterior after an exact release of a Gaussian class is "
            "singular (not in the class); declare independent groups or release one mean"
        )
    nz = _noise(noise)
    _, _, cert, spec = _parts(r1, r2, nz, max_mean_sd, delta)
    lazy = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    if not isinstance(lazy, pl.LazyFrame):
        raise ValidationError(f"frame must be a polars DataFrame or LazyFrame; got {frame!r:.60}")
    schema = lazy.collect_schema()
    for arg, col in (("value", value), ("group", group)):
        if col not in schema:
            raise ValidationError(f"{arg} = {col!r} is not a column; columns: {schema.names()}")
    if not schema[value].is_numeric():
        raise ValidationError(f"value column {value!r} must be numeric; got {schema[value]}")
    checks = lazy.select(
        pl.col(value).is_null().sum().alias("null"),
        (~pl.col(value).cast(pl.Float64).is_finite()).sum().alias("nonfinite"),
        pl.col(group).is_null().sum().alias("nullkey"),
        pl.len().alias("rows"),
    ).collect()
    if checks["rows"][0] == 0:
        raise ValidationError("frame is empty: there is no mean to release")
    if checks["null"][0] or checks["nonfinite"][0]:
        raise ValidationError(f"value column {value!r} has missing, NaN or infinite entries")
    if checks["nullkey"][0]:
        raise ValidationError(f"group column {group!r} has missing keys; fill or drop them")
    means = (
        lazy.group_by(group)
        .agg(pl.col(value).cast(pl.Float64).mean().alias("mean"), pl.len().alias("n"))
        .sort(group)
        .collect()
    )
    small = means.filter(pl.col("n") < n_min(float(r2)))
    if small.height:
        _check_n(int(small["n"][0]), float(r2), f"group {small[group][0]!r}")
    if nz is not None:
        noise_draw = np.random.default_rng(rng).normal(0.0, nz[1], size=means.height)
        means = means.with_columns(pl.col("mean") + pl.Series(noise_draw))
    spec = {
        "name": "group_means_release",
        "description": "one mean per group; disjoint groups, product prior across groups "
        "(parallel composition, docs/release_means.md)",
        **spec,
    }
    return GroupMeansRelease(means, float(r1), float(r2), nz, max_mean_sd, float(delta), cert, spec)


def _bisect(f: Any, lo: float, hi: float, want_lo: bool) -> float:
    """Bisect a monotone predicate ``f`` (True at the proven end); return the proven end."""
    for _ in range(200):
        if hi - lo <= CALIBRATION_RTOL * max(abs(hi), 1e-300):
            break
        mid = 0.5 * (lo + hi)
        if f(mid) == want_lo:
            lo = mid
        else:
            hi = mid
    return lo if want_lo else hi


def calibrate_mean(
    target_kappa: float,
    *,
    r2: float,
    r1: float | None = None,
    noise: Any = None,
    max_mean_sd: float | None = None,
    delta: float = 0.0,
    scale_max: float = 1e6,
) -> float:
    r"""The Sender's design problem for means: the largest r1, or the smallest noise, meeting κ.

    * ``noise=None``: the largest r1 with :math:`r_1 + \log r_2 \le` target (Prop 7).
    * ``noise=("gaussian", sigma)``: the largest r1 with the certified κ(δ) <= target
      (κ increases with r1; bisection, the proven end is returned).
    * ``noise="gaussian"`` with ``r1``: the smallest noise sd with κ(δ) <= target (κ does not
      increase with the sd; needs ``max_mean_sd`` and δ > 0).

    Raises ValidationError when the target cannot be met (the message says why); never returns
    a negative, NaN or unproven value.

    Examples
    --------
    >>> from persuasive.release.means import calibrate_mean
    >>> round(calibrate_mean(2.0, r2=4.0), 6)
    0.613706
    >>> s = calibrate_mean(4.5, r2=4.0, r1=4.0, noise="gaussian", max_mean_sd=1.0, delta=0.05)
    >>> round(s, 3)
    4.085
    """
    target = v.real("target_kappa", target_kappa, low=0.0, low_open=True)
    r2 = v.real("r2", r2, low=1.0, low_open=True)
    delta = v.real("delta", delta, low=0.0, high=1.0, high_open=True)
    if noise is None:
        out = target - math.log(r2)
        if out <= 0.0:
            raise ValidationError(
                f"target_kappa = {target:g} is unreachable for the exact mean with r2 = {r2:g}: "
                f"kappa = r1 + log r2 > log r2 = {math.log(r2):.6g} for every r1 > 0"
            )
        return out
    if isinstance(noise, str):
        if noise == "laplace":
            raise UnsupportedCombinationError(LAPLACE_NO_FINITE_KAPPA)
        if noise != "gaussian":
            raise ValidationError(f'noise must be "gaussian" to calibrate its sd; got {noise!r}')
        if r1 is None or max_mean_sd is None or delta <= 0.0:
            raise ValidationError(
                "calibrating the noise sd needs r1, max_mean_sd (without a bound on the prior sd "
                "of the mean noise cannot help) and delta > 0; got "
                f"r1 = {r1!r}, max_mean_sd = {max_mean_sd!r}, delta = {delta:g}"
            )
        r1f = v.real("r1", r1, low=0.0, low_open=True)
        vm = v.real("max_mean_sd", max_mean_sd, low=0.0, low_open=True)

        def ok_s(s: float) -> bool:
            return gaussian_noise_kappa(r1f, r2, s, vm, delta)[0] <= target

        hi = vm
        while not ok_s(hi):
            hi *= 4.0
            if hi > scale_max * vm:
                raise ValidationError(
                    f"target_kappa = {target:g} is unreachable with Gaussian noise: even sd = "
                    f"{scale_max:g} * max_mean_sd gives kappa > target (the bound cannot go "
                    "below the chi-square(1) quantile at 1 - delta, docs/release_means.md)"
                )
        lo = hi / 4.0
        while ok_s(lo) and lo > 1e-9 * vm:
            hi, lo = lo, lo / 4.0
        return _bisect(ok_s, lo, hi, want_lo=False)
    nz = _noise(noise)
    assert nz is not None
    if nz[0] == "laplace":
        raise UnsupportedCombinationError(LAPLACE_NO_FINITE_KAPPA)
    if delta <= 0.0:
        raise ValidationError("delta must be > 0 with Gaussian noise (kappa is infinite at 0)")

    def ok_r1(x: float) -> bool:
        return gaussian_noise_kappa(x, r2, nz[1], max_mean_sd, delta)[0] <= target

    lo = 1e-9
    if not ok_r1(lo):
        raise ValidationError(
            f"target_kappa = {target:g} is unreachable with {nz}: kappa exceeds it even as "
            "r1 -> 0 (the bound cannot go below the chi-square(1) quantile at 1 - delta)"
        )
    hi = 1.0
    while ok_r1(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e9:
            return lo
    return _bisect(ok_r1, lo, hi, want_lo=True)
