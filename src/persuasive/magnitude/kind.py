r"""The certificate of a magnitude table released by the PP sensitivity rule.

Claim::

    {"spec": {"mechanism": {"type": "magnitude_suppression", "keys": [...], "value": "...",
                            "unit": "...", "holding": "..." or null, "size": "..." or null,
                            "rule": "suppress every cell whose certified kappa exceeds the target"},
              "definition": {"kind": "pp", "kappa": K, "delta": 0,
                             "scores": [{"type": "marginal_dss"}],
                             "priors": {"class": "magnitude_gaussian", "r1", "r2", "gamma",
                                        "insiders": m}}},
     "target_kappa": K}

Every published cell's certified κ (``docs/magnitude.md`` §2: against outsiders and every
coalition of at most m insiders, for every prior of the class) is at most K, so the release is
(𝒟, ℳ, K, 0)-PP for each contributor of a published cell. The per-cell κ are computed from the
contributions, which this certificate does not hold: ``persuasive verify`` recomputes the
guarantee and the statement from the claim, and checks the publication (its columns, a
non-negative finite total or an empty field per cell, no key twice, the SHA-256); the
custodian's file ``custodian_cells`` lists each cell's κ. The guarantee is ``exact = False``:
K bounds the published cells' κ, it is not attained in general.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from persuasive.errors import ValidationError
from persuasive.report.kinds import Body, Publication, need, number, one_file

__all__ = ["BASIS", "KIND", "MagnitudeParams", "magnitude_sentence"]

BASIS = "Magnitude tables (this library's extension of Prop 7, Bon et al. 2026; docs/magnitude.md)"

#: What the certificate covers and does not (``docs/magnitude.md`` §2, §5), in its notes.
NOTES = (
    "Each published total is certified on its own: the Receivers' priors are independent "
    "across cells.",
    "Not covered: what the pattern of suppressed cells itself reveals (the decision to "
    "suppress depends on the contributions, as for the p% and dominance rules).",
    "The per-cell κ were computed from the contributions, which the certificate does not "
    "hold; verify checks the claim and the publication, not the contributions.",
)
#: The notes when the spreads scale with a public size column.
SIZE_NOTES = (
    NOTES[0],
    "Covered: the pattern of suppressed cells. Each cell's κ depends only on the public sizes "
    "of its contributors (and on which units are in which cell, taken as public), so the "
    "decision to suppress reveals nothing about the values.",
    "The per-cell κ were computed from the public sizes, which the certificate does not hold; "
    "verify checks the claim and the publication.",
)


#: The note when the contributor counts are published.
COUNT_NOTE = (
    "The number of contributors of every cell is published (suppressed cells too): the "
    "Receivers of the class already know it (a contribution of 0 has prior spread 0; with a "
    "public size, which units are in which cell is public), so it adds nothing they learn."
)


#: The largest target κ (nats): e^(κ/2), the density factor the sentence states, stays finite.
MAX_KAPPA = 1000.0


def _num(x: float) -> str:
    """A parameter in words: :func:`persuasive.report.words.number`, or 6 significant digits
    from 10^15 on (where that helper drops the zeros of a whole number)."""
    from persuasive.report.words import number

    return number(x) if abs(x) < 1e15 else f"{x:.6g}"


@dataclass(frozen=True)
class MagnitudeParams:
    """The parameters of a magnitude release's claim (data-independent)."""

    keys: tuple[str, ...]
    value: str
    unit: str
    holding: str | None
    r1: float
    r2: float
    gamma: float
    insiders: int
    target_kappa: float
    size: str | None = None
    #: The published margins (key subsets; () the grand total); empty without margins.
    margins: tuple[tuple[str, ...], ...] = ()
    #: Whether the number of contributors of every cell is published too (``contributors``).
    counts: bool = False

    def __post_init__(self) -> None:
        from persuasive.magnitude.certificate import MagnitudeClass

        MagnitudeClass(self.r1, self.r2, self.gamma)  # the class's checks
        if not isinstance(self.insiders, int) or isinstance(self.insiders, bool):
            raise ValidationError(f"insiders must be an integer ≥ 0; got {self.insiders!r}")
        if self.insiders < 0:
            raise ValidationError(f"insiders must be an integer ≥ 0; got {self.insiders}")
        k = self.target_kappa
        if not isinstance(k, (int, float)) or not math.isfinite(k) or not 0 <= k <= MAX_KAPPA:
            raise ValidationError(
                f"target_kappa must be a number in [0, {MAX_KAPPA:g}] nats (beyond, e^(κ/2) "
                f"exceeds every float: it promises nothing); got {k!r}"
            )


def magnitude_sentence(p: MagnitudeParams) -> str:
    """The guarantee in plain words (who is covered, κ and its unit, what is not covered)."""
    from persuasive.report.words import kappa_text, unit_line

    who = "outsiders" + (
        f" and coalitions of up to {p.insiders} contributor{'s' if p.insiders > 1 else ''} who "
        "know their own values"
        if p.insiders
        else ""
    )
    holding = f" (the units of one “{p.holding}” counting as one contributor)" if p.holding else ""
    sds = plural_sd(math.sqrt(p.r1))
    scale = "size" if p.size is None else f"public size “{p.size}”"
    pattern = (
        "What the pattern of suppressed cells reveals is not covered."
        if p.size is None
        else "The cells were chosen from the public sizes only, so the pattern of suppressed "
        "cells reveals nothing more."
    )
    corr = (
        "independent"
        if p.r2 == 1.0
        else f"correlated with a condition number of at most {_num(p.r2)}"
    )
    margins = ""
    if p.counts:
        margins = " (with the number of contributors of every cell)"
    guess = "the total they learn"
    of_cell = " of a published cell"
    if p.margins:
        names = [" × ".join(m) if m else "the grand total" for m in p.margins]
        margins += f" and its margins ({'; '.join(names)}), exactly,"
        guess = "all the published totals at once (allowing for how they overlap)"
        of_cell = ""
    return (
        f"Publishing the totals of “{p.value}” by {', '.join(p.keys)}{margins} with every cell "
        f"suppressed whose certified κ exceeds {_num(p.target_kappa)}, protects each contributor"
        f"{holding}{of_cell} against {who}, whose Gaussian prior on the others' "
        f"values guesses {guess} to within {sds}, is {corr}, and is uncertain "
        f"about each contribution in proportion to its {scale} (up to a factor "
        f"{_num(p.gamma)} between contributors). Such a Receiver's "
        "Dawid–Sebastiani score of any one contribution improves by at most "
        f"κ = {kappa_text(p.target_kappa)} nats: "
        + unit_line(
            p.target_kappa, what="that contribution", density=True, believed="such a Receiver"
        )
        + f". {pattern} Proof: this library's extension of Bon et al. 2026, Proposition 7, to "
        "magnitude tables."
    )


def plural_sd(k: float) -> str:
    """``1 prior standard deviation`` / ``1.5 prior standard deviations``."""

    return f"{_num(k)} prior standard deviation{'' if k == 1.0 else 's'}"


def _counts(claim: Mapping[str, Any]) -> bool:
    """``claim.spec.mechanism.counts``: absent (not published) or true."""
    mech = claim.get("spec", {}).get("mechanism", {}) if isinstance(claim, Mapping) else {}
    value = mech.get("counts", False) if isinstance(mech, Mapping) else False
    if value is not False and value is not True:
        raise ValidationError(
            f"claim.spec.mechanism.counts: must be true or absent; got {value!r:.40}"
        )
    return value


class MagnitudeKind:
    """:class:`~persuasive.report.kinds.Kind` of magnitude tables."""

    name: ClassVar[str] = "magnitude"
    needs_publication: ClassVar[bool] = False
    published: ClassVar[tuple[str, ...]] = ("released",)
    inputs: ClassVar[tuple[str, ...]] = (
        "spec.mechanism.keys",
        "spec.mechanism.value",
        "spec.mechanism.unit",
        "spec.mechanism.holding",
        "spec.mechanism.size",
        "spec.mechanism.counts",
        "spec.definition.priors",
        "target_kappa",
    )

    def parameters(self, claim: Mapping[str, Any]) -> MagnitudeParams:
        doc = {"claim": claim}
        mech = "claim.spec.mechanism"
        priors = "claim.spec.definition.priors"
        keys = need(doc, f"{mech}.keys", list)
        if not keys or not all(isinstance(k, str) and k for k in keys):
            raise ValidationError(f"claim.spec.mechanism.keys: must be column names; got {keys!r}")
        return MagnitudeParams(
            keys=tuple(keys),
            value=need(doc, f"{mech}.value", str),
            unit=need(doc, f"{mech}.unit", str),
            holding=need(doc, f"{mech}.holding", str, optional=True),
            r1=number(doc, f"{priors}.r1") or 0.0,
            r2=number(doc, f"{priors}.r2") or 0.0,
            gamma=number(doc, f"{priors}.gamma") or 0.0,
            insiders=need(doc, f"{priors}.insiders", int),
            target_kappa=number(doc, "claim.target_kappa") or 0.0,
            size=need(doc, f"{mech}.size", str, optional=True),
            counts=_counts(claim),
        )

    def claim(self, p: MagnitudeParams) -> dict[str, Any]:
        out = self._claim(p)
        if p.counts:  # only when published, so that earlier claims are unchanged
            out["spec"]["mechanism"]["counts"] = True
        return out

    def _claim(self, p: MagnitudeParams) -> dict[str, Any]:
        return {
            "spec": {
                "mechanism": {
                    "type": "magnitude_suppression",
                    "keys": list(p.keys),
                    "value": p.value,
                    "unit": p.unit,
                    "holding": p.holding,
                    "size": p.size,
                    "rule": "suppress every cell whose certified kappa exceeds the target",
                },
                "definition": {
                    "kind": "pp",
                    "kappa": p.target_kappa,
                    "delta": 0.0,
                    "scores": [{"type": "marginal_dss"}],
                    "priors": {
                        "class": "magnitude_gaussian",
                        "r1": p.r1,
                        "r2": p.r2,
                        "gamma": p.gamma,
                        "insiders": p.insiders,
                    },
                },
            },
            "target_kappa": p.target_kappa,
        }

    def certify(self, p: MagnitudeParams, publication: Publication | None = None) -> Body:
        return Body(
            guarantee={
                "holds": True,
                "kappa": p.target_kappa,
                "delta": 0.0,
                "exact": False,
                "basis": BASIS,
                "statement": magnitude_sentence(p),
            },
            notes=[*(NOTES if p.size is None else SIZE_NOTES), *([COUNT_NOTE] if p.counts else [])],
        )

    def read_publication(self, p: MagnitudeParams, files: Mapping[str, Path]) -> Publication:
        from persuasive.files.parsing import real_expr
        from persuasive.files.reading import scan

        name, path = one_file(files, "released")
        want = [*p.keys, "total", *(["contributors"] if p.counts else [])]
        frame = scan(path, text=want, role="published table")
        schema = frame.collect_schema()
        if list(schema.names()) != want:
            return Publication(
                {name: path},
                {},
                [
                    f"publication: {name} has columns {list(schema.names())}; the claim "
                    f"states {want}"
                ],
            )
        total = real_expr("total", schema["total"])
        key = pl.struct(list(p.keys)) if len(p.keys) > 1 else pl.col(p.keys[0])
        stats = (
            frame.select(
                pl.len().alias("n"),
                pl.col("total").is_null().sum().alias("suppressed"),
                key.n_unique().alias("unique"),
                (
                    pl.col("total").is_not_null()
                    & (total.is_null() | ~total.is_finite() | (total < 0))
                )
                .sum()
                .alias("bad"),
            )
            .collect()
            .row(0, named=True)
        )
        problems = []
        if p.counts:
            n = real_expr("contributors", schema["contributors"])
            wrong = frame.select(
                (n.is_null() | ~n.is_finite() | (n < 0) | (n != n.round(0))).sum()
            ).collect()[0, 0]
            if wrong:
                problems.append(
                    f"publication: {wrong} contributor count(s) are not non-negative integers"
                )
        if stats["bad"]:
            problems.append(
                f"publication: {stats['bad']} total(s) are not finite non-negative numbers"
            )
        if stats["unique"] != stats["n"]:
            problems.append(
                f"publication: {stats['n'] - stats['unique']} key(s) appear more than once"
            )
        facts = {"cells": int(stats["n"]), "suppressed": int(stats["suppressed"])}
        return Publication({name: path}, facts, problems)


KIND = MagnitudeKind()
