r"""Hierarchy files in the style of τ-Argus ``.hrc``: the levels of a classification from a file.

A ``.hrc`` file (the hierarchical code list of τ-Argus, read and written by the R packages
sdcTable and sdcHierarchies) lists one code a line. The depth of a code is the number of
leading ``@`` characters (the *leading string*, ``@`` unless another is given): no ``@`` is the
top level, just below the grand total; ``@`` one level deeper; and so on. The parent of a code
is the nearest code above it one level up, so a code can be at most one level deeper than the
code before it::

    North
    @N1
    @N2
    South
    @S1

Blank lines are skipped, spaces around a line are not part of the code, spaces inside a code
are (``New York`` is one code), a UTF-8 byte-order mark is skipped. The grand total is not
written in the file.

The file's *leaves* (codes without sub-codes) are the values of one key column of the data
(``district``); every coarser level becomes one more key column (``region``), built here from
the file, and the release then goes the one-column-per-level way of
:mod:`persuasive.margins.hierarchy` (``docs/margins_release.md``, "Hierarchies"). A leaf above
the deepest level (a region without districts) is its own code at every level below it. A
leaf absent from the data is an absent combination (a count of zero, or a structural zero
with ``absent="structural"``); a data value that is not a leaf of the file is an error.

The certificate records the file's SHA-256 and its parsed structure (``claim.hierarchy_file``),
so that a verifier checks the published level columns against it without the file
(:mod:`persuasive.margins.hrc_claim`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from persuasive.errors import ValidationError

__all__ = ["HrcFile", "add_levels", "all_keys", "build", "load_specs", "parse_codes", "read_hrc"]

#: The leading string of τ-Argus: one per level below the top.
LEAD = "@"


@dataclass(frozen=True)
class HrcFile:
    """A parsed hierarchy file: its codes in file order with their depths, the level columns
    (outermost first, the data's key column last), the file's name and SHA-256."""

    codes: tuple[tuple[int, str], ...]
    levels: tuple[str, ...]
    name: str
    sha256: str
    lead: str = LEAD
    #: How the errors name the input: ``"hierarchy_file"`` or ``"--hierarchy-file"``.
    option: str = "hierarchy_file"
    #: The item as given, ``group>occupation=regions.hrc`` (for the errors).
    given: str = field(default="", compare=False)

    @property
    def column(self) -> str:
        """The data's key column: the finest level."""
        return self.levels[-1]

    @property
    def where(self) -> str:
        """How an error names the file: ``--hierarchy-file group>occupation=FILE``."""
        return f"{self.option} {self.given or f'{self.column}={self.name}'}"

    def parents(self) -> dict[str, str | None]:
        """Each code's parent (None at the top level)."""
        out: dict[str, str | None] = {}
        stack: list[str] = []
        for depth, code in self.codes:
            del stack[depth:]
            out[code] = stack[-1] if stack else None
            stack.append(code)
        return out

    def leaves(self) -> list[str]:
        """The codes without sub-codes, in file order."""
        parent = self.parents()
        inner = {p for p in parent.values() if p is not None}
        return [c for _, c in self.codes if c not in inner]

    def paths(self) -> dict[str, tuple[str, ...]]:
        """Each leaf's code at every level, outermost first (a leaf above the deepest level
        repeated below its depth), the leaf last."""
        parent, n = self.parents(), len(self.levels)
        out = {}
        for leaf in self.leaves():
            chain = [leaf]
            while (up := parent[chain[-1]]) is not None:
                chain.append(up)
            chain.reverse()
            out[leaf] = tuple(chain + [leaf] * (n - len(chain)))
        return out


def parse_codes(text: str, where: str, lead: str = LEAD) -> tuple[tuple[int, str], ...]:
    """The ``(depth, code)`` of each non-blank line, checked (a ValidationError names the line).

    Examples
    --------
    >>> parse_codes("A\\n@a1\\n\\n@a2\\nB\\n", "f")
    ((0, 'A'), (1, 'a1'), (1, 'a2'), (0, 'B'))
    """
    if not lead or lead != lead.strip():
        raise ValidationError(
            f"{where}: the leading string must be one or more non-blank characters (τ-Argus: "
            f"'@'); got {lead!r:.20}"
        )
    out: list[tuple[int, str]] = []
    first: dict[str, int] = {}
    previous = -1
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        depth = 0
        while line.startswith(lead, depth * len(lead)):
            depth += 1
        code = line[depth * len(lead) :].strip()
        shown = f"line {number} {raw.rstrip()!r:.60}"
        if not code:
            raise ValidationError(f"{where}: {shown}: no code after the {lead!r}")
        if previous < 0 < depth:
            raise ValidationError(
                f"{where}: {shown} is {depth} levels deep but is the first code; the first "
                f"code must be at the top level (no {lead!r})"
            )
        if depth > previous + 1:
            raise ValidationError(
                f"{where}: {shown} is {depth} levels deep after a code {previous} levels deep; "
                f"a code may be at most one level (one {lead!r}) deeper than the code before it"
            )
        if code in first:
            raise ValidationError(
                f"{where}: {shown}: the code {code!r} is listed twice (first on line "
                f"{first[code]}); each code may appear once"
            )
        first[code] = number
        out.append((depth, code))
        previous = depth
    if not out:
        raise ValidationError(
            f"{where}: the file has no codes; write one code a line, with one {lead!r} before "
            "it for each level below the top"
        )
    return tuple(out)


def read_hrc(
    path: str | os.PathLike[str],
    column: str,
    names: Sequence[str] = (),
    *,
    lead: str = LEAD,
    option: str = "hierarchy_file",
) -> HrcFile:
    """Read and parse a ``.hrc`` file for the key ``column``. ``names`` are the coarser levels'
    columns, outermost first (default ``column_1``, ``column_2``, …)."""
    p = Path(path)
    given = f"{'>'.join([*names, column])}={path}"
    where = f"{option} {given}"
    if not isinstance(lead, str):
        raise ValidationError(f"{where}: the leading string must be text, such as '@'")
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ValidationError(f"{where}: no such file {str(p)!r}") from None
    except OSError as exc:
        raise ValidationError(f"{where}: cannot read {str(p)!r}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1].hex()
        line = raw[: exc.start].count(b"\n") + 1
        raise ValidationError(
            f"{where}: the file is not UTF-8 text (byte 0x{bad} on line {line}); save it as UTF-8"
        ) from None
    codes = parse_codes(text, where, lead)
    sha = hashlib.sha256(raw).hexdigest()
    return replace(build(codes, column, names, p.name, sha, lead, option), given=given)


def build(
    codes: tuple[tuple[int, str], ...],
    column: str,
    names: Sequence[str],
    name: str,
    sha: str,
    lead: str,
    option: str,
) -> HrcFile:
    """The :class:`HrcFile` of parsed ``codes``: the coarser levels named ``names`` (one per
    level above the deepest), or ``column_1``, ``column_2``, … without names."""
    deepest = max(d for d, _ in codes)
    coarse = tuple(names) or tuple(f"{column}_{j}" for j in range(1, deepest + 1))
    if len(coarse) != deepest:
        raise ValidationError(
            f"{option} {'>'.join([*names, column])}={name}: the file has {deepest + 1} levels "
            f"below the grand total, so name {deepest + 1} columns, outermost first (or name "
            f"only {column!r}: the coarser levels are then {column}_1, {column}_2, …)"
        )
    return HrcFile(codes, (*coarse, column), name, sha, lead, option)


def load_specs(
    spec: Any, keys: Sequence[str], *, lead: str = LEAD, option: str = "hierarchy_file"
) -> tuple[HrcFile, ...]:
    """Read the files of ``{"district": "regions.hrc"}`` (or ``{"region>district": …}``, or the
    text ``"district=regions.hrc,age=ages.hrc"``); parsed files are passed through.

    The key of each entry is the data's key column, alone or after the coarser levels' names
    joined by ``>``; it must be one of ``keys``."""
    if spec is None or spec == "" or spec == {} or spec == ():
        return ()
    if isinstance(spec, HrcFile):
        return (spec,)
    if isinstance(spec, str):
        items: list[tuple[Any, Any]] = []
        for part in (s.strip() for s in spec.split(",")):
            if not part:
                continue
            column, eq, path = part.partition("=")
            if not eq or not column.strip() or not path.strip():
                raise ValidationError(
                    f"{option}: write COLUMN=FILE (e.g. district=regions.hrc, several separated "
                    f"by commas); got {part!r:.60}"
                )
            items.append((column.strip(), path.strip()))
    elif isinstance(spec, Mapping):
        items = list(spec.items())
    elif isinstance(spec, Sequence) and all(isinstance(s, HrcFile) for s in spec):
        return tuple(spec)
    else:
        raise ValidationError(
            f"{option} must map a key column to a .hrc file, e.g. {{'district': 'regions.hrc'}}"
            f"; got {spec!r:.60}"
        )
    out = []
    for column, path in items:
        chain = [t.strip() for t in str(column).split(">")]
        if not chain[-1] or any(not t for t in chain):
            raise ValidationError(
                f"{option}: {column!r:.40} must name a key column (or the levels, outermost "
                "first, joined by '>': region>district)"
            )
        if chain[-1] not in keys:
            raise ValidationError(
                f"{option} {column}={path}: {chain[-1]!r} is not a key; the keys are {list(keys)}"
            )
        out.append(read_hrc(path, chain[-1], chain[:-1], lead=lead, option=option))
    return tuple(out)


def all_keys(keys: Sequence[str], files: Sequence[HrcFile], names: Sequence[str]) -> list[str]:
    """The keys with each file's coarser levels inserted before its column (those already in
    ``keys`` kept where they are); ``names`` are the data's columns, which a built level may
    not be."""
    out = list(keys)
    for f in files:
        for level in f.levels[:-1]:
            if level in names:
                raise ValidationError(
                    f"{f.where}: the level {level!r} built from the file is already a column of "
                    "the data; drop or rename that column, or name the levels "
                    f"(e.g. {f.option} region>{f.column}={f.name})"
                )
        for level in f.levels[:-1]:
            if level not in out:
                out.insert(out.index(f.column), level)
    return out


def add_levels(
    cells: pl.DataFrame,
    files: Sequence[HrcFile],
    keys: Sequence[str],
    count: str,
    absent: str,
) -> pl.DataFrame:
    """The cells with each file's coarser level columns (text), the file's column as text.

    With ``absent="zero"`` a leaf absent from the data is added as a count of zero (the grid
    of the other keys is filled by :func:`persuasive.margins.hierarchy.fill_hierarchy`)."""
    for f in files:
        paths = f.paths()
        values = cells.get_column(f.column).cast(pl.String)
        seen = set(values.unique().to_list())
        parent = f.parents()
        for v in sorted(seen, key=str):
            if v in paths:
                continue
            if v in parent:
                raise ValidationError(
                    f"{f.where}: {f.column} {v!r} in the data is a code with sub-codes in the "
                    f"file; {f.column} must hold the finest codes (the leaves) only: a subtotal "
                    "is published as a margin, not given as a cell"
                )
            raise ValidationError(
                f"{f.where}: {f.column} {v!r} in the data is not a code of the file; each "
                f"value of {f.column} must be a leaf of {f.name} (add it under its parent)"
            )
        cells = cells.with_columns(values.alias(f.column))
        if absent == "zero":
            missing = [leaf for leaf in paths if leaf not in seen]
            if missing and cells.height:
                first = cells.row(0, named=True)
                extra = pl.DataFrame(
                    {
                        k: [leaf if k == f.column else first[k] for leaf in missing]
                        for k in cells.columns
                        if k != count
                    },
                    schema={k: t for k, t in cells.schema.items() if k != count},
                ).with_columns(pl.lit(0, dtype=cells.schema[count]).alias(count))
                cells = pl.concat([cells, extra.select(cells.columns)], how="vertical")
        table = pl.DataFrame(
            {lv: [p[j] for p in paths.values()] for j, lv in enumerate(f.levels)},
            schema=dict.fromkeys(f.levels, pl.String),
        )
        cells = cells.join(table, on=f.column, how="left", maintain_order="left")
    return cells.select(*keys, count)
