r"""The publication of linked tables: its folder, its ``certificate.json``, and its verification.

The folder holds each table's release folder under the table's name (``released``, ``margins``,
``certificate.json``, the custodian's files) and one ``certificate.json`` of kind ``linked``:

* ``claim``: the Receiver of the cover table's cells, h, r, the target κ, the count column and
  the tables (name, variables, published margins) — nothing from the data;
* ``publication``: every published file's SHA-256 (the tables' published files and
  certificates), each table's certificate digest, its derived Receiver (the cover range scaled by
  the number :math:`m_k` of cover cells per table cell, recounted from the published levels),
  the levels, the totals every pair of tables shares (read from each table's published margins:
  they must be the same numbers) and the condition checked;
* ``guarantee``: holds when every table's certificate holds; κ is the largest table's κ.

:func:`linked_document` computes all of it from the folder, for the release and for
``persuasive verify`` (:func:`verify_linked`) alike, which also re-verifies each table's
certificate against its files and checks that each table's claim is the one the linked claim
derives. ``docs/linked.md`` states the lemma that makes each table's certificate the guarantee
for the joint publication.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from persuasive.errors import PersuasiveError, ValidationError
from persuasive.release.linked_check import (
    LinkedParams,
    cells_per_cell,
    derived_receiver,
    linked_claim,
    parameters,
    params_of,
)
from persuasive.report import certificate as cd
from persuasive.report.words import unit_line

__all__ = [
    "guarantee_of",
    "linked_document",
    "publish_linked",
    "verify_linked",
]

BASIS = (
    "Prop 8 with published margins, table by table (Bon et al. 2026); linked tables "
    "conditionally independent given their shared totals (persuasive extension, docs/linked.md)"
)
CONDITION = (
    "decomposable family of tables (a running-intersection order exists, no table inside "
    "another); every pair of tables publishes the totals over the variables it shares"
)
NOTES = (
    "The Receiver's class is stated for the cover table (every combination of the levels of "
    "all the tables' variables): independent Poisson cells with one common mean. Each table's "
    "cells are then independent Poisson with the mean range multiplied by the number of cover "
    "cells a table cell sums (publication.tables[].cover_cells_per_cell); each table's "
    "certificate states that derived Receiver.",
    "Given the totals two tables share, the records' classifications on their other variables "
    "are independent, so each table's posterior given the whole publication equals its "
    "posterior given its own publication: each table's per-cell κ holds for the joint "
    "publication (docs/linked.md).",
    "The guarantee covers the cells of the published tables; a combination of the cover table "
    "is not a published cell and is not claimed.",
)


def guarantee_of(p: Any, table_guarantees: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The publication's guarantee from each table's: holds when all hold, κ the largest."""
    holds = all(bool(g["holds"]) for g in table_guarantees)
    kappa = max(float(g["kappa"]) for g in table_guarantees)
    d = p.receiver.describe()
    names = ", ".join(p.spec.names)
    n = len(table_guarantees)
    head = (
        f"In each of the {n} linked tables ({names}) cells with a count below {p.h} are "
        "suppressed (and, where needed, other cells too) and the totals are published. Against "
        f"a Receiver whose prior for each cell of the cover table ({' × '.join(p.spec.variables)}"
        f") is Poisson with one common mean between {d['mean_min']:g} and {d['mean_max']:g}, "
        "the cells independent, "
    )
    if holds:
        what = "the true count of such a cell"
        statement = (
            head + f"the publication guarantees κ = {kappa:.4g} nats for every suppressed cell "
            f"whose true count is below {p.r}, in every table, given all the tables together: "
            f"{unit_line(kappa, what=what, believed='such a Receiver')}. Each table's "
            "certificate holds, and given the totals they share the tables are independent "
            "(docs/linked.md)."
        )
    else:
        statement = head + f"the linked tables ({names}) are NOT all certified: no guarantee."
    return {
        "holds": holds,
        "kappa": kappa,
        "delta": max(float(g["delta"]) for g in table_guarantees),
        "exact": all(bool(g["exact"]) for g in table_guarantees),
        "basis": BASIS,
        "statement": statement,
    }


# ------------------------------------------------------------------------------ the folder


def _table_files(folder: Path) -> dict[str, Path]:
    from persuasive.report.verify import locate_publication

    files = locate_publication(("released", "margins"), folder)
    return {**files, "certificate.json": folder / "certificate.json"}


def _text(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.all().cast(pl.String))


def _levels(
    p: LinkedParams, released: list[pl.DataFrame | None], problems: list[str]
) -> dict[str, int]:
    seen: dict[str, tuple[str, set[str]]] = {}
    for name, ks, frame in zip(p.spec.names, p.spec.keys, released, strict=True):
        if frame is None:  # unreadable: already a problem
            continue
        for v in ks:
            if v not in frame.columns:
                problems.append(f"publication: table '{name}' has no column {v!r}")
                continue
            labels = set(frame.get_column(v).drop_nulls().to_list())
            if v in seen and seen[v][1] != labels:
                problems.append(
                    f"publication: variable {v!r} has {len(labels)} levels in table '{name}' but "
                    f"{len(seen[v][1])} in table '{seen[v][0]}': linked tables show the same levels"
                )
            seen.setdefault(v, (name, labels))
    return {v: len(seen[v][1]) if v in seen else 0 for v in p.spec.variables}


def _dict(value: Any) -> dict[str, Any]:
    """A field that should be an object, or an empty one (a wrong type is a mismatch the
    table's own verification names)."""
    return value if isinstance(value, dict) else {}


def _is_guarantee(g: Mapping[str, Any]) -> bool:
    """A guarantee section whose fields have the types :func:`guarantee_of` reads."""
    try:
        float(g["kappa"]), float(g["delta"])
    except (KeyError, TypeError, ValueError):
        return False
    return isinstance(g.get("holds"), bool) and isinstance(g.get("exact"), bool)


def _shared(margins: pl.DataFrame, name: str, shared: tuple[str, ...]) -> list[list[Any]]:
    rows = margins.filter(pl.col("margin") == name)
    total = pl.col("total").cast(pl.Int64).sum()
    if not shared:
        return [[int(rows.select(total).item() or 0)]]
    out = rows.group_by(list(shared)).agg(total).sort(list(shared))
    return [list(r) for r in out.rows()]


def linked_document(
    p: LinkedParams, folder: Path, *, version: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The linked certificate of the folder ``folder`` (each table's folder under its name),
    and the problems found: a table's certificate that does not verify, a table's claim that is
    not the derived one, levels or shared totals that differ between tables."""
    from persuasive.report.kinds import file_facts
    from persuasive.report.margins_certificate import read_frame
    from persuasive.report.verify import verify_certificate

    problems: list[str] = []
    present = [name for name in p.spec.names if (folder / name / "certificate.json").is_file()]
    if not present:
        raise ValidationError(
            f"--published: '{folder}' holds none of the tables' folders "
            f"({', '.join(p.spec.names)}), each with its certificate.json; pass the linked "
            "release folder: persuasive verify CERT.json --published DIR"
        )
    docs: list[dict[str, Any]] = []
    released: list[pl.DataFrame | None] = []
    margins: list[pl.DataFrame | None] = []
    facts: list[dict[str, Any]] = []
    for name in p.spec.names:
        sub = folder / name
        try:  # a table missing or unreadable: the publication fails its check (exit 1)
            if name not in present:
                raise ValidationError(f"the folder '{sub}' has no certificate.json")
            files = _table_files(sub)
            check = verify_certificate(sub / "certificate.json", published=sub)
            doc, _ = cd.loads((sub / "certificate.json").read_text(encoding="utf-8"), source=name)
            stems = {Path(n).stem: path for n, path in files.items()}
            frames = (_text(read_frame(stems["released"])), _text(read_frame(stems["margins"])))
        except PersuasiveError as exc:
            problems.append(f"tables[{name}]: {' '.join(str(exc).split())}")
            docs.append({})
            released.append(None)
            margins.append(None)
            continue
        facts += [file_facts(f"{name}/{n}", path) for n, path in sorted(files.items())]
        if not check.ok:
            why = check.mismatches or (f"claims no guarantee: {check.statement}",)
            problems += [f"tables[{name}]: {m}" for m in why]
        docs.append(doc)
        released.append(frames[0])
        margins.append(frames[1])
    levels = _levels(p, released, problems)
    # a table that could not be read is one problem already: its claim is not compared, nor
    # the Receivers derived from levels that table alone shows
    unread = {"receiver"} if any(n == 0 for n in levels.values()) else set()
    tables = []
    for k, (name, doc) in enumerate(zip(p.spec.names, docs, strict=True)):
        m = cells_per_cell(levels, p.spec.keys[k])
        want = {
            "receiver": derived_receiver(p.receiver, m).describe(),
            "h": p.h,
            "r": p.r,
            "margins": sorted(p.spec.margin_names(k)),
            "keys": list(p.spec.keys[k]),
            "count": p.count,
            "target_kappa": p.target_kappa,
        }
        claim = _dict(doc.get("claim"))
        cols = _dict(claim.get("columns"))
        stated = claim.get("margins")
        got = {
            **{f: claim.get(f) for f in ("receiver", "h", "r", "target_kappa")},
            "margins": sorted(map(str, stated)) if isinstance(stated, list) else stated,
            "keys": cols.get("keys"),
            "count": cols.get("count"),
        }
        problems += [
            f"tables[{name}].claim.{f}: stated {got[f]!r:.80}, the linked claim derives "
            f"{want[f]!r:.80}"
            for f in want
            if released[k] is not None
            and f not in unread
            and cd.canonical(got[f]) != cd.canonical(want[f])
        ]
        g = _dict(doc.get("guarantee"))
        tables.append(
            {
                "name": name,
                "certificate_digest": doc.get("digest"),
                "receiver": want["receiver"],
                "cover_cells_per_cell": m,
                "kappa": g.get("kappa"),
                "holds": g.get("holds"),
            }
        )
    shared = []
    for link in p.spec.links:
        a, b = link.first, link.second
        names = (p.spec.names[a], p.spec.names[b])
        try:
            totals = [
                [] if frame is None else _shared(frame, link.margins[i], link.shared)
                for i, frame in enumerate((margins[a], margins[b]))
            ]
        except pl.exceptions.PolarsError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            problems.append(
                f"publication: the totals '{names[0]}' and '{names[1]}' share cannot be read "
                f"from their margins files: {first}"
            )
            totals = [[], []]
        if totals[0] != totals[1] and all(margins[t] is not None for t in (a, b)):
            problems.append(
                f"publication: the totals over {'+'.join(link.shared) or 'total'} published by "
                f"'{names[0]}' ({link.margins[0]}) and '{names[1]}' ({link.margins[1]}) differ: "
                "linked tables publish the same shared totals"
            )
        shared.append(
            {
                "tables": list(names),
                "variables": list(link.shared),
                "margins": list(link.margins),
                "totals": totals[0],
            }
        )
    gs = [_dict(d.get("guarantee")) for d in docs]
    ok = all(_is_guarantee(g) for g in gs)
    guarantee = (
        guarantee_of(p, gs)
        if ok
        else guarantee_of(p, [{"holds": False, "kappa": "inf", "delta": 0, "exact": False}])
    )
    publication = {
        "files": sorted(facts, key=lambda f: f["name"]),
        "tables": tables,
        "levels": levels,
        "shared": shared,
        "condition": CONDITION,
    }
    doc = cd.envelope(
        "linked", linked_claim(p), guarantee, list(NOTES), publication, version=version
    )
    return doc, problems


def publish_linked(
    rel: Any, out: Any, *, table_format: str = "csv", report: bool = False, on_step: Any = None
) -> tuple[dict[str, Any], dict[str, Path]]:
    """Write the publication into its output folder (:class:`persuasive.files.output
    .OutputFolder`: private, renamed into place at the end, nothing left when anything fails):
    each table with :func:`persuasive.release.pipeline.write_release`, then the linked
    certificate, verified before the folder appears."""
    from persuasive.files.output import relocate
    from persuasive.release.pipeline import InternalError, write_release

    if rel.refused:
        raise ValidationError(f"nothing to publish: {rel.statement()}")
    p = params_of(rel)
    with out as tmp:
        files: dict[str, Path] = {}
        for name, sub in zip(p.spec.names, rel.releases, strict=True):
            _, written = write_release(
                sub,
                tmp / name,
                table_format=table_format,
                report=report,
                target_kappa=p.target_kappa,
                on_step=on_step,
            )
            files.update({f"{name}/{role}": path for role, path in written.items()})
        doc, problems = linked_document(p, tmp)
        if problems:
            raise InternalError("the linked publication fails its checks: " + "; ".join(problems))
        (tmp / "certificate.json").write_text(cd.dumps(doc), encoding="utf-8")
        files["certificate"] = tmp / "certificate.json"
        check = verify_linked(doc, tmp)
        if not check.consistent:
            raise InternalError(
                "the linked certificate does not verify: " + "; ".join(check.mismatches)
            )
        final = relocate(files, tmp, out.path)
    return doc, final


def verify_linked(doc: Mapping[str, Any], folder: Any, twice: Any = ()) -> Any:
    """Re-derive a linked certificate from its folder (:class:`persuasive.report.verify
    .Verification`): every table's certificate re-verified against its files, each table's claim
    the derived one, the shared totals equal numbers, every other field recomputed exactly."""
    from persuasive.report.verification import Verification

    if folder is None:
        raise ValidationError(
            "a linked certificate is recomputed from its publication: pass the release folder, "
            "e.g. persuasive verify DIR/certificate.json --published DIR"
        )
    items = [folder] if isinstance(folder, (str, Path)) else list(folder)
    if len(items) != 1 or not Path(items[0]).is_dir():
        raise ValidationError(
            f"--published: a linked certificate is checked against its release folder (one "
            f"folder holding each table's folder); got {[str(i) for i in items]}"
        )
    version = (
        doc.get("library", {}).get("version") if isinstance(doc.get("library"), dict) else None
    )
    claim = doc.get("claim")
    try:
        p = parameters(claim if isinstance(claim, dict) else {})
    except PersuasiveError as exc:
        lines = (f"claim: cannot be read: {' '.join(str(exc).split())}",)
        return Verification(False, False, False, lines, kind="linked")
    want, problems = linked_document(p, Path(items[0]), version=str(version))
    out = [f"{k}: the key appears twice; a reader would see only the last value" for k in twice]
    out += problems
    out += cd.diff(
        {k: v for k, v in doc.items() if k != "digest"},
        {k: v for k, v in want.items() if k != "digest"},
    )
    if doc.get("digest") != cd.digest_of(doc):
        out.append(
            "digest: the document was edited after it was written; unless a mismatch above "
            "explains it, the claim (the Receiver, h, r, the tables) was"
        )
    claims = bool(want["guarantee"]["holds"])
    return Verification(
        ok=not out and claims,
        consistent=not out,
        claims=claims,
        mismatches=tuple(out),
        statement=str(want["guarantee"]["statement"]),
        kind="linked",
        published_checked=True,
        recomputed=want,
    )
