"""A differencing attack on exact means, and its two repairs (Fair's affairs survey).

Data: Fair's (1978) survey of 6366 women, shipped with statsmodels (no download); the
sensitive column is ``affairs`` (time spent in extramarital affairs).

1. The mean of ``affairs`` overall and per ``religious`` group (1-4): private under the linear
   Gaussian class (r1, r2) = (1, 4), κ = r1 + log r2 ≈ 2.39 for every respondent.
2. Add the overall mean *without respondent 17*: then
   n·mean_all − (n − 1)·mean_without = x_17, her exact answer. The release is refused, naming
   row 17 and that combination (κ = ∞ for every Gaussian prior).
3. Repairs: (a) Gaussian noise on every statistic, calibrated so that a stated Receiver
   (independent N(1, 3²) priors on each answer) gains at most κ = 6 nats on anyone, at δ = 0.05
   — a fixed-prior guarantee: no noise is certified over the whole class while someone is
   exposed, since the class is then empty (docs/linear_release.md); (b) withholding
   statistics greedily until nobody is exposed: the differencing statistic (or the overall
   mean) is dropped and the rest is released exactly under the class.

Run ``python examples/differencing_attack.py``; ``tests/test_example_differencing.py`` checks
every claim against numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

#: The Receiver class (r1, r2), the respondent removed, the noise target and its δ.
R1, R2 = 1.0, 4.0
RESPONDENT = 17
TARGET_KAPPA, DELTA = 6.0, 0.05
#: The stated Receiver of the noise repair: independent N(PRIOR_MEAN, PRIOR_SD²) per answer.
PRIOR_MEAN, PRIOR_SD = 1.0, 3.0


def group_statistics() -> list[tuple[str, str, str]]:
    """The overall mean of ``affairs`` and one mean per ``religious`` group."""
    return [("overall", "mean", "true")] + [
        (f"religious_{g}", "mean", f"religious = {g}") for g in (1, 2, 3, 4)
    ]


def differencing_statistics() -> list[tuple[str, str, str]]:
    """The same, plus the overall mean without :data:`RESPONDENT`."""
    return [*group_statistics(), ("all_but_17", "mean", f"row_id != {RESPONDENT}")]


def load() -> pl.DataFrame:
    from persuasive.release.data import load_fair

    return load_fair()


def private_release(fair: pl.DataFrame) -> Any:
    from persuasive.release.linear import release_linear

    return release_linear(fair, value="affairs", statistics=group_statistics(), r1=R1, r2=R2)


@dataclass(frozen=True)
class Attack:
    """The refused release, and what its statistics would have revealed."""

    release: Any
    would_publish: dict[str, float]
    revealed: float


def attack(fair: pl.DataFrame) -> Attack:
    """Release with the differencing statistic (refused) and replay the attack on its values."""
    from persuasive.release.linear import release_linear
    from persuasive.release.statistics import statistics_matrix

    stats = differencing_statistics()
    rel = release_linear(fair, value="affairs", statistics=stats, r1=R1, r2=R2)
    names, a = statistics_matrix(fair, stats, value="affairs")
    t = dict(zip(names, a @ fair["affairs"].to_numpy(), strict=True))
    n = fair.height
    return Attack(rel, t, n * t["overall"] - (n - 1) * t["all_but_17"])


@dataclass(frozen=True)
class NoiseRepair:
    """Calibrated noise: its sd, the stated Receiver's worst κ (max over respondents) and the
    respondent's, and the sd of the attacker's error on x_17 through the combination."""

    sd: float
    kappa: float
    respondent_kappa: float
    attack_error_sd: float


def noise_repair(fair: pl.DataFrame) -> NoiseRepair:
    """The smallest noise sd meeting :data:`TARGET_KAPPA` for the stated Receiver."""
    from persuasive.linear import StructuredCovariance, analyse, calibrate_noise
    from persuasive.release.statistics import statistics_matrix

    names, a = statistics_matrix(fair, differencing_statistics(), value="affairs")
    n = fair.height
    mean, cov = np.full(n, PRIOR_MEAN), StructuredCovariance(np.full(n, PRIOR_SD**2))
    cal = calibrate_noise(a, TARGET_KAPPA, mean=mean, cov=cov, r1=R1, delta=DELTA)
    kappas = analyse(mean, cov, a, cal.R).kappa(R1, DELTA)
    c = np.zeros(len(names))
    c[names.index("overall")], c[names.index("all_but_17")] = n, -(n - 1)
    return NoiseRepair(cal.sd, float(kappas.max()), float(kappas[RESPONDENT]),
                       cal.sd * float(np.linalg.norm(c)))  # fmt: skip


def withholding_repair(fair: pl.DataFrame) -> Any:
    """Withhold statistics greedily until nobody is exposed; the rest is released exactly."""
    from persuasive.release.linear import release_linear

    return release_linear(
        fair, value="affairs", statistics=differencing_statistics(), r1=R1, r2=R2, withhold=True
    )


def main() -> None:
    fair = load()
    x = fair["affairs"].to_numpy()
    print(f"Fair's affairs survey: n = {fair.height} respondents, column 'affairs'.\n")

    rel = private_release(fair)
    print("1. Means overall and by religious group, released exactly:")
    for name, value in zip(rel.values["name"], rel.values["value"], strict=True):
        print(f"   {name:<12} {value:.4f}")
    print(f"   nobody exposed; certified κ = {rel.certificate.kappa:.4f} = r1 + log r2.\n")

    att = attack(fair)
    print("2. Add the overall mean without respondent 17:")
    for e in att.release.exposed:
        print(f"   EXPOSED: {e.describe()}")
    print(f"   the combination gives {att.revealed:.6f}; her answer is {x[RESPONDENT]:.6f}.")
    print("   The release is refused (κ = ∞ whatever the Receiver's Gaussian prior).\n")

    rep = noise_repair(fair)
    print(f"3a. Gaussian noise, sd {rep.sd:.4g} on every statistic: the stated Receiver")
    print(f"    (N({PRIOR_MEAN:g}, {PRIOR_SD:g}²) per answer) gains at most κ = {rep.kappa:.3f}")
    print(f"    ≤ {TARGET_KAPPA:g} nats on anyone at δ = {DELTA:g} (respondent 17: "
          f"{rep.respondent_kappa:.3f});")  # fmt: skip
    print(f"    the attack's estimate of x_17 now has error sd {rep.attack_error_sd:.3g}.\n")

    held = withholding_repair(fair)
    print(f"3b. Withholding: {held.calibrated}; released exactly:")
    for name, value in zip(held.values["name"], held.values["value"], strict=True):
        print(f"   {name:<12} {value:.4f}")
    print(f"    certified κ = {held.certificate.kappa:.4f}; {held.statement()}")
    assert math.isfinite(held.certificate.kappa)


if __name__ == "__main__":
    main()
