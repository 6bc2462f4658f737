r"""The certificate of a magnitude table published with margins (primary and secondary
suppression, ``docs/magnitude.md`` §6).

The claim of :mod:`persuasive.magnitude.kind` plus ``claim.margins`` (the key subsets whose
totals are published; ``[]`` the grand total). The guarantee is the target κ: every published
cell's certified κ and every suppressed cell's κ with the margins published are at most the
target (against independent priors, r2 = 1). Publication: ``released.*`` (the cells, a
suppressed total empty) and ``margins.*`` (``margin``, the key columns, ``total``: a key column
is empty where the margin sums over it); a verifier checks both files' columns, that every
published number is finite and non-negative, and their SHA-256.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from persuasive.errors import ValidationError
from persuasive.magnitude.kind import MagnitudeKind, MagnitudeParams
from persuasive.report.kinds import Body, Publication, need, one_file

__all__ = ["KIND", "MARGIN_NOTES", "margin_name"]

MARGIN_NOTES = (
    "The cells and margins are certified together, against priors independent across all "
    "contributions (r2 = 1) whose spreads are proportional to size up to the factor γ across "
    "the whole table, by a bound that is not attained in general (docs/magnitude.md §6).",
)


def margin_name(subset: tuple[str, ...]) -> str:
    """How ``margins.*`` names a margin: ``a+b``, or ``total``."""
    return "+".join(subset) if subset else "total"


class MagnitudeMarginsKind(MagnitudeKind):
    """:class:`~persuasive.report.kinds.Kind` of magnitude tables with margins."""

    name: ClassVar[str] = "magnitude_margins"
    published: ClassVar[tuple[str, ...]] = ("released", "margins")
    inputs: ClassVar[tuple[str, ...]] = (*MagnitudeKind.inputs, "margins")

    def parameters(self, claim: Mapping[str, Any]) -> MagnitudeParams:
        p = super().parameters(claim)
        doc = {"claim": claim}
        raw = need(doc, "claim.margins", list)
        subsets = []
        for j in range(len(raw)):
            sub = need(doc, f"claim.margins.{j}", list)
            if not all(isinstance(k, str) and k in p.keys for k in sub) or len(sub) >= len(p.keys):
                raise ValidationError(
                    f"claim.margins[{j}]: must be a proper subset of the keys; got {sub!r:.60}"
                )
            subsets.append(tuple(sub))
        if not subsets:
            raise ValidationError("claim.margins: must name at least one margin")
        return replace(p, margins=tuple(subsets))

    def claim(self, p: MagnitudeParams) -> dict[str, Any]:
        return {**super().claim(p), "margins": [list(m) for m in p.margins]}

    def certify(self, p: MagnitudeParams, publication: Publication | None = None) -> Body:
        body = super().certify(p, publication)
        # the cells are no longer certified one by one: the margins note replaces the first
        return Body(body.guarantee, [*MARGIN_NOTES, *body.notes[1:]])

    def read_publication(self, p: MagnitudeParams, files: Mapping[str, Path]) -> Publication:
        from persuasive.files.parsing import real_expr
        from persuasive.files.reading import scan

        cells = super().read_publication(
            p, {n: f for n, f in files.items() if Path(n).stem == "released"}
        )
        name, path = one_file(files, "margins")
        want = ["margin", *p.keys, "total"]
        frame = scan(path, text=want, role="published margins")
        schema = frame.collect_schema()
        problems = list(cells.problems)
        facts = dict(cells.facts)
        if list(schema.names()) != want:
            problems.append(
                f"publication: {name} has columns {list(schema.names())}; the claim states {want}"
            )
        else:
            total = real_expr("total", schema["total"])
            bad = frame.select(
                (total.is_null() | ~total.is_finite() | (total < 0)).sum().alias("bad"),
                pl.len().alias("n"),
                pl.col("margin").cast(pl.String).unique().sort().alias("names").implode(),
            ).collect()
            if bad["bad"][0]:
                problems.append(
                    f"publication: {bad['bad'][0]} margin total(s) are not finite non-negative "
                    "numbers"
                )
            stated = sorted(margin_name(m) for m in p.margins)
            if list(bad["names"][0]) != stated:
                problems.append(
                    f"publication: {name} holds the margins {list(bad['names'][0])}; the claim "
                    f"states {stated}"
                )
            facts["margin_totals"] = int(bad["n"][0])
        return Publication({**cells.files, name: path}, facts, problems)


KIND = MagnitudeMarginsKind()
