r"""What a margins certificate claims, and the sentence that states it.

:class:`MarginsParams` is the claim of a count table released with exact margins (read back
from a certificate by :mod:`persuasive.report.kinds.margins`, which recomputes everything else
from the publication); the readers of its optional parts (absent combinations, known cells,
hierarchies) and the guarantee sentence live here beside it (``docs/margins_release.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from persuasive.errors import ValidationError
from persuasive.report.kinds import need

__all__ = [
    "ABSENT_NOTES",
    "HIERARCHY_NOTE",
    "KNOWN_NOTE",
    "MarginsParams",
    "margin_words",
    "margins_sentence",
]


@dataclass(frozen=True)
class MarginsParams:
    """The parameters of a margins claim."""

    receiver: Any
    h: int
    r: int
    margins: tuple[str, ...]
    keys: tuple[str, ...]
    count: str
    target_kappa: float | None = None
    #: ``"zero"``: absent combinations are published as counts of zero; ``"structural"``: they
    #: are structural zeros, known cells of count 0 not published.
    absent: str = "zero"
    #: The key labels (strings) of the cells the Receiver knows a priori (``claim.known``).
    known: tuple[tuple[str, ...], ...] = ()
    #: The hierarchies, ``"region>district"`` (``claim.hierarchy``).
    hierarchy: tuple[str, ...] = ()
    #: How the pattern was chosen, ``(key, value)`` pairs (``claim.plan``,
    #: :mod:`persuasive.report.margins_plan`); empty without a target.
    plan: tuple[tuple[str, Any], ...] = ()
    #: The a-priori bounds ``(labels, lower, upper or None)`` (``claim.apriori``,
    #: :mod:`persuasive.report.margins_apriori`).
    apriori: tuple[tuple[tuple[str, ...], int, int | None], ...] = ()
    #: The hierarchy files the levels were built from (``claim.hierarchy_file``,
    #: :class:`persuasive.margins.hrc.HrcFile`).
    hierarchy_file: tuple[Any, ...] = ()


#: The note each treatment of absent key combinations adds to a margins certificate.
ABSENT_NOTES = {
    "zero": (
        "Absent combinations of the keys' levels are counts of zero: they are published as "
        "cells, suppressed like any count below h (leaving them out would reveal that they are "
        "zero)."
    ),
    "structural": (
        "Absent combinations of the keys' levels are declared structural zeros, known to "
        "everyone to be impossible: they are not cells, are not published, and count as known "
        "zeros in every published total; a verifier recounts them from the published table."
    ),
}
#: The note of a claim with a hierarchy.
HIERARCHY_NOTE = (
    "The keys form a hierarchy (each lower level in exactly one upper level): the combinations "
    "that do not nest are structural zeros, not published, and the published totals by the "
    "upper levels are the subtotals of the hierarchy."
)
#: The note of a claim with cells the Receiver knows a priori.
KNOWN_NOTE = (
    "{n} published cells are stated to be known to the Receiver before the release (listed in "
    "the claim): they are never suppressed, their counts are published even below h, and the "
    "posterior treats them as published values. The guarantee does not cover a Receiver who "
    "would not know them."
)


def _absent(claim: Mapping[str, Any]) -> str:
    """``claim.absent``: ``"zero"`` or ``"structural"``."""
    value = need({"claim": claim}, "claim.absent", str)
    if value not in ABSENT_NOTES:
        raise ValidationError(
            f"claim.absent: must be 'zero' (absent combinations are counts of zero) or "
            f"'structural' (structural zeros, not published); got {value!r:.60}"
        )
    return value


def _known(claim: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """``claim.known`` (optional): a sorted list of distinct key-label lists (strings)."""
    raw = claim.get("known", [])
    ok = isinstance(raw, list) and all(
        isinstance(c, list) and len(c) == len(keys) and all(isinstance(s, str) for s in c)
        for c in raw
    )
    if not ok:
        raise ValidationError(
            f"claim.known: must be a list of known cells, each the list of its {len(keys)} key "
            "labels (strings)"
        )
    cells = tuple(tuple(c) for c in raw)
    if list(cells) != sorted(set(cells)) or (not cells and "known" in claim):
        raise ValidationError("claim.known: must be sorted, each cell once, and not empty")
    return cells


def _hierarchy(claim: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, ...]:
    """``claim.hierarchy`` (optional): the chains ``"region>district"``, checked against keys."""
    from persuasive.margins.hierarchy import hierarchy_names, parse_hierarchy

    raw = claim.get("hierarchy", [])
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise ValidationError("claim.hierarchy: must be a list of strings such as 'a>b'")
    if not raw and "hierarchy" in claim:
        raise ValidationError("claim.hierarchy: must not be empty (leave it out instead)")
    try:
        chains = parse_hierarchy(raw, keys)
    except ValidationError as exc:
        raise ValidationError(f"claim.hierarchy: {exc}") from None
    return tuple(hierarchy_names(chains))


def margin_words(names: tuple[str, ...] | list[str]) -> str:
    """The published margins in words: ``religious`` → "the totals by religious", ``a+b`` →
    "by a and b", ``total`` → "the grand total"."""
    parts = [
        "the grand total" if m == "total" else "the totals by " + " and ".join(m.split("+"))
        for m in names
    ]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def margins_sentence(p: MarginsParams, kappa: float, *, certified: bool, disclosed: int) -> str:
    """The guarantee of a table with margins in plain words: who is covered, κ with its unit,
    and one line saying what the unit means (no symbol, class name or formula)."""
    from persuasive.report.words import kappa_text, plural, receiver_words, unit_line

    if not certified:
        return (
            "No guarantee: for some suppressed cells the exact computation was too large, and "
            "their κ is only a random-sampling estimate, not a proof."
        )
    who = (
        f"{receiver_words(p.receiver.describe())}, the cells independent, and the cell means "
        "free to vary as a log-linear model of the published margins (with row and column "
        "totals, for example: each cell's mean a row factor times a column factor)"
    )
    shown = (
        f"; {plural(disclosed, 'suppressed cell')} {'is' if disclosed == 1 else 'are'} "
        "nevertheless disclosed by the margins, and κ accounts for it"
        if disclosed
        else ""
    )
    known = (
        f", except {plural(len(p.known), 'cell')} the Receiver already knows, published as they are"
        if p.known
        else ""
    )
    if p.apriori:
        who += f", who also knows the a-priori bounds of {plural(len(p.apriori), 'cell')}"
    return (
        f"Cells with a count below {p.h} are suppressed{known} (and, where needed, other cells "
        "too), "
        f"and {margin_words(p.margins)} are published exactly. Against {who}, the publication "
        f"guarantees κ = {kappa_text(kappa)} nats for every suppressed cell whose true count is "
        f"below {p.r}, whichever table consistent with the publication is the true one{shown}: "
        + unit_line(kappa, what="the true count of such a cell", believed="such a Receiver")
        + "."
    )
