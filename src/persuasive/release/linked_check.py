r"""Linked tables: which families of tables may be released and audited one table at a time.

Several tables tabulated from one microdata file share variables. Table :math:`k` is the margin
:math:`X_{V_k}` of the *cover table* :math:`X` over the union :math:`V = \bigcup_k V_k` of
their variables. ``docs/linked.md`` proves that, for Receivers whose cover cells are
independent Poisson with one common mean, each table's posterior given the whole publication is
its posterior given its own publication, hence each table's certificate is the guarantee for
the joint publication, provided that

1. the family :math:`\{V_k\}` is *decomposable* (acyclic: it has a running-intersection order;
   checked by Graham's reduction, :func:`cycle`), no table inside another; and
2. for every pair of tables, the totals over their shared variables
   :math:`V_k \cap V_l` are published by **both** (each publishes a margin containing them).

This module checks both (:func:`check_linked`, one ``ValidationError`` naming the tables and
what to publish instead) and derives each table's Receiver from the cover table's
(:func:`derived_receiver`: a sum of :math:`m_k` independent Poisson(μ) cells is Poisson(m_k μ)).
It also holds the linked claim (:class:`LinkedParams`, :func:`linked_claim`, :func:`parameters`
reading a stated claim back). It is used by the release (:mod:`persuasive.release.linked`) and
by ``verify`` (:mod:`persuasive.release.linked_output`) alike.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from persuasive.errors import ValidationError

__all__ = [
    "Link",
    "LinkedParams",
    "LinkedSpec",
    "cells_per_cell",
    "check_cover_receiver",
    "check_linked",
    "cycle",
    "derived_receiver",
    "linked_claim",
    "linked_spec",
    "parameters",
    "params_of",
]

#: Why the negative-binomial Receiver is refused for linked tables (docs/linked.md).
NEGBIN_REASON = (
    "receiver: a negative-binomial Receiver is refused for linked tables: its cells are "
    "gamma-mixed Poisson, so given the totals two tables share, their cells are "
    "Dirichlet-multinomial and not independent, and one table's posterior given its own "
    "publication is not its posterior given the whole publication; state a Poisson Receiver "
    "of the cover table's cells (--poisson-mean LO:HI)"
)


@dataclass(frozen=True)
class Link:
    """Two tables and the variables they share (``shared``, in the order of the first table),
    with the published margin of each that contains them (its name: ``"a"``, ``"a+b"``,
    ``"total"``)."""

    first: int
    second: int
    shared: tuple[str, ...]
    margins: tuple[str, str]


@dataclass(frozen=True)
class LinkedSpec:
    """The tables of a linked release: names, variables, published margins (as kept-variable
    tuples and as names), and the links between every pair."""

    names: tuple[str, ...]
    keys: tuple[tuple[str, ...], ...]
    margins: tuple[tuple[tuple[str, ...], ...], ...]
    links: tuple[Link, ...]

    @property
    def variables(self) -> tuple[str, ...]:
        """The cover table's variables: every table's, in order of first appearance."""
        return tuple(dict.fromkeys(v for ks in self.keys for v in ks))

    def margin_names(self, k: int) -> tuple[str, ...]:
        return tuple(margin_name(m) for m in self.margins[k])


def margin_name(m: Sequence[str]) -> str:
    return "+".join(m) if m else "total"


def _label(spec_names: Sequence[str], keys: Sequence[Sequence[str]], k: int) -> str:
    return f"'{spec_names[k]}' ({'*'.join(keys[k])})"


def _tables(tables: Any) -> tuple[tuple[str, ...], ...]:
    if isinstance(tables, str):
        tables = [t.split("*") for t in tables.split(";")]
    ok = isinstance(tables, Sequence) and all(
        isinstance(t, Sequence) and not isinstance(t, str) for t in tables
    )
    if not ok:
        raise ValidationError(
            f"tables must be a list of tables, each a list of variables (e.g. [['a', 'b'], ['a', "
            f"'c']]) or the text 'a*b;a*c'; got {tables!r:.80}"
        )
    out = []
    for t in tables:
        ks = tuple(str(v).strip() for v in t)
        if not ks or any(not v for v in ks) or len(set(ks)) != len(ks):
            raise ValidationError(
                f"tables: each table names distinct variables, at least one; got {list(t)!r:.80}"
            )
        out.append(ks)
    if len(out) < 2:
        raise ValidationError(
            f"tables: a linked release has at least two tables; got {len(out)} (release one "
            "table with persuasive release table --margins)"
        )
    return tuple(out)


def _names(names: Any, keys: tuple[tuple[str, ...], ...]) -> tuple[str, ...]:
    if names is None:
        safe = all(re.fullmatch(r"[A-Za-z0-9_]+", v) for ks in keys for v in ks)
        names = ["-".join(ks) if safe else f"table{i + 1}" for i, ks in enumerate(keys)]
        if len({n.casefold() for n in names}) != len(names) or any(len(n) > 80 for n in names):
            names = [f"table{i + 1}" for i in range(len(keys))]
    names = tuple(str(n) for n in names)
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}", n)]
    # distinct also where the file system ignores case (macOS, Windows): one folder per table
    if len(names) != len(keys) or bad or len({n.casefold() for n in names}) != len(names):
        raise ValidationError(
            f"names: one folder name per table, distinct also ignoring case (letters, digits, "
            f"'_', '-', '.'); got {list(names)!r:.80} for {len(keys)} tables"
        )
    return names


def _margins(margins: Any, keys: tuple[tuple[str, ...], ...]) -> tuple[Any, ...]:
    from persuasive.margins import parse_margins

    if isinstance(margins, str):
        margins = margins.split(";")
    if not isinstance(margins, Sequence) or len(margins) != len(keys):
        raise ValidationError(
            f"margins: one set of published margins per table ({len(keys)} tables), e.g. "
            f"'a,b;a,c'; got {margins!r:.80}"
        )
    out = []
    for ks, m in zip(keys, margins, strict=True):
        try:
            parsed = parse_margins(m, ks)
        except ValidationError as exc:  # which table's margins, and for one variable the fix
            hint = (
                " (a one-variable table publishes only its total: 'total')" if len(ks) == 1 else ""
            )
            raise ValidationError(f"margins: table {'*'.join(ks)}: {exc}{hint}") from None
        if not parsed:
            raise ValidationError(
                f"margins: table {'*'.join(ks)} publishes no margin; got {m!r:.60} (a linked "
                "table publishes at least the totals it shares with the others)"
            )
        out.append(tuple(tuple(ks[a] for a in p) for p in parsed))
    return tuple(out)


def cycle(keys: Sequence[Sequence[str]]) -> list[int]:
    r"""The tables left by Graham's (GYO) reduction: empty when the family is decomposable.

    Repeatedly drop a variable that lies in one table only, and a table contained in another.
    A family of variable sets is acyclic (has a running-intersection order) if and only if this
    ends with at most one table (Beeri, Fagin, Maier and Yannakakis 1983).

    .. math:: \exists\,\sigma:\ V_{\sigma(j)} \cap \textstyle\bigcup_{i<j} V_{\sigma(i)}
              \subseteq V_{\sigma(p(j))},\ p(j) < j .

    Examples
    --------
    >>> cycle([["a", "b"], ["a", "c"]]), cycle([["a", "b"], ["b", "c"], ["a", "c"]])
    ([], [0, 1, 2])
    """
    edges = {i: set(ks) for i, ks in enumerate(keys)}
    changed = True
    while changed and len(edges) > 1:
        changed = False
        count = Counter(v for e in edges.values() for v in e)
        for e in edges.values():
            lone = {v for v in e if count[v] == 1}
            if lone:
                e -= lone
                changed = True
        for i in sorted(edges):
            if any(j != i and edges[i] <= edges[j] for j in edges):
                del edges[i]
                changed = True
                break
    return sorted(edges) if len(edges) > 1 else []


def check_linked(spec_names: Sequence[str], keys: Any, margins: Any) -> tuple[Link, ...]:
    """The links between every pair of tables, after checking the two conditions of the module
    docstring (a ValidationError naming the tables and what to publish instead); with
    ``margins=None`` only the first (a table listed twice or inside another, a cycle)."""
    n = len(keys)
    for k in range(n):
        for l_ in range(k + 1, n):
            if set(keys[k]) == set(keys[l_]):
                raise ValidationError(
                    f"tables: the table {'*'.join(keys[k])} is listed twice (tables {k + 1} "
                    f"and {l_ + 1}); list each table once"
                )
    for k in range(n):
        for l_ in range(n):
            if k != l_ and set(keys[k]) <= set(keys[l_]):
                raise ValidationError(
                    f"tables: table {_label(spec_names, keys, k)} lies inside table "
                    f"{_label(spec_names, keys, l_)}; publish it as a margin of "
                    f"'{spec_names[l_]}' instead"
                )
    left = cycle(keys)
    if left:
        shown = ", ".join(_label(spec_names, keys, k) for k in left)
        union = dict.fromkeys(v for k in left for v in keys[k])
        pairs = ",".join("+".join(keys[k]) for k in left)
        raise ValidationError(
            f"tables: {shown} form a cycle (no running-intersection order), so they are not "
            "independent given the totals they share and cannot be audited one at a time; "
            f"publish instead one table {'*'.join(union)} with margins {pairs}"
        )
    if margins is None:
        return ()
    links = []
    for k in range(n):
        for l_ in range(k + 1, n):
            shared = tuple(v for v in keys[k] if v in keys[l_])
            found = []
            for t in (k, l_):
                inside = [m for m in margins[t] if set(shared) <= set(m)]
                if not inside:
                    other = spec_names[l_ if t == k else k]
                    have = ", ".join(margin_name(m) for m in margins[t])
                    raise ValidationError(
                        f"margins: tables {_label(spec_names, keys, k)} and "
                        f"{_label(spec_names, keys, l_)} share {margin_name(shared)}, but "
                        f"'{spec_names[t]}' publishes no margin containing it (its margins: "
                        f"{have}); publish the margin {margin_name(shared)} in both "
                        f"'{spec_names[t]}' and '{other}'"
                    )
                found.append(margin_name(min(inside, key=lambda m: (len(m), margin_name(m)))))
            links.append(Link(k, l_, shared, (found[0], found[1])))
    return tuple(links)


def linked_spec(tables: Any, margins: Any, names: Any = None) -> LinkedSpec:
    """Parse and check the tables, their margins and their folder names (see
    :func:`check_linked`)."""
    keys = _tables(tables)
    spec_names = _names(names, keys)
    check_linked(spec_names, keys, None)  # the family first: a table inside another, a cycle
    ms = _margins(margins, keys)
    return LinkedSpec(spec_names, keys, ms, check_linked(spec_names, keys, ms))


def check_cover_receiver(receiver: Any) -> Any:
    """The cover table's Receiver: Poisson only (negative binomial: :data:`NEGBIN_REASON`)."""
    from persuasive.classes.receivers import NegativeBinomialReceiver, PoissonReceiver
    from persuasive.release.margins import check_margins_receiver

    if isinstance(receiver, NegativeBinomialReceiver):
        raise ValidationError(NEGBIN_REASON)
    check_margins_receiver(receiver)
    if not isinstance(receiver, PoissonReceiver):  # pragma: no cover - refused above
        raise ValidationError(f"receiver must be a PoissonReceiver; got {receiver!r:.60}")
    return receiver


def cells_per_cell(levels: Mapping[str, int], keys: Sequence[str]) -> int:
    r"""How many cover cells one cell of the table over ``keys`` sums:
    :math:`m_k = \prod_{v \in V \setminus V_k} d_v` (``levels``: :math:`d_v` of every variable).
    """
    return math.prod(n for v, n in levels.items() if v not in keys)


def derived_receiver(receiver: Any, m: int) -> Any:
    r"""The Receiver of a table whose cells each sum ``m`` cover cells: Poisson with the mean
    range scaled by ``m``.

    .. math:: X_c \overset{iid}{\sim} \mathrm{Poi}(\mu),\ \mu \in [\mu_-, \mu_+]
              \ \Rightarrow\ \textstyle\sum_{j=1}^{m} X_{c_j} \sim \mathrm{Poi}(m\mu),\
              m\mu \in [m\mu_-, m\mu_+] .
    """
    from persuasive.classes.receivers import PoissonReceiver

    return PoissonReceiver(m * receiver.mean_min, m * receiver.mean_max)


# ------------------------------------------------------------------------------ the claim


@dataclass(frozen=True)
class LinkedParams:
    """The parameters of a linked claim."""

    spec: LinkedSpec
    receiver: Any
    h: int
    r: int
    count: str
    target_kappa: float | None


def params_of(rel: Any) -> LinkedParams:
    return LinkedParams(rel.spec, rel.receiver, rel.h, rel.r, rel.count, rel.target_kappa)


def linked_claim(p: LinkedParams) -> dict[str, Any]:
    d = p.receiver.describe()
    from persuasive.report.certificate import canonical

    return canonical(
        {
            "receiver": d,
            "class": (
                f"cover table cells independent, each Poisson with one common mean in "
                f"[{d['mean_min']!r}, {d['mean_max']!r}]"
            ),
            "h": int(p.h),
            "r": int(p.r),
            "count": p.count,
            "target_kappa": p.target_kappa,
            "tables": [
                {"name": n, "keys": list(ks), "margins": list(p.spec.margin_names(k))}
                for k, (n, ks) in enumerate(zip(p.spec.names, p.spec.keys, strict=True))
            ],
        }
    )


def parameters(claim: Mapping[str, Any]) -> LinkedParams:
    """The parameters of a stated claim (a ValidationError naming the field)."""
    from persuasive.classes.receivers import receiver_from_dict
    from persuasive.report.kinds import need, number

    doc = {"claim": claim}
    tables = need(doc, "claim.tables", list)
    for i in range(len(tables)):
        for field in ("keys", "margins"):
            entries = need(doc, f"claim.tables.{i}.{field}", list)
            if not all(isinstance(e, str) for e in entries):
                raise ValidationError(
                    f"claim.tables.{i}.{field} must be a list of names; got {entries!r:.60}"
                )
        need(doc, f"claim.tables.{i}.name", str)
    spec = linked_spec(
        [t["keys"] for t in tables], [t["margins"] for t in tables], [t["name"] for t in tables]
    )
    stated = need(doc, "claim.receiver", dict)
    if not all(isinstance(k, str) and isinstance(v, (str, int, float)) for k, v in stated.items()):
        raise ValidationError(
            f"claim.receiver must map names to numbers or names; got {stated!r:.60}"
        )
    receiver = check_cover_receiver(receiver_from_dict(stated))
    return LinkedParams(
        spec,
        receiver,
        need(doc, "claim.h", int),
        need(doc, "claim.r", int),
        need(doc, "claim.count", str),
        number(doc, "claim.target_kappa", optional=True),
    )
