r"""Release the mean of a numeric column (or one mean per group) with a certificate.

* Exact mean: Prop 7 (Bon et al. 2026), :math:`(\mathcal I, \mathcal G^r_x, r_1 + \log r_2,
  0)`-PP, sharp.
* Mean plus Gaussian noise: :class:`~persuasive.certify.NoisyMean`, this library's extension
  (``docs/release_means.md``), an upper bound at δ > 0 under the class with the prior sd of the
  mean bounded by ``max_mean_sd``. Laplace noise is refused: it has no finite κ against this
  class (:class:`~persuasive.certify.noisy_mean_laplace.NoisyMeanLaplace`, proved).
* Against Receivers with a bounded error on every person (``max_person_error`` = r0, the class
  :class:`~persuasive.classes.bounded_error.BoundedErrorGaussianClass`): the certificate of
  :func:`persuasive.certify.bounded_error.bounded_error_kappa` (this library's extension,
  ``docs/release_means.md`` section (e)); with ``max_mean_sd`` its κ falls to 0 as the noise
  grows. Noise needs ``max_mean_sd`` there (without it noise cannot certify below the exact
  mean); the exact mean needs only r0.
* Group means over disjoint groups: under a product prior across groups each individual's
  posterior depends only on its own group's mean, so κ is the largest per-group κ (parallel
  composition, proved in ``docs/release_means.md``); a joint (correlated) prior is refused.

The mean is computed so that it cannot overflow (the values are scaled by a power of two when
their sum could: exact, and undone on the result), and a mean that is not finite — e.g. after
noise — is an error, never published. Nothing in the certificate's claim depends on the data
(Assumption 1).
"""

from __future__ import annotations

from typing import Any

import polars as pl
from numpy.typing import ArrayLike

from persuasive import _domains as dm
from persuasive import _validation as v
from persuasive.certify.noisy_mean_laplace import LAPLACE_NO_FINITE_KAPPA
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.files import reading as rd
from persuasive.files.sources import is_table
from persuasive.release import display
from persuasive.release.calibrate import calibrate_mean as calibrate_mean
from persuasive.release.mean_results import GroupMeansRelease, MeanRelease, Noise
from persuasive.release.mean_values import (
    as_values,
    check_n,
    finite,
    mean_of,
    n_min,
    read_values,
    sum_scale,
)
from persuasive.report.kinds.mean import KIND as MEAN_KIND
from persuasive.report.kinds.mean import MeanParams
from persuasive.results import Certificate

__all__ = [
    "GroupMeansRelease",
    "MeanRelease",
    "Noise",
    "calibrate_mean",
    "mean_of",
    "n_min",
    "read_values",
    "release_group_means",
    "release_mean",
]


def _noise(noise: Any) -> Noise:
    if noise is None:
        return None
    if not isinstance(noise, tuple) or len(noise) != 2 or noise[0] not in ("gaussian", "laplace"):
        raise ValidationError(
            f'noise must be None, ("gaussian", sigma) or ("laplace", scale); got {noise!r:.60}'
        )
    return noise[0], dm.check("noise_scale", noise[1], name="noise scale")


def _params(
    r1: float,
    r2: float,
    noise: Noise,
    max_mean_sd: float | None,
    delta: float,
    value: str,
    group: str | None,
    target_kappa: float | None,
    max_person_error: float | None = None,
) -> MeanParams:
    r1 = dm.check("r1", r1)
    r2 = dm.check("r2", r2)
    delta = dm.check("delta", delta)
    if max_mean_sd is not None:
        max_mean_sd = dm.check("max_mean_sd", max_mean_sd)
    if target_kappa is not None:
        target_kappa = dm.check("target_kappa", target_kappa)
    r0 = check_person_error(max_person_error, noise, max_mean_sd)
    sd = None
    if noise is not None:
        kind, scale = noise
        if kind == "laplace":
            raise UnsupportedCombinationError(LAPLACE_NO_FINITE_KAPPA if r0 is None else LAPLACE_R0)
        if delta <= 0.0 and r0 is None:
            raise ValidationError(
                "delta must be > 0 with Gaussian noise (e.g. delta = 0.05); got delta = 0: "
                "unbounded noise gives no finite kappa at delta = 0 (docs/release_means.md)"
            )
        sd = scale
    return MeanParams(r1, r2, sd, max_mean_sd, delta, value, group, target_kappa, r0)


#: Why Laplace noise is not released against the bounded-error class.
LAPLACE_R0 = (
    "Laplace noise with max_person_error is not released: its bound log r2 + r0^2 (any noise "
    "law, docs/release_means.md section (e)) is never below the exact mean's; use Gaussian noise"
)


def check_person_error(r0: Any, noise: Any, max_mean_sd: float | None) -> float | None:
    """``max_person_error`` validated: None, or r0 > 0; noise with r0 needs ``max_mean_sd``."""
    if r0 is None:
        return None
    r0 = dm.check("max_mean_sd", r0, name="max_person_error")
    if noise is not None and noise[0] == "gaussian" and max_mean_sd is None:
        raise ValidationError(
            f"max_person_error = {r0:g} with Gaussian noise needs max_mean_sd (a bound V on "
            "the Receiver's prior sd of the mean): without it noise cannot certify below the "
            "exact mean; got max_mean_sd = None"
        )
    return r0


def _certificate(p: MeanParams) -> Certificate:
    cert: Certificate = MEAN_KIND.certify(p).certificate
    return cert


def release_mean(
    values: ArrayLike,
    *,
    r1: float,
    r2: float,
    noise: Noise = None,
    max_mean_sd: float | None = None,
    delta: float = 0.0,
    rng: Any = None,
    column: str = "value",
    target_kappa: float | None = None,
    max_person_error: float | None = None,
) -> MeanRelease:
    r"""Release the mean of ``values`` (exactly, or plus Gaussian noise) with a certificate.

    Parameters
    ----------
    values : array_like, shape (n,), or a table
        Finite real numbers, n >= 2 and r2 >= n/(n-1). Or a table holding them in the column
        ``column``: a path, a :class:`persuasive.files.DataFile`, a polars, pandas or pyarrow
        table (read exactly, :func:`read_values`).
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
    column : str
        The name of the value column (stated in the certificate).
    target_kappa : float, optional
        The κ asked for: the certificate holds only if κ is at most it.
    max_person_error : float, optional
        r0 > 0: the certificate is then against Receivers who are also at most r0 prior sds
        wrong about any one person (``BoundedErrorGaussianClass``; noise needs
        ``max_mean_sd``; with it, δ = 0 is allowed with noise, ``docs/release_means.md`` (e)).

    Examples
    --------
    >>> from persuasive.release.means import release_mean
    >>> rel = release_mean([1.0, 2.0, 6.0], r1=1.0, r2=4.0)
    >>> rel.value, round(rel.certificate.kappa, 6), rel.certificate.basis
    (3.0, 2.386294, 'Prop 7 (Bon et al. 2026)')
    >>> release_mean([1e308, 1e308, 1e308], r1=1.0, r2=4.0).value
    1e+308
    >>> rel = release_mean([1.0, 2.0, 6.0], r1=1.0, r2=4.0, noise=("gaussian", 8.0),
    ...                    max_mean_sd=1.0, max_person_error=1.0, delta=0.05, rng=0)
    >>> round(rel.certificate.kappa, 3)   # below the exact mean's 2.386: noise pays here
    0.465
    """
    if is_table(values):
        values = read_values(values, column).get_column(column).to_numpy()
    arr = as_values(values)
    p = _params(
        r1, r2, _noise(noise), max_mean_sd, delta, column, None, target_kappa, max_person_error
    )
    check_n(arr.size, p.r2, "values")
    cert = _certificate(p)
    out = mean_of(arr)
    if p.noise_sd is not None:
        out = out + float(v.rng("rng", rng).normal(0.0, p.noise_sd))
    return display.read_from(MeanRelease(finite("the mean", out), int(arr.size), p, cert), values)


def release_group_means(
    frame: rd.Source,
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
    target_kappa: float | None = None,
    max_person_error: float | None = None,
) -> GroupMeansRelease:
    r"""Release one mean of ``value`` per level of ``group`` (disjoint groups).

    κ is the per-group κ (parallel composition under a product prior across groups,
    ``docs/release_means.md``). ``independent_groups=False`` (a joint prior class over all
    individuals, groups correlated) is refused: composing the groups would need Prop 3, whose
    conjugacy condition fails for an exact release of a Gaussian class. ``max_person_error``
    as in :func:`release_mean` (each group's prior in the bounded-error class: the parallel
    composition holds unchanged, ``docs/release_means.md`` (d)).

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
    p = _params(
        r1, r2, _noise(noise), max_mean_sd, delta, value, group, target_kappa, max_person_error
    )
    cert = _certificate(p)
    data = read_values(frame, value, group)
    x = data.get_column(value).to_numpy()
    s = sum_scale(x, data.height)
    col = pl.col(value) * s if s != 1.0 else pl.col(value)
    means = (
        data.group_by(group).agg((col.mean() / s).alias("mean"), pl.len().alias("n")).sort(group)
    )
    small = means.filter(pl.col("n") < n_min(p.r2))
    if small.height:
        check_n(int(small["n"][0]), p.r2, f"group {small[group][0]!r}")
    if p.noise_sd is not None:
        draw = v.rng("rng", rng).normal(0.0, p.noise_sd, size=means.height)
        means = means.with_columns(pl.col("mean") + pl.Series(draw))
    bad = means.filter(~pl.col("mean").is_finite())
    if bad.height:
        finite(f"the mean of group {bad[group][0]!r}", float(bad["mean"][0]))
    return display.read_from(GroupMeansRelease(means, p, cert), frame)
