"""The record of a hierarchy file in a margins certificate: ``claim.hierarchy_file``.

Each file the levels were built from (:mod:`persuasive.margins.hrc`) is recorded by its name,
SHA-256, leading string, levels and codes (``[depth, code]`` in file order), so that
``persuasive verify`` checks the published level columns against the file's structure without
the file (``docs/margins_release.md``, "Hierarchies"). Anyone holding the file can compare its
SHA-256 (``sha256sum regions.hrc``) with the recorded one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from persuasive.errors import ValidationError
from persuasive.margins.hrc import HrcFile, build, parse_codes

__all__ = ["hrc_claim", "hrc_problems", "read_claim"]


def hrc_claim(files: Sequence[HrcFile]) -> dict[str, Any]:
    """``claim.hierarchy_file``: each file's name, SHA-256, leading string, levels and codes
    (``[depth, code]`` in file order); empty without a file."""
    if not files:
        return {}
    return {
        "hierarchy_file": [
            {
                "file": f.name,
                "sha256": f.sha256,
                "lead": f.lead,
                "levels": list(f.levels),
                "codes": [[d, c] for d, c in f.codes],
            }
            for f in files
        ]
    }


def read_claim(claim: Mapping[str, Any], hierarchy: Sequence[str]) -> tuple[HrcFile, ...]:
    """``claim.hierarchy_file`` (optional), parsed and checked as a file is, each file's levels
    one of the claim's hierarchies."""
    raw = claim.get("hierarchy_file")
    if raw is None:
        return ()
    what = "claim.hierarchy_file"
    if not isinstance(raw, list) or not raw:
        raise ValidationError(f"{what}: must be a non-empty list of files")
    out = []
    for i, e in enumerate(raw):
        ok = (
            isinstance(e, dict)
            and set(e) == {"file", "sha256", "lead", "levels", "codes"}
            and all(isinstance(e[k], str) and e[k] for k in ("file", "sha256", "lead"))
            and re.fullmatch("[0-9a-f]{64}", e["sha256"]) is not None
            and isinstance(e["levels"], list)
            and all(isinstance(s, str) for s in e["levels"])
            and isinstance(e["codes"], list)
            and all(
                isinstance(c, list)
                and len(c) == 2
                and type(c[0]) is int
                and c[0] >= 0
                and isinstance(c[1], str)
                for c in e["codes"]
            )
        )
        if not ok:
            raise ValidationError(
                f"{what}[{i}]: must have file, sha256, lead (strings), levels (names) and codes "
                "(a list of [depth, code])"
            )
        lead = e["lead"]
        text = "\n".join(lead * d + c for d, c in e["codes"])
        codes = parse_codes(text, f"{what}[{i}]", lead)
        if [list(c) for c in codes] != e["codes"] or len(e["levels"]) < 2:
            raise ValidationError(f"{what}[{i}]: codes are not as a file is parsed")
        f = build(codes, e["levels"][-1], e["levels"][:-1], e["file"], e["sha256"], lead, what)
        if ">".join(f.levels) not in hierarchy:
            raise ValidationError(
                f"{what}[{i}]: its levels {'>'.join(f.levels)} are not one of claim.hierarchy"
            )
        out.append(f)
    return tuple(out)


def hrc_problems(files: Sequence[HrcFile], cells: pl.DataFrame, absent: str) -> list[str]:
    """The published rows whose levels differ from the recorded file's, and, with
    ``absent="zero"``, its leaves not published (one line each)."""
    out = []
    for f in files:
        paths = f.paths()
        table = cells.select(list(f.levels)).cast(pl.String).unique()
        for row in table.sort(list(f.levels)).iter_rows():
            if paths.get(row[-1]) != row:
                out.append(
                    f"publication: {'>'.join(f.levels)} {' > '.join(map(repr, row))} is not as "
                    f"the hierarchy file {f.name} recorded in claim.hierarchy_file has it "
                    f"({' > '.join(map(repr, paths.get(row[-1], ())) or 'not a leaf')})"
                )
                break
        if absent == "zero":
            gone = sorted(set(paths) - set(table[f.column].to_list()))
            if gone:
                out.append(
                    f"publication: {len(gone)} leaves of the hierarchy file {f.name} are not "
                    f"published (first {gone[0]!r}), but absent combinations are counts of "
                    "zero (claim.absent = 'zero')"
                )
    return out
