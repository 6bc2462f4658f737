r"""The certificate of a count table released by cell suppression (Prop 8, Bon et al. 2026).

Claim::

    {"spec": {"mechanism": {"type": "cell_suppression", "h": h},
              "definition": {"kind": "pp", "kappa": K or "inf", "delta": 0.0,
                             "scores": [{"type": "small_cell_log", "r": r}],
                             "priors": {"class": "small_cell", "h": h, "alpha": α(h)}}},
     "receiver": {...},                       # the Receiver model α is derived from
     "columns": {"keys": [...], "count": "..."},
     "target_kappa": K or null,
     "absent": "zero" or "structural"}       # how absent key combinations were treated

Recomputed: α from the Receiver model at h, the whole spec, and the guarantee by
``certify(CellSuppression(h), PersuasivePrivacy(SmallCellLogScore(r), SmallCellClass(h, α), K,
0))`` with κ = −log α; it holds when κ is finite and at most the target; a note states the
treatment of absent combinations. Publication: the published table (``released.csv`` or
``released.parquet``: the key columns and the count column, empty where suppressed), its number
of cells and of suppressed cells, and with structural zeros their number
(``structural_cells``: the combinations of the published levels that are not cells); a
verifier also checks that no shown count is below h, every count is a whole number, no key
repeats, and, when absent combinations are zero counts, that every combination of the
published levels is published (``docs/release.md``, "Sparse tables and structural zeros").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from persuasive.errors import ValidationError
from persuasive.files.reading import ROW
from persuasive.report.kinds import (
    Body,
    Publication,
    certified,
    holds_of,
    names,
    need,
    not_met,
    number,
    one_file,
)

__all__ = ["KIND", "TableParams", "sentence"]


@dataclass(frozen=True)
class TableParams:
    """The parameters of a table's claim."""

    h: int
    r: int
    receiver: Any
    keys: tuple[str, ...]
    count: str
    target_kappa: float | None = None
    #: ``"zero"`` or ``"structural"`` (:data:`persuasive.release.grid.ABSENT`).
    absent: str = "zero"

    def __post_init__(self) -> None:
        from persuasive.classes.receivers import Receiver, check_thresholds

        check_thresholds(self.h, self.r)
        if self.absent not in ABSENT_NOTES:
            raise ValidationError(f"absent must be 'zero' or 'structural'; got {self.absent!r:.60}")
        if not isinstance(self.receiver, Receiver):
            raise ValidationError(f"receiver must be a Receiver model; got {self.receiver!r:.60}")


#: The note each treatment of absent key combinations adds to a table's certificate.
ABSENT_NOTES = {
    "zero": (
        "Absent combinations of the keys' levels are counts of zero: they are published as "
        "cells, suppressed like any count below h (leaving them out would reveal that they are "
        "zero)."
    ),
    "structural": (
        "Absent combinations of the keys' levels are declared structural zeros, known to "
        "everyone: they are not cells and are not published (the certificate counts them); "
        "the guarantee covers the published cells."
    ),
}


def sentence(
    alpha: float,
    h: int,
    kappa: float,
    holds: bool,
    target: float | None,
    *,
    receiver: Mapping[str, Any] | None = None,
    r: int | None = None,
) -> str:
    """The guarantee of a suppressed table in plain words: who is covered, κ with its unit,
    and one line saying what the unit means (no symbol, class name or formula).

    ``receiver`` is the Receiver model's ``describe()`` (None: the class stated by α alone);
    ``r`` the score threshold (default h): the cells whose true count is below r are the
    sensitive ones the guarantee is about.
    """
    from persuasive.report.words import kappa_text, percent, receiver_words, unit_line

    r = h if r is None else r
    by_alpha = (
        f"a Receiver whose prior for each cell puts at least {percent(alpha)} on counts below {h}"
    )
    if receiver is None or receiver.get("model") == "small_cell":
        who = by_alpha
    else:
        who = f"{receiver_words(receiver)} (more generally, {by_alpha})"
    if not math.isfinite(kappa):
        return (
            f"No guarantee (κ = ∞): against {who}, a suppressed cell can reveal that its count "
            "is small with no limit on what is learnt."
        )
    text = (
        f"Cells with a count below {h} are suppressed. Against {who}, the published table "
        f"guarantees κ = {kappa_text(kappa)} nats for every cell whose true count is below {r}: "
        + unit_line(kappa, what="the true count of such a cell", believed="such a Receiver")
        + ". Proof: Bon et al. 2026, Proposition 8."
    )
    return text + not_met(target, holds)


class TableKind:
    """:class:`~persuasive.report.kinds.Kind` of a suppressed count table."""

    name: ClassVar[str] = "table"
    needs_publication: ClassVar[bool] = False
    published: ClassVar[tuple[str, ...]] = ("released",)
    inputs: ClassVar[tuple[str, ...]] = (
        "spec.mechanism.h",
        "spec.definition.scores",
        "receiver",
        "columns",
        "target_kappa",
        "absent",
    )

    def parameters(self, claim: Mapping[str, Any]) -> TableParams:
        from persuasive.classes.receivers import receiver_from_dict

        doc = {"claim": claim}
        h = need(doc, "claim.spec.mechanism.h", int)
        scores = need(doc, "claim.spec.definition.scores", list)
        if len(scores) != 1:
            raise ValidationError(
                f"claim.spec.definition.scores: must be one score; got {scores!r:.60}"
            )
        r = need(doc, "claim.spec.definition.scores.0.r", int)
        try:
            receiver = receiver_from_dict(need(doc, "claim.receiver", dict))
        except ValidationError as exc:
            raise ValidationError(f"claim.receiver: {exc}") from None
        keys = names(doc, "claim.columns.keys")
        count = need(doc, "claim.columns.count", str)
        if not count or count in keys or ROW in (*keys, count):
            raise ValidationError(
                f"claim.columns: the count {count!r} must be a column name apart from the keys "
                f"{list(keys)}"
            )
        target = number(doc, "claim.target_kappa", optional=True)
        absent = need(doc, "claim.absent", str)
        if absent not in ABSENT_NOTES:
            raise ValidationError(
                f"claim.absent: must be 'zero' or 'structural'; got {absent!r:.60}"
            )
        return TableParams(h, r, receiver, keys, count, target, absent)

    def claim(self, p: TableParams) -> dict[str, Any]:
        alpha = p.receiver.alpha(p.h)
        return {
            "spec": {
                "mechanism": {"type": "cell_suppression", "h": p.h},
                "definition": {
                    "kind": "pp",
                    "kappa": math.inf if p.target_kappa is None else p.target_kappa,
                    "delta": 0.0,
                    "scores": [{"type": "small_cell_log", "r": p.r}],
                    "priors": {"class": "small_cell", "h": p.h, "alpha": alpha},
                },
            },
            "receiver": p.receiver.describe(),
            "columns": {"keys": list(p.keys), "count": p.count},
            "target_kappa": p.target_kappa,
            "absent": p.absent,
        }

    def certify(self, p: TableParams, publication: Publication | None = None) -> Body:
        from persuasive.certify import certify
        from persuasive.classes import SmallCellClass
        from persuasive.definitions import PersuasivePrivacy
        from persuasive.mechanisms import CellSuppression
        from persuasive.scores import SmallCellLogScore

        alpha = p.receiver.alpha(p.h)
        kappa = math.inf if p.target_kappa is None else p.target_kappa
        definition = PersuasivePrivacy(
            SmallCellLogScore(r=p.r), SmallCellClass(p.h, alpha), kappa, 0.0
        )
        cert = certify(CellSuppression(p.h), definition)
        holds = holds_of(cert)
        notes = [ABSENT_NOTES[p.absent]]
        statement = sentence(
            alpha, p.h, cert.kappa, holds, p.target_kappa, receiver=p.receiver.describe(), r=p.r
        )
        return certified(cert, statement, notes)

    def read_publication(self, p: TableParams, files: Mapping[str, Path]) -> Publication:
        """The published table as read back, in bounded memory: its statistics in one
        streamed pass (:func:`persuasive.release.stream_publication.publication_stats`: the
        cells, the suppressed cells, the first row below h or failing a count check, keys
        proved distinct as the streaming engine proves them), the rows of the problems found,
        and the digest of its rows."""
        from persuasive.files.parsing import Check
        from persuasive.files.reading import count_checks, count_expr
        from persuasive.files.table_digest import scan_published
        from persuasive.release.stream_publication import publication_stats

        name, path = one_file(files, "released")
        frame = scan_published(path, text=[*p.keys, p.count], role="published table")
        schema = frame.collect_schema()
        want = [*p.keys, p.count]
        if list(schema.names()) != want:
            return Publication(
                {name: path},
                {},
                [
                    f"publication: {name} has columns {list(schema.names())}; the certificate "
                    f"states {want}"
                ],
            )
        problems: list[str] = []
        dtype = schema[p.count]
        # Each row is reported by the first rule it fails, as a release reports its input ("x"
        # is not a count, not also a count above 2^63 - 1).
        checks, before = [], pl.lit(False)
        for c in count_checks(p.count, dtype):
            if "missing" not in c.message:
                checks.append(Check(c.column, c.message, c.fails & ~before))
                before = before | c.fails
        counts = count_expr(p.count, dtype)
        raw = frame.with_row_index(ROW)
        stats = publication_stats(frame, p.keys, p.count, p.h, checks)

        def at(row: int) -> dict[str, Any]:
            return raw.filter(pl.col(ROW) == row).collect(engine="streaming").row(0, named=True)

        if stats["below"] is not None:
            row = at(stats["below"])
            where = ", ".join(f"{k}={row[k]!r}" for k in p.keys)
            problems.append(
                f"publication: cell ({where}) shows {row[p.count]}, below h = {p.h}: a count "
                "below h must be suppressed (a suppressed cell filled back in?)"
            )
        for i, c in enumerate(checks):
            if stats[f"bad{i}"] is not None:
                row = at(stats[f"bad{i}"])
                problems.append(
                    f"publication: column {p.count!r} at row {stats[f'bad{i}'] + 1} "
                    + c.message.format(value=row[p.count])
                )
        if stats["unique"] != stats["n"]:
            problems.append(
                f"publication: {stats['n'] - stats['unique']} key(s) appear more than once"
            )
        facts = {"cells": int(stats["n"]), "suppressed": int(stats["suppressed"])}
        grid = math.prod(int(stats[f"levels{i}"]) for i in range(len(p.keys)))
        absent = grid - int(stats["n"]) if stats["unique"] == stats["n"] else 0
        if p.absent == "structural":
            facts["structural_cells"] = absent
        elif p.absent == "zero" and absent:
            problems.append(
                f"publication: {name} lacks {absent} of the {grid} combinations of its keys' "
                "levels, but the claim states that absent combinations are counts of zero "
                "(claim.absent = 'zero'): each must be published as a cell"
            )
        entry = {"name": name, "table": _digest(frame, p, counts)}
        return Publication({name: path}, facts, problems, entries={name: entry})


def _digest(frame: pl.LazyFrame, p: TableParams, counts: pl.Expr) -> dict[str, Any] | None:
    """The digest of the published table as read (keys as written, the count as Int64): the
    same whether one file or a folder of part files holds it
    (:mod:`persuasive.files.table_digest`)."""
    from persuasive.files.table_digest import digest_lazy

    try:
        return digest_lazy(frame.select(*p.keys, counts))
    except pl.exceptions.PolarsError:
        return None


KIND = TableKind()
