r"""Release a list of linear statistics of one column (means and sums over subsets of rows).

A statistic is a triple ``(name, kind, where)``: ``kind`` is ``"mean"`` or ``"sum"`` of the
value column over the rows selected by ``where``, a polars SQL boolean expression
(``"true"``, ``"religious = 4"``, ``"row_id != 17"``; ``row_id`` is the 0-based row number).
Stacking k statistics of n rows gives :math:`T = A x` with A (k × n) holding :math:`1/n_s` (a
mean over :math:`n_s` rows) or 1 (a sum) on the selected rows.

Against Gaussian Receivers in the class of :class:`persuasive.linear.LinearGaussianClass`
(Prop 7 generalised to A: ``docs/linear_release.md``) every individual's marginal
Dawid–Sebastiani loss is at most :math:`r_1 + \log r_2` — *unless* some linear combination of
the statistics equals one person's value (:math:`A^\top c = e_i`, e.g. a mean and the same
mean without one person: a differencing attack). Such an individual is **exposed**
(κ = ∞, for every Gaussian prior) and the release is refused, naming who and how. Two repairs:
Gaussian noise of sd s on every statistic (calibrated to a target κ, at a failure probability
δ > 0), or withholding statistics (greedily) until nobody is exposed.

The ``spec`` of a release states the statistics' *definitions* (the where-clauses), the value
column and the Receiver class, never the data; A itself (who is in which subset) is data and
is neither stored in the spec nor written to the certificate.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
from numpy.typing import NDArray

from persuasive import _domains as dm
from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.files.sources import Source
from persuasive.linear.exposure import LinearExposure, combination_of, exposures
from persuasive.release import display
from persuasive.release.statistics import Statistic, build_rows
from persuasive.report.kinds.linear import KIND as LINEAR_KIND
from persuasive.report.kinds.linear import LinearParams
from persuasive.report.words import plural
from persuasive.results import Certificate

__all__ = ["LinearExposure", "LinearRelease", "combination_of", "release_linear", "statement_of"]


@dataclass(frozen=True, repr=False)
class LinearRelease(display.ReleaseResult):
    """A release of linear statistics; see :func:`release_linear`.

    ``rel.values`` is the published table; ``rel.write(folder)`` writes the release folder
    (refused when someone is exposed: there is nothing to publish).

    Attributes
    ----------
    values : polars.DataFrame
        Columns name, kind, where, value: the released statistics (value null when refused).
    statistics, withheld : tuple of Statistic
        Every statistic asked for, and those withheld (greedy withholding).
    certificate : Certificate or None
        None when the release is refused because someone is exposed.
    exposed : tuple of LinearExposure
        ``(row_id, combination)`` of each exposed individual of the statistics asked for.
    params : LinearParams or None
        The certificate's claim (None when refused).
    """

    kind: ClassVar[str] = "linear"

    values: pl.DataFrame
    statistics: tuple[Statistic, ...]
    withheld: tuple[Statistic, ...]
    value: str
    n: int
    r1: float
    r2: float
    delta: float
    noise_sd: float | None
    max_stat_sd: float | None
    certificate: Certificate | None
    exposed: tuple[LinearExposure, ...]
    params_: LinearParams | None = field(default=None, repr=False)
    target_kappa: float | None = None
    calibrated: str = ""
    matrix: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)), repr=False)

    @property
    def params(self) -> LinearParams:
        if self.params_ is None:
            raise ValidationError(f"nothing to publish: {statement_of(self)}")
        return self.params_

    @property
    def refused(self) -> bool:
        return self.certificate is None

    @property
    def holds(self) -> bool:
        """Released, κ finite, and at most the target when one was given."""
        cert = self.certificate
        if cert is None or not cert.holds or not math.isfinite(cert.kappa):
            return False
        return self.target_kappa is None or cert.kappa <= self.target_kappa

    @property
    def spec(self) -> dict[str, Any]:
        return dict(LINEAR_KIND.claim(self.params)["spec"])

    def summary(self) -> dict[str, Any]:
        """Data-dependent facts for the custodian and the report (never for the certificate)."""
        return {
            "n": self.n,
            "k_asked": len(self.statistics),
            "k_released": 0 if self.refused else self.values.height,
            "withheld": [s.name for s in self.withheld],
            "exposed": [e.row_id for e in self.exposed],
            "kappa": math.inf if self.certificate is None else self.certificate.kappa,
            "delta": self.delta,
            "noise_sd": self.noise_sd,
        }

    def statement(self) -> str:
        """The guarantee, or the refusal, in one plain sentence."""
        return statement_of(self)

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        k = 0 if self.refused else self.values.height
        facts = [("statistics", f"{k} of {len(self.statistics)}"), ("column", repr(self.value))]
        facts.append(("n", f"{self.n:,}"))
        if self.withheld:
            facts.append(("withheld", ", ".join(s.name for s in self.withheld)))
        if self.exposed:
            facts.append(("exposed individuals", str(len(self.exposed))))
        if self.noise_sd is not None:
            facts.append(("Gaussian noise sd", f"{self.noise_sd:.4g}"))
        return "Linear statistics release", facts, self.values, ()

    def calibration_curve(self, xs: Any = None) -> tuple[Any, Any, str]:
        """κ under the class against the noise sd on every statistic: ``(sds, kappas, label)``."""
        return _curve(self, xs)

    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files

        self.params  # noqa: B018 - a refused release has nothing to publish
        return frame_files({"released": self.values}, table_format)

    def custodian(self, table_format: str) -> dict[str, Any]:
        return {}

    def expected(self, name: str) -> pl.DataFrame | None:
        return self.values if Path(name).stem == "released" else None

    def report(self, document: Mapping[str, Any], target_kappa: float | None) -> Any:
        from persuasive.release.linear_output import linear_report

        return linear_report(self, document)


# --------------------------------------------------------------------------------------------
# The release
# --------------------------------------------------------------------------------------------


def _reference(n: int) -> tuple[NDArray[np.float64], Any]:
    """Independent unit-variance prior: exposure (posterior variance 0) does not depend on the
    prior as long as Σ ≻ 0, so this prior finds exactly the individuals A exposes."""
    from persuasive.linear import StructuredCovariance

    return np.zeros(n), StructuredCovariance(np.ones(n))


def release_linear(
    frame: Source,
    *,
    value: str,
    statistics: Iterable[Any],
    r1: float,
    r2: float,
    noise_sd: float | None = None,
    target_kappa: float | None = None,
    withhold: bool = False,
    delta: float | None = None,
    max_stat_sd: float | None = None,
    rng: Any = None,
) -> LinearRelease:
    r"""Release linear statistics of ``value``, certified against Gaussian Receivers.

    Parameters
    ----------
    frame : path, DataFile, polars DataFrame or LazyFrame, pandas DataFrame or pyarrow Table
        One row per individual (a CSV file's ``value`` column is parsed exactly, the other
        columns' types are inferred for the SQL conditions).
    value : str
        The numeric column the statistics are computed on.
    statistics : iterable of (name, kind, where) or Statistic
        See :func:`statistics_matrix`.
    r1, r2 : float
        The Receiver class :class:`persuasive.linear.LinearGaussianClass` (r1 > 0, r2 > 1):
        exact releases are :math:`(\mathcal D, \mathcal G^r_A, r_1 + \log r_2, 0)`-PP unless
        someone is exposed.
    noise_sd : float, optional
        Add N(0, noise_sd²) to every statistic (needs δ > 0; κ is then an upper bound).
    target_kappa : float, optional
        Without ``withhold``: release exactly if that meets the target, else with the smallest
        isotropic noise sd that does (:func:`persuasive.linear.calibrate_noise`). With
        ``withhold``: the κ the greedy withholding aims for.
    withhold : bool
        Drop statistics greedily (:func:`persuasive.linear.greedy_withhold`) until nobody is
        exposed (and, with ``target_kappa``, every individual's κ under the independent
        reference prior meets it); the rest is released exactly.
    delta : float, optional
        Failure probability; default 0 for exact releases and 0.05 with noise.
    max_stat_sd : float, optional
        Class bound V on the Receiver's prior sd of the statistics (needed by some noisy
        certificates).
    rng : None, int or numpy.random.Generator
        Randomness of the noise.

    Returns
    -------
    LinearRelease
        ``certificate`` is None (and ``values["value"]`` null) when someone is exposed; then
        ``exposed`` names each row and the combination of statistics equal to its value.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"y": [1.0, 2.0, 6.0, 3.0], "g": [1, 1, 2, 2]})
    >>> stats = [("all", "mean", "true"), ("g1", "mean", "g = 1")]
    >>> rel = release_linear(df, value="y", statistics=stats, r1=1.0, r2=4.0)
    >>> rel.values["value"].to_list(), round(rel.certificate.kappa, 6)
    ([3.0, 1.5], 2.386294)
    >>> diff = [("all", "mean", "true"), ("no3", "sum", "row_id != 3")]
    >>> bad = release_linear(df, value="y", statistics=diff, r1=1.0, r2=4.0)
    >>> bad.certificate is None, bad.exposed[0].describe()
    (True, 'row 3 = 4·all − no3')
    """
    from persuasive.linear import LinearGaussianClass

    if not isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        from persuasive.files.reading import scan

        frame = scan(frame, text=[value], infer=True)
    stats, a, x = build_rows(frame, statistics, value)
    r1 = dm.check("r1", r1)
    r2 = dm.check("r2", r2)
    if noise_sd is not None:
        noise_sd = dm.check("noise_sd", noise_sd)
        if target_kappa is not None or withhold:
            raise ValidationError(
                "noise_sd is fixed noise; target_kappa (calibrated noise) and withhold are the "
                "alternatives to it: give one of them"
            )
    if target_kappa is not None:
        target_kappa = dm.check("target_kappa", target_kappa)
    if max_stat_sd is not None:
        max_stat_sd = dm.check("max_stat_sd", max_stat_sd)
    cls = LinearGaussianClass(r1, r2, max_stat_sd=max_stat_sd)
    cls_doc: dict[str, Any] = {"class": "linear_gaussian", "r1": r1, "r2": r2}
    if max_stat_sd is not None:
        cls_doc["max_stat_sd"] = max_stat_sd
    names = [s.name for s in stats]
    exposed = exposures(a, names)
    keep = list(range(len(stats)))
    sd, calibrated = noise_sd, ""
    exact_kappa = r1 + math.log(r2)
    if withhold:  # drop statistics until nobody is exposed; the target is then only checked
        from persuasive.linear import greedy_withhold

        mean, cov = _reference(a.shape[1])
        w = greedy_withhold(a, sys.float_info.max, mean=mean, cov=cov, r1=r1)
        keep = sorted(int(j) for j in w.kept)
        dropped = [names[int(j)] for j in w.dropped]
        calibrated = (
            f"withheld {', '.join(dropped)} (greedy, in that order)"
            if dropped
            else "nothing had to be withheld"
        )
    elif target_kappa is not None and not exposed and exact_kappa > target_kappa:
        from persuasive.linear import calibrate_noise

        d = 0.05 if delta is None else delta
        sd = float(calibrate_noise(a, target_kappa, cls=cls, delta=d).sd)
        calibrated = (
            f"the smallest noise sd on every statistic with κ ≤ {target_kappa:g} is {sd:.6g}"
        )
    elif target_kappa is not None and exposed:
        calibrated = (
            "no noise is certified: the class is empty when the statistics expose someone "
            "(docs/linear_release.md); withhold statistics instead"
        )
    delta = (0.0 if sd is None else 0.05) if delta is None else delta
    delta = dm.check("delta", delta)
    if sd is not None and delta <= 0.0:
        raise ValidationError(
            "delta must be > 0 with noise (e.g. delta = 0.05): unbounded noise gives no finite "
            "κ at delta = 0"
        )
    kept = [stats[j] for j in keep]
    kept_a = a if len(keep) == a.shape[0] else a[keep]
    withheld = tuple(s for j, s in enumerate(stats) if j not in keep)
    still = exposures(kept_a, [s.name for s in kept]) if withhold else exposed
    cert: Certificate | None = None
    params: LinearParams | None = None
    out: list[float | None] = [None] * len(kept)
    if not still:
        params = LinearParams(
            value=value,
            statistics=tuple((s.name, s.kind, s.where) for s in kept),
            withheld=tuple(s.name for s in withheld),
            members=tuple(row != 0 for row in kept_a),
            n=int(a.shape[1]),
            r1=r1,
            r2=r2,
            noise_sd=sd,
            max_stat_sd=max_stat_sd,
            delta=float(delta),
            target_kappa=target_kappa,
        )
        cert = LINEAR_KIND.certify(params).certificate
        t = kept_a @ np.nan_to_num(x)  # x is NaN only on rows no statistic selects
        if sd is not None:
            t = t + v.rng("rng", rng).normal(0.0, sd, size=t.shape)
        bad = np.flatnonzero(~np.isfinite(t))
        if bad.size:
            raise ValidationError(
                f"statistic {kept[int(bad[0])].name!r} is {t[bad[0]]}: a published number must "
                "be finite; nothing is released"
            )
        out = [float(z) for z in t]
    values = pl.DataFrame(
        {
            "name": [s.name for s in kept],
            "kind": [s.kind for s in kept],
            "where": [s.where for s in kept],
            "value": pl.Series(out, dtype=pl.Float64),
        }
    )
    return display.read_from(
        LinearRelease(
            values=values,
            statistics=stats,
            withheld=withheld,
            value=value,
            n=int(a.shape[1]),
            r1=r1,
            r2=r2,
            delta=float(delta),
            noise_sd=sd,
            max_stat_sd=max_stat_sd,
            certificate=cert,
            exposed=exposed,
            params_=params,
            target_kappa=target_kappa,
            calibrated=calibrated,
            matrix=kept_a,
        ),
        frame,
    )


def statement_of(rel: LinearRelease) -> str:
    if rel.certificate is None:
        who = "; ".join(e.describe() for e in rel.exposed[:3])
        more = f" (and {len(rel.exposed) - 3} more)" if len(rel.exposed) > 3 else ""
        return (
            "Refused: these statistics reveal "
            f"{plural(len(rel.exposed), 'individual')} exactly, "
            f"whatever the Receiver's Gaussian prior ({who}{more}); add noise "
            "(--target-kappa) or withhold statistics (--withhold)."
        )
    from persuasive.report.kinds.linear import linear_sentence

    cert = rel.certificate
    return linear_sentence(rel.params, cert.kappa, cert.delta, cert.basis)


def _curve(rel: LinearRelease, xs: Any) -> tuple[Any, Any, str]:
    from persuasive.linear import LinearGaussianClass

    cls = LinearGaussianClass(rel.r1, rel.r2, max_stat_sd=rel.max_stat_sd)
    delta = rel.delta if rel.delta > 0 else 0.05
    if xs is None:
        s = rel.noise_sd or 1.0
        xs = np.geomspace(s / 100.0, s * 10.0, 31)
    grid = np.asarray(xs, dtype=float)
    if grid.size:
        cls.class_kappa(rel.matrix)  # A checked (nobody exposed) once; κ then depends on s only
    from persuasive.linear.calibrate import ClassCurve  # = cls.noise_kappa, bit for bit

    kap = ClassCurve(cls, delta).many([float(g) ** 2 for g in grid], rel.matrix.shape[0])
    return (
        grid,
        np.asarray(kap, dtype=float),
        f"Gaussian noise sd on every statistic (δ = {delta:g})",
    )
