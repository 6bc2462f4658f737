"""Reading a certificate file and finding its publication, for ``persuasive verify``.

:func:`read` reads a certificate strictly (:func:`persuasive.report.certificate.loads`),
:func:`check_format` refuses another format or an unsupported format version,
:func:`locate_publication` finds the published files of a kind in a release folder or among
given files, and :func:`publication_beside` tells whether a certificate lies in the release
folder it describes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from persuasive.errors import ValidationError
from persuasive.report import certificate as cd

__all__ = [
    "check_format",
    "locate_publication",
    "publication_beside",
    "published_names",
    "read",
]


def read(path_or_doc: Any) -> tuple[dict[str, Any], list[str], str]:
    """A certificate document, read strictly.

    Parameters
    ----------
    path_or_doc : str, path-like or mapping
        A ``certificate.json`` or its parsed document (then returned as it is).

    Returns
    -------
    doc : dict
        The document.
    twice : list of str
        The keys that appear twice in the file (a reader would see only the last value).
    source : str
        How messages name the certificate.

    Raises
    ------
    ValidationError
        The file cannot be read, is not UTF-8 text or not strict JSON.
    """
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


def check_format(doc: Mapping[str, Any], source: str) -> None:
    """Refuse a document that is not a persuasive certificate of a supported format version.

    Raises
    ------
    ValidationError
        Naming the format or the format version found.
    """
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


def _dataset(path: Path) -> bool:
    """A dataset folder: a folder named like a table file (``released.csv/``), holding its
    part files (:func:`persuasive.files.table_digest.dataset_parts`)."""
    return path.is_dir() and path.suffix.lower() in (".csv", ".parquet", ".pq")


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
        if item.is_dir() and not _dataset(item):
            # files, and dataset folders of part files (a table written by Spark)
            candidates += [p for p in sorted(item.iterdir()) if p.is_file() or _dataset(p)]
        elif item.is_file() or _dataset(item):
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
        doc, _, _ = read(path)
    except ValidationError:
        return None
    folder = Path(path).parent
    names = published_names(doc)
    if names and all((folder / n).is_file() or _dataset(folder / n) for n in names):
        return folder
    return None


def published_names(doc: Mapping[str, Any]) -> list[str]:
    """The names of the files a certificate's publication section lists (none if malformed)."""
    pub = doc.get("publication")
    files = pub.get("files") if isinstance(pub, dict) else None
    return [
        e["name"]
        for e in (files if isinstance(files, list) else [])
        if isinstance(e, dict) and isinstance(e.get("name"), str)
    ]
