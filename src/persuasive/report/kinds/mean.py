r"""The certificate of a released mean, or of one mean per group (Prop 7, Bon et al. 2026).

Claim::

    {"spec": {"mechanism": {"type": "exact_mean"}              # or a chain with Gaussian noise
              "definition": {"kind": "pp", "kappa": K or "inf", "delta": δ,
                             "scores": [{"type": "marginal_dss"}],
                             "priors": {"class": "gaussian_mean", "r1": r1, "r2": r2,
                                        ["max_mean_sd": V]}}},
                                        # or {"class": "bounded_error_gaussian", ...,
                                        #     "max_person_error": r0}
     "columns": {"value": "...", "group": "..." or null},
     "target_kappa": K or null}

Recomputed: the guarantee by :func:`persuasive.certify` of the spec — Prop 7 for the exact
mean (κ = r1 + log r2, sharp), this library's extension for Gaussian noise
(``docs/release_means.md``), and against Receivers with a bounded error on every person
(``max_person_error``, :mod:`persuasive.certify.bounded_error`, section (e)); group means
are certified per group (parallel composition under a prior that treats the groups as
independent, ``docs/release_means.md``). Old claims (without ``max_person_error``) read and
verify unchanged. Publication:
``released.json`` (``{"mean": m}``) or ``released.csv`` / ``.parquet`` (group, mean); a verifier
checks every published mean is a finite number and no group repeats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from persuasive.report.kinds import (
    Body,
    Publication,
    certified,
    holds_of,
    need,
    not_met,
    number,
    one_file,
)

__all__ = ["KIND", "MeanParams", "gaussian_receiver", "mean_sentence"]


@dataclass(frozen=True)
class MeanParams:
    """The parameters of a mean's claim (``noise_sd`` None: the exact mean;
    ``max_person_error`` None: Prop 7's class, else the bounded-error class)."""

    r1: float
    r2: float
    noise_sd: float | None
    max_mean_sd: float | None
    delta: float
    value: str
    group: str | None = None
    target_kappa: float | None = None
    max_person_error: float | None = None


def gaussian_receiver(r1: float, r2: float, *, of: str, balance: str, max_sd: str = "") -> str:
    """The Gaussian Receivers of Prop 7's class (and its generalisation to linear statistics)
    in words: the prior guess of ``of`` at most √r1 prior standard deviations off, correlations
    balanced as ``balance`` says (r2), and what that implies: ``of`` explains at most
    1 − 1/r2 of any one person's prior variance (docs/math.md §8, proof step 3)."""
    from persuasive.report.words import number, percent

    sd = math.sqrt(r1)
    sds = "standard deviation" if f"{sd:.4g}" == "1" else "standard deviations"
    return (
        f"any Receiver whose prior on the data is Gaussian, whose prior guess of {of} is at "
        f"most {sd:.4g} prior {sds} away from the truth (r1 = {number(r1)}, the square of that "
        f"distance), and whose prior correlations are balanced (r2 = {number(r2)}: {balance})"
        f"{max_sd}, so that {of} {'explain' if of.endswith('statistics') else 'explains'} at "
        f"most {percent(1 - 1 / r2)} of any one person's "
        "prior variance"
    )


def mean_sentence(p: MeanParams, kappa: float, delta: float, basis: str, holds: bool) -> str:
    """The guarantee of a released mean in plain words: who is covered, κ with its unit, and
    one line saying what the unit means (no symbol, class name or formula)."""
    from persuasive.report.words import kappa_text, number, proof_words, unit_line

    what = (
        f"the mean of “{p.value}”"
        if p.group is None
        else f"one mean of “{p.value}” per “{p.group}” group"
    )
    how = (
        "exactly"
        if p.noise_sd is None
        else f"with Gaussian noise of standard deviation {number(p.noise_sd)} added"
    )
    v_part = (
        f", whose prior standard deviation of the mean is at most {number(p.max_mean_sd)}"
        if p.max_mean_sd is not None
        else ""
    )
    if p.max_person_error is not None:
        r0 = number(p.max_person_error)
        v_part += (
            f", who is at most {r0} prior standard deviation{'' if r0 == '1' else 's'} wrong "
            "about any one person"
        )
    of = "the mean" if p.group is None else "each group's mean"
    who = gaussian_receiver(
        p.r1,
        p.r2,
        of=of,
        balance=f"the largest eigenvalue of the prior correlation matrix is at most {number(p.r2)}"
        " × (1 − the largest share of one person in the total prior variance) times the "
        "smallest",
        max_sd=v_part,
    )
    if p.group is not None:
        who = who.replace(
            "any Receiver whose prior",
            "any Receiver whose prior treats the groups as independent, whose prior",
            1,
        )
    prob = "" if delta == 0 else f", except with probability at most {number(delta)}"
    text = (
        f"Publishing {what} {how} protects every individual against {who}. Such a Receiver's "
        f"Dawid–Sebastiani score (a score of a belief's mean and variance) of any one person's "
        f"value improves by at most κ = {kappa_text(kappa)} nats{prob}: "
        + unit_line(
            kappa, what="that person's true value", density=True, believed="such a Receiver"
        )
        + f". Proof: {proof_words(basis)}."
    )
    return text + not_met(p.target_kappa, holds)


class MeanKind:
    """:class:`~persuasive.report.kinds.Kind` of a released mean (or group means)."""

    name: ClassVar[str] = "mean"
    needs_publication: ClassVar[bool] = False
    published: ClassVar[tuple[str, ...]] = ("released",)
    inputs: ClassVar[tuple[str, ...]] = (
        "spec.mechanism",
        "spec.definition.priors",
        "spec.definition.delta",
        "columns",
        "target_kappa",
    )

    def parameters(self, claim: Mapping[str, Any]) -> MeanParams:
        doc = {"claim": claim}
        mech = need(doc, "claim.spec.mechanism", dict)
        noise_sd: float | None = None
        if mech.get("type") == "chain":
            noise_sd = number(doc, "claim.spec.mechanism.post.sigma")
        priors = "claim.spec.definition.priors"
        return MeanParams(
            r1=number(doc, f"{priors}.r1") or 0.0,
            r2=number(doc, f"{priors}.r2") or 0.0,
            noise_sd=noise_sd,
            max_mean_sd=number(doc, f"{priors}.max_mean_sd", optional=True)
            if "max_mean_sd" in need(doc, priors, dict)
            else None,
            max_person_error=number(doc, f"{priors}.max_person_error", optional=True)
            if "max_person_error" in need(doc, priors, dict)
            else None,
            delta=number(doc, "claim.spec.definition.delta") or 0.0,
            value=need(doc, "claim.columns.value", str),
            group=need(doc, "claim.columns.group", str, optional=True),
            target_kappa=number(doc, "claim.target_kappa", optional=True),
        )

    def claim(self, p: MeanParams) -> dict[str, Any]:
        mech: dict[str, Any] = {"type": "exact_mean"}
        if p.noise_sd is not None:
            mech = {
                "type": "chain",
                "first": mech,
                "post": {"type": "gaussian", "sigma": p.noise_sd},
            }
        bounded = p.max_person_error is not None
        priors: dict[str, Any] = {
            "class": "bounded_error_gaussian" if bounded else "gaussian_mean",
            "r1": p.r1,
            "r2": p.r2,
        }
        if p.max_mean_sd is not None:
            priors["max_mean_sd"] = p.max_mean_sd
        if bounded:
            priors["max_person_error"] = p.max_person_error
        return {
            "spec": {
                "mechanism": mech,
                "definition": {
                    "kind": "pp",
                    "kappa": math.inf if p.target_kappa is None else p.target_kappa,
                    "delta": p.delta,
                    "scores": [{"type": "marginal_dss"}],
                    "priors": priors,
                },
            },
            "columns": {"value": p.value, "group": p.group},
            "target_kappa": p.target_kappa,
        }

    def certify(self, p: MeanParams, publication: Publication | None = None) -> Body:
        from persuasive.certify import certify
        from persuasive.classes import GaussianMeanClass
        from persuasive.definitions import PersuasivePrivacy
        from persuasive.mechanisms import Chain, ExactMean, GaussianMechanism
        from persuasive.scores import MarginalDSS

        cls = GaussianMeanClass(p.r1, p.r2, max_mean_sd=p.max_mean_sd)
        if p.max_person_error is not None:
            from persuasive.classes.bounded_error import BoundedErrorGaussianClass

            cls = BoundedErrorGaussianClass(
                p.r1, p.r2, max_mean_sd=p.max_mean_sd, max_person_error=p.max_person_error
            )
        mech: Any = ExactMean()
        if p.noise_sd is not None:
            mech = Chain(ExactMean(), GaussianMechanism(p.noise_sd))
        kappa = math.inf if p.target_kappa is None else p.target_kappa
        cert = certify(mech, PersuasivePrivacy(MarginalDSS(), cls, kappa, p.delta))
        holds = holds_of(cert)
        notes = []
        if p.group is not None:
            notes.append(
                "Group means are certified group by group: a Receiver whose prior treats the "
                "groups as independent learns about a person only from that person's group mean "
                "(parallel composition, docs/release_means.md); a prior correlating the groups "
                "is not covered. Group sizes are counts and are not published."
            )
        statement = mean_sentence(p, cert.kappa, cert.delta, cert.basis, holds)
        return certified(cert, statement, notes)

    def read_publication(self, p: MeanParams, files: Mapping[str, Path]) -> Publication:
        name, path = one_file(files, "released")
        problems: list[str] = []
        if p.group is None:
            if Path(name).suffix != ".json":
                problems.append(
                    f"publication: a single mean is published as released.json; got {name}"
                )
                return Publication({name: path}, {}, problems)
            from persuasive.report.certificate import loads

            doc, twice = loads(path.read_text(encoding="utf-8"), source=f"published '{name}'")
            if twice or set(doc) != {"mean"}:
                problems.append(
                    f'publication: {name} must hold exactly {{"mean": m}}; got keys {sorted(doc)}'
                )
            m = doc.get("mean")
            if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m):
                problems.append(f"publication: the published mean is {m!r}, not a finite number")
            return Publication({name: path}, {"means": 1}, problems)
        from persuasive.files.reading import real_expr, scan

        frame = scan(path, text=[p.group, "mean"], role="published means")
        cols = list(frame.collect_schema().names())
        if cols != [p.group, "mean"]:
            problems.append(
                f"publication: {name} has columns {cols}; the certificate states "
                f"{[p.group, 'mean']}"
            )
            return Publication({name: path}, {}, problems)
        dtype = frame.collect_schema()["mean"]
        stats = (
            frame.select(
                pl.len().alias("n"),
                pl.col(p.group).n_unique().alias("groups"),
                (~real_expr("mean", dtype).is_finite()).fill_null(True).sum().alias("bad"),
            )
            .collect()
            .row(0, named=True)
        )
        if stats["bad"]:
            problems.append(f"publication: {stats['bad']} published mean(s) are not finite numbers")
        if stats["groups"] != stats["n"]:
            problems.append(f"publication: a {p.group!r} group appears more than once")
        return Publication({name: path}, {"means": int(stats["n"])}, problems)


KIND = MeanKind()
