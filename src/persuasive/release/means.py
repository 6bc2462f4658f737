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

The mean is computed so that it cannot overflow (the values are scaled by a power of two when
their sum could: exact, and undone on the result), and a mean that is not finite — e.g. after
noise — is an error, never published. Nothing in the certificate's claim depends on the data
(Assumption 1).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _validation as v
from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.certify.noisy_mean_laplace import LAPLACE_NO_FINITE_KAPPA
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.files import reading as rd
from persuasive.files.sources import is_table
from persuasive.release import display
from persuasive.release.calibrate import calibrate_mean as calibrate_mean
from persuasive.report.kinds.mean import KIND as MEAN_KIND
from persuasive.report.kinds.mean import MeanParams
from persuasive.results import Certificate

Noise = tuple[str, float] | None


def _noise(noise: Any) -> Noise:
    if noise is None:
        return None
    if not isinstance(noise, tuple) or len(noise) != 2 or noise[0] not in ("gaussian", "laplace"):
        raise ValidationError(
            f'noise must be None, ("gaussian", sigma) or ("laplace", scale); got {noise!r:.60}'
        )
    return noise[0], dm.check("noise_scale", noise[1], name="noise scale")


def n_min(r2: float) -> int:
    """The smallest n for which 𝒢^r is non-empty: r2 >= n/(n-1), and n >= 2."""
    return max(2, math.ceil(r2 / (r2 - 1.0) - 1e-12))


def _params(
    r1: float,
    r2: float,
    noise: Noise,
    max_mean_sd: float | None,
    delta: float,
    value: str,
    group: str | None,
    target_kappa: float | None,
) -> MeanParams:
    r1 = dm.check("r1", r1)
    r2 = dm.check("r2", r2)
    delta = dm.check("delta", delta)
    if max_mean_sd is not None:
        max_mean_sd = dm.check("max_mean_sd", max_mean_sd)
    if target_kappa is not None:
        target_kappa = dm.check("target_kappa", target_kappa)
    sd = None
    if noise is not None:
        kind, scale = noise
        if kind == "laplace":
            raise UnsupportedCombinationError(LAPLACE_NO_FINITE_KAPPA)
        if delta <= 0.0:
            raise ValidationError(
                "delta must be > 0 with Gaussian noise (e.g. delta = 0.05); got delta = 0: "
                "unbounded noise gives no finite kappa at delta = 0 (docs/release_means.md)"
            )
        sd = scale
    return MeanParams(r1, r2, sd, max_mean_sd, delta, value, group, target_kappa)


def _curve(p: MeanParams, xs: Any) -> tuple[NDArray[np.float64], NDArray[np.float64], str]:
    if p.noise_sd is None:
        grid = np.linspace(0.0, 2.0 * p.r1, 41)[1:] if xs is None else np.asarray(xs, float)
        return grid, grid + math.log(p.r2), "r1 (squared prior-mean error bound)"
    s = p.noise_sd
    grid = np.geomspace(s / 10.0, s * 10.0, 41) if xs is None else np.asarray(xs, float)
    kap = [gaussian_noise_kappa(p.r1, p.r2, float(g), p.max_mean_sd, p.delta)[0] for g in grid]
    return grid, np.asarray(kap), "Gaussian noise sd"


def _scale(values: NDArray[np.float64], n: int) -> float:
    """A power of two s such that summing ``n`` values of ``s * values`` cannot overflow."""
    top = float(np.max(np.abs(values))) if values.size else 0.0
    if top * n < sys.float_info.max / 4:
        return 1.0
    return 2.0 ** -(math.frexp(float(n))[1] + 2)


def mean_of(values: NDArray[np.float64]) -> float:
    """The mean of finite values, computed so that the sum cannot overflow (scaling by a power
    of two is exact)."""
    s = _scale(values, values.size)
    return float(np.mean(values * s) / s) if s != 1.0 else float(np.mean(values))


def _finite(what: str, value: float) -> float:
    if not math.isfinite(value):
        raise ValidationError(
            f"{what} is {value}: a published number must be finite; nothing is released"
        )
    return value


def _certificate(p: MeanParams) -> Certificate:
    cert: Certificate = MEAN_KIND.certify(p).certificate
    return cert


class _Means(display.ReleaseResult):
    """What a mean and group means share: the claim's parameters, the report, ``write(folder)``
    and the display (:mod:`persuasive.release.display`)."""

    params: MeanParams
    certificate: Certificate

    @property
    def noise(self) -> Noise:
        return None if self.params.noise_sd is None else ("gaussian", self.params.noise_sd)

    @property
    def r1(self) -> float:
        return self.params.r1

    @property
    def r2(self) -> float:
        return self.params.r2

    @property
    def delta(self) -> float:
        return self.params.delta

    @property
    def spec(self) -> dict[str, Any]:
        return dict(MEAN_KIND.claim(self.params)["spec"])

    def calibration_curve(self, xs: ArrayLike | None = None) -> Any:
        """κ against r1 (exact mean) or against the noise sd: ``(xs, kappas, label)``."""
        return _curve(self.params, xs)

    def statement(self) -> str:
        """The guarantee in one plain sentence."""
        return str(MEAN_KIND.certify(self.params).guarantee["statement"])

    def custodian(self, table_format: str) -> dict[str, Any]:
        return {}

    def report(self, document: Mapping[str, Any], target_kappa: float | None) -> Any:
        from persuasive.release.mean_report import mean_report

        return mean_report(self, document, target_kappa)


@dataclass(frozen=True, eq=False, repr=False)
class MeanRelease(_Means):
    """A released mean with its certificate.

    ``rel.value`` is the published mean; ``rel.write(folder)`` writes the release folder
    (``released.json``, ``certificate.json``, optionally the report).
    """

    kind: ClassVar[str] = "mean"

    value: float
    n: int
    params: MeanParams
    certificate: Certificate = field(repr=False)

    def summary(self) -> dict[str, Any]:
        """Data-dependent facts for the report (never for the certificate)."""
        return {"n": self.n, "value": self.value, "kappa": self.certificate.kappa}

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        facts = [
            ("column", repr(self.params.value)),
            ("n", f"{self.n:,}"),
            ("published mean", f"{self.value:.6g}"),
        ]
        if self.params.noise_sd is not None:
            facts.append(("Gaussian noise sd", f"{self.params.noise_sd:g}"))
        return "Mean release", facts, None, ()

    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import write_json

        return {"released.json": write_json({"mean": self.value})}

    def expected(self, name: str) -> Any:
        return {"mean": self.value} if name == "released.json" else None


@dataclass(frozen=True, eq=False, repr=False)
class GroupMeansRelease(_Means):
    """One released mean per group; ``values`` has columns group, ``mean`` and ``n`` (the
    group sizes stay with the custodian: they are counts, which the certificate does not
    cover). ``rel.published`` (group, mean) is what ``rel.write(folder)`` publishes."""

    kind: ClassVar[str] = "mean"

    values: pl.DataFrame
    params: MeanParams
    certificate: Certificate = field(repr=False)

    @property
    def published(self) -> pl.DataFrame:
        """The published columns: the group and its mean."""
        return self.values.select(self.params.group, "mean")

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        facts = [("groups", f"{self.values.height:,}"), ("column", repr(self.params.value))]
        if self.params.noise_sd is not None:
            facts.append(("Gaussian noise sd", f"{self.params.noise_sd:g}"))
        return "Group means release", facts, self.published, ()

    def summary(self) -> dict[str, Any]:
        return {
            "n_groups": self.values.height,
            "min_group_size": int(self.values["n"].min()),  # type: ignore[arg-type]
            "kappa": self.certificate.kappa,
        }

    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files

        return frame_files({"released": self.published}, table_format)

    def expected(self, name: str) -> pl.DataFrame | None:
        return self.published if Path(name).stem == "released" else None


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
            f"{where} has n = {n} value(s), but no Receiver of the class (Prop 7) exists unless "
            f"r2 >= n/(n-1) (r2 = {r2:g} needs n >= {n_min(r2)}); a vacuous guarantee is not "
            "certified (the mean of one person is that person's value)"
        )


def read_values(source: rd.Source, column: str, group: str | None = None) -> pl.DataFrame:
    """The value column (Float64, parsed once from text in a CSV) and the group column (text as
    written), validated in one pass: every value present and finite, every group present."""
    source = rd.as_source(source)  # a pandas or pyarrow table is converted here, once
    names = rd.header(source)
    rd.require(names, value=column, group=[group] if group else [])
    if group == column:
        raise ValidationError(f"--group {group!r} is also the value column; choose another")
    cols = [column] if group is None else [group, column]
    raw = rd.scan(source, text=cols).select(cols)
    try:
        schema = raw.collect_schema()
        dtype = schema[column]
        lf = raw.with_row_index(rd.ROW)
        checks = [*(rd.key_checks([group]) if group else []), *rd.real_checks(column, dtype)]
        parsed = lf.select(*([group] if group else []), rd.real_expr(column, dtype))
        stats, frame = pl.collect_all([rd.first_failures(lf, checks), parsed])
    except pl.exceptions.PolarsError as exc:
        where = f"'{source}'" if isinstance(source, (str, os.PathLike)) else "the data"
        raise ValidationError(f"cannot read {where}: {rd._first_line(exc)}") from None
    rd.raise_first(stats, lf, checks, where=[group] if group else [], what="the data")
    return frame


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

    Examples
    --------
    >>> from persuasive.release.means import release_mean
    >>> rel = release_mean([1.0, 2.0, 6.0], r1=1.0, r2=4.0)
    >>> rel.value, round(rel.certificate.kappa, 6), rel.certificate.basis
    (3.0, 2.386294, 'Prop 7 (Bon et al. 2026)')
    >>> release_mean([1e308, 1e308, 1e308], r1=1.0, r2=4.0).value
    1e+308
    """
    if is_table(values):
        values = read_values(values, column).get_column(column).to_numpy()
    arr = _values(values)
    p = _params(r1, r2, _noise(noise), max_mean_sd, delta, column, None, target_kappa)
    _check_n(arr.size, p.r2, "values")
    cert = _certificate(p)
    out = mean_of(arr)
    if p.noise_sd is not None:
        out = out + float(v.rng("rng", rng).normal(0.0, p.noise_sd))
    return display.read_from(MeanRelease(_finite("the mean", out), int(arr.size), p, cert), values)


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
    p = _params(r1, r2, _noise(noise), max_mean_sd, delta, value, group, target_kappa)
    cert = _certificate(p)
    data = read_values(frame, value, group)
    x = data.get_column(value).to_numpy()
    s = _scale(x, data.height)
    col = pl.col(value) * s if s != 1.0 else pl.col(value)
    means = (
        data.group_by(group).agg((col.mean() / s).alias("mean"), pl.len().alias("n")).sort(group)
    )
    small = means.filter(pl.col("n") < n_min(p.r2))
    if small.height:
        _check_n(int(small["n"][0]), p.r2, f"group {small[group][0]!r}")
    if p.noise_sd is not None:
        draw = v.rng("rng", rng).normal(0.0, p.noise_sd, size=means.height)
        means = means.with_columns(pl.col("mean") + pl.Series(draw))
    bad = means.filter(~pl.col("mean").is_finite())
    if bad.height:
        _finite(f"the mean of group {bad[group][0]!r}", float(bad["mean"][0]))
    return display.read_from(GroupMeansRelease(means, p, cert), frame)
