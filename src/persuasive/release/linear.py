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

With ``max_person_error`` (r0) the class is
:class:`persuasive.linear.bounded_error.BoundedErrorLinearClass`: the Receiver is also at most
r0 prior sds wrong about any one person (this library's extension of Prop 7,
``docs/linear_bounded.md``). Only the certificate changes (the published values are the same):
the exact statistics are certified at most at :math:`r_1 + \log r_2`, and with the bound V on
the prior sd of the statistics κ falls to 0 as the noise grows.

The ``spec`` of a release states the statistics' *definitions* (the where-clauses), the value
column and the Receiver class, never the data. A itself (who is in which subset) follows from
the WHERE clauses and the covariates they name: the certificate states it in ``claim.design``
(a bitmap per statistic, ``docs/linear_release.md``), never the value column. The release
finds A's column patterns from the selections once (exposure and the certificate use them);
the published values are the dense product A x.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from persuasive import _domains as dm
from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.files.sources import Source
from persuasive.linear.emptiness import refuse_empty
from persuasive.linear.exposure import LinearExposure, combination_of, exposures
from persuasive.linear.structured import ColumnPatterns, patterns_of_masks
from persuasive.release import display
from persuasive.release.linear_result import LinearRelease, statement_of
from persuasive.release.statistics import build_rows
from persuasive.report.kinds.linear import KIND as LINEAR_KIND
from persuasive.report.kinds.linear import LinearParams

__all__ = ["LinearExposure", "LinearRelease", "combination_of", "release_linear", "statement_of"]


@dataclass(frozen=True)
class Options:
    """The checked options of :func:`release_linear` (the Receiver class and the repair)."""

    r1: float
    r2: float
    noise_sd: float | None
    target_kappa: float | None
    withhold: bool
    delta: float | None  # None: the default (0 exact, 0.05 with noise)
    max_stat_sd: float | None
    max_person_error: float | None = None

    @classmethod
    def check(
        cls,
        r1: Any,
        r2: Any,
        noise_sd: Any,
        target_kappa: Any,
        withhold: bool,
        delta: Any,
        max_stat_sd: Any,
        max_person_error: Any = None,
    ) -> Options:
        """Each option checked against its domain (one line naming it when it is bad), in
        the order of :func:`release_linear`'s parameters."""

        def maybe(name: str, value: Any) -> Any:
            return None if value is None else dm.check(name, value)

        r1, r2 = dm.check("r1", r1), dm.check("r2", r2)
        noise_sd, target_kappa = maybe("noise_sd", noise_sd), maybe("target_kappa", target_kappa)
        if noise_sd is not None and (target_kappa is not None or withhold):
            raise ValidationError(
                "noise_sd is fixed noise; target_kappa (calibrated noise) and withhold are the "
                "alternatives to it: give one of them"
            )
        v = maybe("max_stat_sd", max_stat_sd)
        r0 = person_error(max_person_error, noise_sd is not None, v)
        return cls(r1, r2, noise_sd, target_kappa, bool(withhold), delta, v, r0)

    def receivers(self) -> Any:
        """The Receiver class: :class:`persuasive.linear.LinearGaussianClass`, or with r0
        :class:`persuasive.linear.bounded_error.BoundedErrorLinearClass`."""
        from persuasive.report.kinds.linear_params import receivers_of

        return receivers_of(self.r1, self.r2, self.max_stat_sd, self.max_person_error)


def person_error(
    r0: Any,
    noisy: bool,
    max_stat_sd: float | None,
    *,
    names: tuple[str, str, str] = ("max_person_error", "noise_sd", "max_stat_sd"),
) -> float | None:
    """``max_person_error`` checked: None, or r0 > 0; fixed noise with r0 needs ``max_stat_sd``
    (without V noise cannot certify below the exact statistics under the bounded-error class,
    ``docs/linear_bounded.md``; refused as for a mean). ``names``: how the message names r0,
    the noise and V (the command line passes its options)."""
    if r0 is None:
        return None
    r0 = dm.check("max_person_error", r0, name=names[0])
    if noisy and max_stat_sd is None:
        given = f"{names[0]} {r0:g}" if names[0].startswith("--") else f"{names[0]} = {r0:g}"
        raise ValidationError(
            f"{given} with {names[1]} needs {names[2]} (a bound V on the Receiver's prior sd of "
            f"the statistics): without it noise cannot certify below the exact statistics; got "
            f"no {names[2]}"
        )
    return float(r0)


@dataclass(frozen=True)
class Design:
    """The statistics' matrix A (dense, for the published A x), who each covers (``masks``,
    k × n) and A's column patterns (for exposure, without a dense SVD)."""

    a: NDArray[np.float64]
    masks: NDArray[np.bool_]
    patterns: ColumnPatterns | None

    @classmethod
    def of(cls, a: NDArray[np.float64]) -> Design:
        masks = a != 0  # A is 1/n_j (> 0) or 1 on the covered records, 0 elsewhere
        coef = a[np.arange(a.shape[0]), np.argmax(masks, axis=1)]
        return cls(a, masks, patterns_of_masks(masks, coef))

    def rows(self, keep: list[int]) -> Design:
        """The design of the statistics ``keep`` (in order)."""
        if len(keep) == self.a.shape[0]:
            return self
        return Design.of(self.a[keep])

    def exposures(self, names: list[str]) -> tuple[LinearExposure, ...]:
        return exposures(self.a, names, patterns=self.patterns)


def _reference(n: int) -> tuple[NDArray[np.float64], Any]:
    """Independent unit-variance prior: exposure (posterior variance 0) does not depend on the
    prior as long as Σ ≻ 0, so this prior finds exactly the individuals A exposes."""
    from persuasive.linear import StructuredCovariance

    return np.zeros(n), StructuredCovariance(np.ones(n))


def _repair(
    design: Design, names: list[str], exposed: tuple[LinearExposure, ...], o: Options
) -> tuple[list[int], float | None, str]:
    """Which statistics to release, the noise sd on each, and the sentence saying how they
    were chosen: all of them (exact or ``noise_sd``), greedy withholding, or calibrated noise."""
    keep = list(range(len(names)))
    if o.withhold:  # drop statistics until nobody is exposed; the target is then only checked
        from persuasive.linear import greedy_withhold

        mean, cov = _reference(design.a.shape[1])
        w = greedy_withhold(design.a, sys.float_info.max, mean=mean, cov=cov, r1=o.r1)
        dropped = [names[int(j)] for j in w.dropped]
        how = (
            f"withheld {', '.join(dropped)} (greedy, in that order)"
            if dropped
            else "nothing had to be withheld"
        )
        return sorted(int(j) for j in w.kept), None, how
    if o.target_kappa is None or o.receivers().kappa <= o.target_kappa:
        return keep, o.noise_sd, ""
    if exposed:
        return (
            keep,
            None,
            "no noise is certified: the class is empty when the statistics expose someone "
            "(docs/linear_release.md); withhold statistics instead",
        )
    d = 0.05 if o.delta is None else o.delta
    sd = _calibrated(design, o, d)
    return (
        keep,
        sd,
        f"the smallest noise sd on every statistic with κ ≤ {o.target_kappa:g} is {sd:.6g}",
    )


def _calibrated(design: Design, o: Options, delta: float) -> float:
    """The smallest noise sd on every statistic meeting ``o.target_kappa`` under the class
    (the exact statistics do not): :func:`persuasive.linear.calibrate_noise` for the linear
    class, :func:`persuasive.linear.advice.calibrate_bounded_noise` with r0 (nobody is
    exposed here, so κ depends on the noise sd alone)."""
    assert o.target_kappa is not None
    if o.max_person_error is None:
        from persuasive.linear import calibrate_noise

        cls = o.receivers()
        return float(
            calibrate_noise(
                design.a, o.target_kappa, cls=cls, delta=delta, patterns=design.patterns
            ).sd
        )
    from persuasive.linear.advice import calibrate_bounded_noise

    if o.max_stat_sd is None:
        raise ValidationError(
            f"target_kappa = {o.target_kappa:g} is below the exact statistics' κ = "
            f"{o.receivers().kappa:.6g} under the class with max_person_error = "
            f"{o.max_person_error:g}, and noise cannot lower it without max_stat_sd (a bound "
            "V on the Receiver's prior sd of the statistics); got max_stat_sd = None"
        )
    t, r0, v = o.target_kappa, o.max_person_error, o.max_stat_sd
    return calibrate_bounded_noise(t, o.r1, o.r2, max_person_error=r0, max_stat_sd=v, delta=delta)


def _published(
    a: NDArray[np.float64], x: NDArray[np.float64], sd: float | None, rng: Any, kept: list[Any]
) -> list[float | None]:
    """A x (+ N(0, sd²) on each), refused unless every value is finite."""
    t = a @ np.nan_to_num(x)  # x is NaN only on rows no statistic selects
    if sd is not None:
        t = t + v.rng("rng", rng).normal(0.0, sd, size=t.shape)
    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        raise ValidationError(
            f"statistic {kept[int(bad[0])].name!r} is {t[bad[0]]}: a published number must "
            "be finite; nothing is released"
        )
    return [float(z) for z in t]


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
    max_person_error: float | None = None,
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
    max_person_error : float, optional
        r0 > 0: certify against Receivers who are also at most r0 prior sds wrong about any
        one person (:class:`persuasive.linear.bounded_error.BoundedErrorLinearClass`,
        ``docs/linear_bounded.md``); the published values are unchanged. Fixed noise then needs
        ``max_stat_sd`` (without it noise cannot certify below the exact statistics), and δ = 0
        is allowed with noise (the pointwise bound :math:`-\log(1 - c\gamma) + r_0^2`).
        ``target_kappa`` calibrates the noise under this class
        (:func:`persuasive.linear.advice.calibrate_bounded_noise`).

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
    >>> noisy = release_linear(df, value="y", statistics=stats, r1=1.0, r2=4.0, noise_sd=8.0,
    ...                        max_stat_sd=1.0, max_person_error=1.0, delta=0.05, rng=0)
    >>> round(noisy.certificate.kappa, 3)   # below the exact statistics' 2.386: noise pays
    0.465
    """
    if not isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        from persuasive.files.reading import scan

        frame = scan(frame, text=[value], infer=True)
    stats, a, x = build_rows(frame, statistics, value)
    o = Options.check(
        r1, r2, noise_sd, target_kappa, withhold, delta, max_stat_sd, max_person_error
    )
    names = [s.name for s in stats]
    design = Design.of(a)
    exposed = design.exposures(names)
    if not exposed and not o.withhold:  # before any calibration against the class
        refuse_empty(design.patterns, design.a, o.r2)
    keep, sd, calibrated = _repair(design, names, exposed, o)
    d = dm.check("delta", (0.0 if sd is None else 0.05) if o.delta is None else o.delta)
    if sd is not None and d <= 0.0 and o.max_person_error is None:
        raise ValidationError(
            "delta must be > 0 with noise (e.g. delta = 0.05): unbounded noise gives no finite "
            "κ at delta = 0"
        )
    kept = [stats[j] for j in keep]
    kept_design = design.rows(keep)
    withheld = tuple(s for j, s in enumerate(stats) if j not in keep)
    still = kept_design.exposures([s.name for s in kept]) if o.withhold else exposed
    cert = params = None
    out: list[float | None] = [None] * len(kept)
    if not still:
        refuse_empty(kept_design.patterns, kept_design.a, o.r2)
        params = LinearParams(
            value=value,
            statistics=tuple((s.name, s.kind, s.where) for s in kept),
            withheld=tuple(s.name for s in withheld),
            members=tuple(kept_design.masks),
            n=int(a.shape[1]),
            r1=o.r1,
            r2=o.r2,
            noise_sd=sd,
            max_stat_sd=o.max_stat_sd,
            delta=float(d),
            target_kappa=o.target_kappa,
            max_person_error=o.max_person_error,
        )
        params = params.knowing(kept_design.patterns, still)
        cert = LINEAR_KIND.certify(params).certificate
        out = _published(kept_design.a, x, sd, rng, kept)
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
            r1=o.r1,
            r2=o.r2,
            delta=float(d),
            noise_sd=sd,
            max_stat_sd=o.max_stat_sd,
            max_person_error=o.max_person_error,
            certificate=cert,
            exposed=exposed,
            params_=params,
            target_kappa=o.target_kappa,
            calibrated=calibrated,
            matrix=kept_design.a,
        ),
        frame,
    )
