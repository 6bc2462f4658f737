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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.release.statistics import (
    COMBINATION_RTOL,
    Statistic,
    build_rows,
)
from persuasive.results import Certificate


class LinearExposure(NamedTuple):
    """An exposed individual: ``row_id`` and the combination {statistic name: c_j} with
    :math:`\\sum_j c_j T_j = x_{row\\_id}`."""

    row_id: int
    combination: dict[str, float]

    def describe(self) -> str:
        """``row 17 = 6366·overall − 6365·all_but_17`` (coefficients to 6 significant digits)."""
        terms = []
        for name, c in self.combination.items():
            sign = "−" if c < 0 else "+"
            mag = "" if math.isclose(abs(c), 1.0) else f"{abs(c):.6g}·"
            terms.append(f"{sign} {mag}{name}")
        text = " ".join(terms).removeprefix("+ ").replace("− ", "−", 1 if terms[0][0] == "−" else 0)
        return f"row {self.row_id} = {text}"


def combination_of(coefficients: ArrayLike, names: Sequence[str]) -> dict[str, float]:
    """The non-negligible coefficients of a combination, by statistic name."""
    c = np.asarray(coefficients, dtype=float)
    top = float(np.max(np.abs(c))) if c.size else 0.0
    return {n: float(x) for n, x in zip(names, c, strict=True) if abs(x) > COMBINATION_RTOL * top}


@dataclass(frozen=True)
class LinearRelease:
    """A release of linear statistics (``kind = "linear"``); see :func:`release_linear`.

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
    spec : dict
        The TOML-schema document: statistics' definitions, value column, noise, class; no data.
    """

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
    spec: dict[str, Any] = field(repr=False)
    target_kappa: float | None = None
    calibrated: str = ""
    matrix: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    kind: str = "linear"

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

    def calibration_curve(self, xs: Any = None) -> tuple[Any, Any, str]:
        """κ under the class against the noise sd on every statistic: ``(sds, kappas, label)``."""
        return _curve(self, xs)


# --------------------------------------------------------------------------------------------
# The release
# --------------------------------------------------------------------------------------------


def _reference(n: int) -> tuple[NDArray[np.float64], Any]:
    """Independent unit-variance prior: exposure (posterior variance 0) does not depend on the
    prior as long as Σ ≻ 0, so this prior finds exactly the individuals A exposes."""
    from persuasive.linear import StructuredCovariance

    return np.zeros(n), StructuredCovariance(np.ones(n))


def _sparsest(a: NDArray[np.float64], i: int, fallback: NDArray[np.float64]) -> NDArray[np.float64]:
    """A combination c with Aᵀc = e_i using as few statistics as possible (up to 3, k ≤ 40),
    else ``fallback`` (the minimum-norm one): the readable form of a differencing attack."""
    from itertools import combinations

    k = a.shape[0]
    e = np.zeros(a.shape[1])
    e[i] = 1.0
    for size in range(1, min(3, k) + 1 if k <= 40 else 1):
        for rows in combinations(range(k), size):
            sub = a[list(rows)].T
            c, *_ = np.linalg.lstsq(sub, e, rcond=None)
            if np.linalg.norm(sub @ c - e) <= 1e-8:
                out = np.zeros(k)
                out[list(rows)] = c
                return out
    return fallback


def _exposures(a: NDArray[np.float64], names: Sequence[str]) -> tuple[LinearExposure, ...]:
    from persuasive.linear import analyse

    mean, cov = _reference(a.shape[1])
    found = analyse(mean, cov, a).exposures()
    return tuple(
        LinearExposure(e.i, combination_of(_sparsest(a, e.i, e.combination), names)) for e in found
    )


def _certify(a: Any, cls: Any, sd: float | None, delta: float) -> Certificate:
    import persuasive as pp

    mech = pp.LinearGaussian(a, None if sd is None else sd**2)
    probe = pp.certify(mech, pp.PersuasivePrivacy(pp.MarginalDSS(), cls, math.inf, delta))
    return pp.certify(mech, pp.PersuasivePrivacy(pp.MarginalDSS(), cls, probe.kappa, delta))


def _spec(
    value: str,
    kept: Sequence[Statistic],
    withheld: Sequence[Statistic],
    cls_doc: dict[str, Any],
    sd: float | None,
    kappa: float,
    delta: float,
) -> dict[str, Any]:
    mech: dict[str, Any] = {
        "type": "linear_statistics",
        "value": value,
        "statistics": [s.to_dict() for s in kept],
    }
    if withheld:
        mech["withheld"] = [s.name for s in withheld]
    if sd is not None:
        mech["noise"] = {"type": "gaussian", "sigma": sd}
    return {
        "name": "linear_release",
        "description": "linear statistics (means and sums over subsets) of one column; the "
        "statistics are defined by their WHERE clauses, the data are not part of the spec",
        "mechanism": mech,
        "definition": {
            "kind": "pp",
            "kappa": kappa,
            "delta": delta,
            "scores": [{"type": "marginal_dss"}],
            "priors": cls_doc,
        },
    }


def release_linear(
    frame: pl.DataFrame | pl.LazyFrame,
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
    frame : polars.DataFrame or LazyFrame
        One row per individual.
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

    stats, a, x = build_rows(frame, statistics, value)
    r1 = v.real("r1", r1, low=0.0, low_open=True)
    r2 = v.real("r2", r2, low=1.0, low_open=True)
    if noise_sd is not None:
        noise_sd = v.real("noise_sd", noise_sd, low=0.0, low_open=True)
        if target_kappa is not None or withhold:
            raise ValidationError(
                "noise_sd is fixed noise; target_kappa (calibrated noise) and withhold are the "
                "alternatives to it: give one of them"
            )
    if target_kappa is not None:
        target_kappa = v.real("target_kappa", target_kappa, low=0.0, low_open=True)
    if max_stat_sd is not None:
        max_stat_sd = v.real("max_stat_sd", max_stat_sd, low=0.0, low_open=True)
    cls = LinearGaussianClass(r1, r2, max_stat_sd=max_stat_sd)
    cls_doc: dict[str, Any] = {"class": "linear_gaussian", "r1": r1, "r2": r2}
    if max_stat_sd is not None:
        cls_doc["max_stat_sd"] = max_stat_sd
    names = [s.name for s in stats]
    exposed = _exposures(a, names)
    keep = list(range(len(stats)))
    sd, calibrated = noise_sd, ""
    exact_kappa = r1 + math.log(r2)
    if withhold:  # drop statistics until nobody is exposed; the target is then only checked
        from persuasive.linear import greedy_withhold

        mean, cov = _reference(a.shape[1])
        w = greedy_withhold(a, sys.float_info.max, mean=mean, cov=cov, r1=r1)
        keep = sorted(int(j) for j in w.kept)
        dropped = [names[int(j)] for j in w.dropped]
        calibrated = f"withheld {', '.join(dropped) or 'nothing'} (greedy, in that order)"
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
    delta = v.real("delta", delta, low=0.0, high=1.0, high_open=True)
    if sd is not None and delta <= 0.0:
        raise ValidationError(
            "delta must be > 0 with noise (e.g. delta = 0.05): unbounded noise gives no finite "
            "κ at delta = 0"
        )
    kept = [stats[j] for j in keep]
    kept_a = a[keep]
    withheld = tuple(s for j, s in enumerate(stats) if j not in keep)
    still = _exposures(kept_a, [s.name for s in kept]) if withhold else exposed
    cert: Certificate | None = None
    out: list[float | None] = [None] * len(kept)
    if not still:
        cert = _certify(kept_a, cls, sd, delta)
        t = kept_a @ np.nan_to_num(x)  # x is NaN only on rows no statistic selects
        if sd is not None:
            t = t + np.random.default_rng(rng).normal(0.0, sd, size=t.shape)
        out = [float(z) for z in t]
    values = pl.DataFrame(
        {
            "name": [s.name for s in kept],
            "kind": [s.kind for s in kept],
            "where": [s.where for s in kept],
            "value": pl.Series(out, dtype=pl.Float64),
        }
    )
    kappa = math.inf if cert is None else cert.kappa
    return LinearRelease(
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
        spec=_spec(value, kept, withheld, cls_doc, sd, kappa, float(delta)),
        target_kappa=target_kappa,
        calibrated=calibrated,
        matrix=kept_a,
    )


def statement_of(rel: LinearRelease) -> str:
    if rel.certificate is None:
        who = "; ".join(e.describe() for e in rel.exposed[:3])
        more = f" (and {len(rel.exposed) - 3} more)" if len(rel.exposed) > 3 else ""
        return (
            f"Refused: these statistics reveal {len(rel.exposed)} individual(s) exactly, "
            f"whatever the Receiver's Gaussian prior ({who}{more}); add noise "
            "(--target-kappa) or withhold statistics (--withhold)."
        )
    cert = rel.certificate
    how = "exactly" if rel.noise_sd is None else f"with Gaussian noise of sd {rel.noise_sd:g}"
    prob = "" if cert.delta == 0 else f" except with probability at most {cert.delta:g}"
    return (
        f"Publishing these {rel.values.height} linear statistics {how} protects every "
        f"individual against any Receiver with a Gaussian prior in the class G^r_A (r1 = "
        f"{rel.r1:g}, r2 = {rel.r2:g}): such a Receiver cannot improve its Dawid-Sebastiani "
        f"score for any one person's value by more than {cert.kappa:.4g} nats{prob} "
        f"({cert.basis})."
    )


def _curve(rel: LinearRelease, xs: Any) -> tuple[Any, Any, str]:
    from persuasive.linear import LinearGaussianClass

    cls = LinearGaussianClass(rel.r1, rel.r2, max_stat_sd=rel.max_stat_sd)
    delta = rel.delta if rel.delta > 0 else 0.05
    if xs is None:
        s = rel.noise_sd or 1.0
        xs = np.geomspace(s / 100.0, s * 10.0, 31)
    grid = np.asarray(xs, dtype=float)
    kap = [cls.class_kappa(rel.matrix, float(g) ** 2, delta) for g in grid]
    return (
        grid,
        np.asarray(kap, dtype=float),
        f"Gaussian noise sd on every statistic (δ = {delta:g})",
    )
