r"""``persuasive verify``: re-derive a certificate and say exactly what it claims.

:func:`verify_certificate` reads a certificate strictly
(:func:`persuasive.report.certificate.loads`),
reads the parameters of its claim, recomputes **every** field from them by the code of its kind
(:mod:`persuasive.report.kinds`) — the canonical claim, the guarantee, the notes, any
kind-specific section, and, when the publication is given, the publication section and the
checks a publication must pass — and compares the stated document with the recomputed one
field by field, exactly. ``library.version`` and the claim's inputs (each kind's ``inputs``:
nothing else states them) are not recomputed; they are bound, like everything else, by the
document's ``digest``, and a failed digest names them.

The outcome (:class:`Verification`) separates two questions: whether the certificate is
**consistent** (nothing edited: no mismatch) and whether it **claims a guarantee** that holds
(``guarantee.holds``). Only a consistent certificate that claims a guarantee is *verified*.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from persuasive._progress import task
from persuasive.errors import PersuasiveError, ValidationError
from persuasive.report import certificate as cd
from persuasive.report.kinds import Publication, kind_of, leaves

__all__ = [
    "Verification",
    "locate_publication",
    "publication_beside",
    "recompute",
    "verify_certificate",
]


@dataclass(frozen=True)
class Verification:
    """The outcome of :func:`verify_certificate`.

    Attributes
    ----------
    ok : bool
        Verified: consistent, and the certificate claims a guarantee that holds as stated.
    consistent : bool
        No field disagrees with its recomputation (and the publication, if given, passes).
    claims : bool
        The recomputed ``guarantee.holds``: the certificate claims a guarantee.
    mismatches : tuple of str
        One sentence per disagreeing field, naming it (``guarantee.kappa: stated 100,
        recomputed 1.52``), or per problem of the publication.
    statement : str
        The recomputed guarantee in one sentence (what the certificate may honestly claim).
    kind : str
        The certificate's kind.
    published_checked : bool
        Whether the publication was read and checked.
    recomputed : dict or None
        The recomputed document (None if the claim could not be read).
    """

    ok: bool
    consistent: bool
    claims: bool
    mismatches: tuple[str, ...]
    statement: str = ""
    kind: str = ""
    published_checked: bool = False
    recomputed: dict[str, Any] | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        from persuasive.release.display import verification_repr

        return verification_repr(self)

    def _repr_html_(self) -> str:
        """Verified or not, the recomputed guarantee and κ, the first mismatches."""
        from persuasive.release.display import verification_html

        return verification_html(self)

    def explain(self) -> str:
        """What the certificate claims and whether it holds, in a few lines."""
        if not self.consistent:
            return "NOT verified: " + "; ".join(self.mismatches)
        checked = (
            "the publication matches"
            if self.published_checked
            else "the publication was not checked (pass --published DIR)"
        )
        if not self.claims:
            return (
                f"NOT verified: the certificate is consistent but claims no guarantee: "
                f"{self.statement}"
            )
        return f"verified ({self.kind}; {checked}): {self.statement}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "consistent": self.consistent,
            "claims_guarantee": self.claims,
            "kind": self.kind,
            "published_checked": self.published_checked,
            "statement": self.statement,
            "mismatches": list(self.mismatches),
        }


def _read(path_or_doc: Any) -> tuple[dict[str, Any], list[str], str]:
    if isinstance(path_or_doc, Mapping):
        return dict(path_or_doc), [], "certificate"
    if not isinstance(path_or_doc, (str, os.PathLike)):
        raise ValidationError(
            "verify_certificate needs a certificate file path or its parsed document; "
            f"got {type(path_or_doc).__name__}"
        )
    p = Path(path_or_doc)
    source = f"certificate file '{p}'"
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ValidationError(f"{source} not found") from None
    except IsADirectoryError:
        raise ValidationError(f"{source} is a folder; pass its certificate.json") from None
    except OSError as exc:
        raise ValidationError(f"cannot read {source}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError(f"{source} is not UTF-8 text") from None
    doc, twice = cd.loads(text, source=source)
    return doc, twice, source


def _check_format(doc: Mapping[str, Any], source: str) -> None:
    fmt = doc.get("format")
    if fmt != cd.FORMAT:
        raise ValidationError(
            f"{source}: format must be {cd.FORMAT!r} (a persuasive certificate); got {fmt!r:.60}"
        )
    version = doc.get("format_version")
    if isinstance(version, bool) or version not in cd.SUPPORTED_VERSIONS:
        raise ValidationError(
            f"{source}: format_version {version!r:.20} is not read by this version of persuasive "
            f"(it reads {', '.join(map(str, cd.SUPPORTED_VERSIONS))}); re-run the release, or "
            "verify with the version that wrote it"
        )


_SUFFIXES = (".csv", ".parquet", ".pq", ".json")


def locate_publication(
    stems: Sequence[str],
    published: str | os.PathLike[str] | Sequence[Any],
    stated: Sequence[str] = (),
) -> dict[str, Path]:
    """The published files of a kind (``released.csv``, ``margins.parquet`` …), by their stems,
    in a release folder or among the given files. Where a folder holds several files of one
    stem, the one the certificate names is taken."""
    items = [published] if isinstance(published, (str, os.PathLike)) else list(published)
    candidates: list[Path] = []
    for item in map(Path, items):
        if item.is_dir():
            candidates += [p for p in sorted(item.iterdir()) if p.is_file()]
        elif item.is_file():
            candidates.append(item)
        else:
            raise ValidationError(f"--published '{item}' not found")
    found: dict[str, Path] = {}
    for stem in stems:
        mine = [p for p in candidates if p.stem == stem and p.suffix.lower() in _SUFFIXES]
        if len(mine) > 1:
            mine = [p for p in mine if p.name in stated] or mine
        if len(mine) != 1:
            what = "none" if not mine else ", ".join(p.name for p in mine)
            raise ValidationError(
                f"--published: need one published file named {stem}.csv, {stem}.parquet or "
                f"{stem}.json; found {what} in {', '.join(map(str, items))}"
            )
        found[mine[0].name] = mine[0]
    return found


def publication_beside(path: str | os.PathLike[str]) -> Path | None:
    """The folder of a certificate file when it also holds every file the certificate says was
    published (a release folder), else None: ``verify`` then checks the publication too."""
    try:
        doc, _, _ = _read(path)
    except ValidationError:
        return None
    folder = Path(path).parent
    names = _published_names(doc)
    if names and all((folder / n).is_file() for n in names):
        return folder
    return None


def _published_names(doc: Mapping[str, Any]) -> list[str]:
    pub = doc.get("publication")
    files = pub.get("files") if isinstance(pub, dict) else None
    return [
        e["name"]
        for e in (files if isinstance(files, list) else [])
        if isinstance(e, dict) and isinstance(e.get("name"), str)
    ]


def recompute(
    kind_name: str,
    params: Any,
    publication: Publication | None,
    *,
    version: str,
    stated_publication: Any = None,
) -> dict[str, Any]:
    """The whole certificate document of a claim's parameters (and publication)."""
    kind = kind_of(kind_name)
    body = kind.certify(params, publication)
    section = publication.section() if publication is not None else stated_publication
    return cd.envelope(
        kind_name,
        kind.claim(params),
        body.guarantee,
        body.notes,
        section or {},
        version=version,
        extra=body.extra,
    )


def _label(path: str, index: int, entry: Any) -> str | None:
    if path == "cells" and isinstance(entry, dict) and isinstance(entry.get("key"), list):
        return ",".join(map(str, entry["key"]))
    if path == "publication.files" and isinstance(entry, dict):
        return str(entry.get("name"))
    return None


def verify_certificate(
    path_or_doc: str | os.PathLike[str] | Mapping[str, Any], *, published: Any = None
) -> Verification:
    """Recompute a certificate from its claim (and its publication) and compare every field.

    Parameters
    ----------
    path_or_doc : str, path-like or mapping
        A ``certificate.json`` or its parsed document.
    published : path or sequence of paths, optional
        The release folder, or the published files: the publication section is then
        recomputed from them and the publication is checked (no shown count below h …).
        Required for a table with margins, whose guarantee is computed from its publication.

    Returns
    -------
    Verification

    Raises
    ------
    ValidationError
        The file cannot be read, is not strict JSON, is not a persuasive certificate of a
        supported format version, or the publication cannot be read.

    Examples
    --------
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> from persuasive.report.kinds.table import KIND, TableParams
    >>> p = TableParams(10, 10, PoissonReceiver(1, 40), ("county",), "n")
    >>> import persuasive
    >>> doc = recompute("table", p, None, version=persuasive.__version__,
    ...                 stated_publication={"files": []})
    >>> verify_certificate(doc).consistent
    True
    >>> doc["guarantee"]["kappa"] = 100
    >>> [line.split(":")[0] for line in verify_certificate(doc).mismatches]
    ['guarantee.kappa', 'digest']
    >>> verify_certificate(doc).mismatches[0][:42]
    'guarantee.kappa: stated 100, recomputed 19'
    >>> verify_certificate(doc).ok
    False
    """
    with task("verify: recompute the certificate", total=3) as advance:
        return _verify(path_or_doc, published, advance)


def _verify(
    path_or_doc: str | os.PathLike[str] | Mapping[str, Any],
    published: Any,
    advance: Callable[..., None],
) -> Verification:
    """:func:`verify_certificate`, reporting progress: the publication read, the certificate
    recomputed, the fields compared."""
    doc, twice, source = _read(path_or_doc)
    _check_format(doc, source)
    out = [f"{k}: the key appears twice; a reader would see only the last value" for k in twice]
    version = (
        doc.get("library", {}).get("version") if isinstance(doc.get("library"), dict) else None
    )
    if not isinstance(version, str):
        out.append(f"library.version: must be a version string; got {version!r:.40}")
        version = "?"
    kind_name = doc.get("kind")
    try:
        kind = kind_of(kind_name)
    except ValidationError as exc:
        return Verification(
            False, False, False, (*out, " ".join(str(exc).split())), kind=str(kind_name)
        )

    def refused(lines: list[str]) -> Verification:
        return Verification(
            False, False, False, (*lines, *_digest_lines(doc, kind, version)), kind=kind.name
        )

    try:
        claim = doc.get("claim")
        params = kind.parameters(claim if isinstance(claim, dict) else {})
    except PersuasiveError as exc:
        return refused([*out, f"claim: cannot be read: {' '.join(str(exc).split())}"])
    publication: Publication | None = None
    if published is not None:
        files = locate_publication(kind.published, published, _published_names(doc))
        try:
            publication = kind.read_publication(params, files)
        except (pl.exceptions.PolarsError, PersuasiveError, ValueError, KeyError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            publication = Publication(
                files, {}, [f"publication: cannot be read as the claim states: {first}"]
            )
        out += publication.problems
    elif kind.needs_publication:
        raise ValidationError(
            f"a {kind.name} certificate is recomputed from its publication: pass the release "
            "folder, e.g. persuasive verify CERT.json --published DIR"
        )
    advance()
    try:
        want = recompute(
            kind.name,
            params,
            publication,
            version=version,
            stated_publication=doc.get("publication"),
        )
    except PersuasiveError as exc:
        if publication is None or not publication.problems:
            out.append(f"claim: cannot be certified: {' '.join(str(exc).split())}")
        if publication is not None:  # still name the published files that changed
            out += cd.diff(
                doc.get("publication"), publication.section(), "publication", label=_label
            )
        return refused(out)
    advance()
    out += cd.diff(
        {k: v for k, v in doc.items() if k != "digest"},
        {k: v for k, v in want.items() if k != "digest"},
        label=_label,
    )
    out += _digest_lines(doc, kind, version, after=bool(out))
    advance()
    claims = bool(want["guarantee"]["holds"])
    consistent = not out
    return Verification(
        ok=consistent and claims,
        consistent=consistent,
        claims=claims,
        mismatches=tuple(out),
        statement=str(want["guarantee"]["statement"]),
        kind=kind.name,
        published_checked=publication is not None,
        recomputed=want,
    )


def _digest_lines(doc: Mapping[str, Any], kind: Any, version: str, after: bool = True) -> list[str]:
    """The digest check, naming the fields only the digest protects when it fails, and a hint
    when another version wrote the certificate."""
    out = []
    stated = doc.get("digest")
    real = cd.digest_of(doc)
    if stated != real:
        raw = doc.get("claim")
        claim: dict[str, Any] = raw if isinstance(raw, dict) else {}
        inputs = [
            path
            for prefix in kind.inputs
            if prefix.split(".")[0] in claim
            for path in leaves(_at(claim, prefix), f"claim.{prefix}")
        ]
        out.append(
            f"digest: stated {str(stated)[:15]}..., recomputed {real[:15]}...: the document was "
            "edited after it was written; unless a mismatch above explains it, one of the "
            "fields only the digest protects was: " + ", ".join([*inputs, "library.version"])
        )
    if (out or after) and version != _version():
        out.append(
            f"library.version: written by persuasive {version}, checked with {_version()}; "
            "a difference may come from the version (verify with the version that wrote it)"
        )
    return out


def _at(doc: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        doc = doc.get(part) if isinstance(doc, Mapping) else None
    return doc


def _version() -> str:
    import persuasive

    return str(persuasive.__version__)
