r"""Reading release inputs exactly: keys as written, counts as exact integers.

Every release reads its input here, so that no release can change a published value on the way
in:

* **Keys are text, exactly as written.** A CSV key column is read as a string column with no
  type inference: ``01001`` keeps its leading zero, ``1`` and ``1.0`` are different keys, and
  ``NA`` is a key (Namibia), not a missing value. A Parquet (or in-memory) key column keeps its
  declared type.
* **Counts are exact 64-bit integers.** A CSV count is parsed from its text: only whole numbers
  written with digits are counts (``3.0``, ``1e3``, `` 3`` and ``three`` are errors naming the
  row), and a count above :math:`2^{63}-1` is an error, never rounded. A Parquet count column
  may be of an integer type, or of a float type holding integral values (each converted
  exactly); a fractional or non-finite value is an error naming the row.
* **Real values** (a mean's column) are parsed from text once (the decimal-to-binary rounding of
  the file format itself) and must be finite.
* **Headers** naming a column twice are refused (a CSV reader would otherwise rename the second
  ``k`` to ``k_duplicated_0`` and silently drop it from the release).
* **Formats** are read by real readers: CSV by polars (any one-character separator, quoted
  fields holding separators, quotes or line breaks, a UTF-8 byte-order mark skipped, another
  text encoding decoded strictly: :class:`~persuasive.files.sources.DataFile`), Parquet by
  polars, Stata, SPSS and SAS files by pyreadstat. In-memory data (polars, pandas, pyarrow) is
  converted once by :func:`~persuasive.files.sources.as_source`; :func:`scan` gives a lazy frame
  for every source.
* **Statistical files** (Stata, SPSS, SAS) keep their types: text as text, integers as Int64,
  a date as a date. A value-labelled variable is read as its *codes*, never its labels (labels
  need not be unique; the codes are what the file stores). A system or user-defined missing
  value is missing. Every SPSS and SAS number is a double (and a pandas int64 written to Stata
  by pyreadstat is one too): a float column whose values are all whole numbers of magnitude at
  most :math:`2^{53}` is read as Int64 — exact, since each such double *is* that integer — so a
  code or a count is published as ``3``, not ``3.0``.

Validation happens in one pass (:mod:`persuasive.files.parsing`, whose names this module
re-exports): one aggregation finds, for every check, the first failing row.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from persuasive.errors import ValidationError
from persuasive.files.parsing import (  # re-exported: the parsing half of reading
    MAX_COUNT,
    ROW,
    Check,
    count_checks,
    count_expr,
    first_failures,
    key_checks,
    raise_first,
    real_checks,
    real_expr,
    require,
)
from persuasive.files.sources import DataFile, Source, as_source

__all__ = [
    "FORMATS",
    "MAX_COUNT",
    "OUTPUT_FORMATS",
    "ROW",
    "Check",
    "DataFile",
    "Source",
    "count_checks",
    "count_expr",
    "first_failures",
    "format_of",
    "header",
    "key_checks",
    "raise_first",
    "real_checks",
    "real_expr",
    "require",
    "scan",
]

#: File suffixes a release reads, and the format of each.
FORMATS = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".dta": "stata",
    ".sav": "spss",
    ".zsav": "spss",
    ".sas7bdat": "sas7bdat",
    ".xpt": "xport",
}

#: The formats a release writes (its tables); the others are read only.
OUTPUT_FORMATS = ("csv", "parquet")

#: The formats pyreadstat reads, with the name of its reader.
_READSTAT = {
    "stata": "read_dta",
    "spss": "read_sav",
    "sas7bdat": "read_sas7bdat",
    "xport": "read_xport",
}

#: A format's name in messages.
_NAMES = {
    "csv": "CSV",
    "parquet": "Parquet",
    "stata": "Stata",
    "spss": "SPSS",
    "sas7bdat": "SAS",
    "xport": "SAS transport (XPORT)",
}

#: Bytes of a CSV file read for its header.
_WINDOW = 1 << 20


def format_of(
    path: str | os.PathLike[str], *, role: str = "data file", output: bool = False
) -> str:
    """The format of a file from its suffix (a value of :data:`FORMATS`); a ValidationError
    naming it otherwise. With ``output``, only the formats a release writes
    (:data:`OUTPUT_FORMATS`)."""
    suffix = Path(path).suffix.lower()
    fmt = FORMATS.get(suffix)
    got = f"got suffix {suffix or '(none)'!r}"
    if output and fmt not in OUTPUT_FORMATS:
        raise ValidationError(
            f"{role} '{path}' must end in .csv, .parquet or .pq (a release writes CSV or "
            f"Parquet; Stata, SPSS and SAS files are read, not written); {got}"
        )
    if fmt is None:
        raise ValidationError(
            f"{role} '{path}' must end in .csv, .parquet or .pq, or be a Stata (.dta), SPSS "
            f"(.sav, .zsav) or SAS (.sas7bdat, .xpt) file; {got}"
        )
    return fmt


def _check_file(path: Path, role: str) -> None:
    if not path.exists():
        raise ValidationError(
            f"{role} '{path}' not found; pass an existing data file (CSV, Parquet, Stata, SPSS "
            "or SAS)"
        )
    if path.is_dir():
        raise ValidationError(f"{role} '{path}' is a folder; pass a data file")
    if not os.access(path, os.R_OK):
        raise ValidationError(f"{role} '{path}' cannot be read (permission denied)")


def _not_text(path: Path, encoding: str | None, at: str, role: str) -> ValidationError:
    what = "UTF-8" if encoding in (None, "utf-8", "utf-8-sig") else encoding
    return ValidationError(
        f"{role} '{path}' is not {what} text ({at}); give its encoding (e.g. --encoding "
        "latin-1; in Python DataFile(path, encoding='latin-1')) or save it as UTF-8"
    )


def _csv_header(
    path: Path, separator: str = ",", encoding: str | None = None, role: str = "data file"
) -> list[str]:
    """The first record of a CSV file (its first 1 MiB decoded strictly, a BOM skipped), split
    by Python's csv reader with the same quoting rules as polars (``"`` quotes, ``""`` is a
    quote)."""
    with open(path, "rb") as fh:
        raw = fh.read(_WINDOW)
    decoder = codecs.getincrementaldecoder(encoding or "utf-8")()
    try:  # not final: a character cut by the window's end is not an error
        text = decoder.decode(raw, final=len(raw) < _WINDOW)
    except UnicodeDecodeError as exc:
        raise _not_text(path, encoding, f"byte {exc.start}", role) from None
    text = text.removeprefix("\ufeff")
    row = next(csv.reader(io.StringIO(text, newline=""), delimiter=separator), None)
    if row is None:
        raise ValidationError(f"{role} '{path}' is empty: it has no header line")
    return row


def _check_options(source: DataFile, fmt: str, role: str) -> None:
    if source.separator is not None and fmt != "csv":
        raise ValidationError(
            f"separator applies to CSV files only; {role} '{source.path}' is a {_NAMES[fmt]} "
            "file: leave the separator out"
        )
    if source.encoding is not None and fmt == "parquet":
        raise ValidationError(
            f"encoding does not apply to Parquet files (their text is always UTF-8); {role} "
            f"'{source.path}' is Parquet: leave the encoding out"
        )


def _one_column(path: Path, names: list[str], role: str) -> None:
    """A header read with the default comma as one name holding ``;``, a tab or ``|`` is a file
    with another separator: say which."""
    if len(names) != 1:
        return
    for sep in (";", "\t", "|"):
        if sep in names[0]:
            shown = "tab" if sep == "\t" else sep
            raise ValidationError(
                f"{role} '{path}' read with commas has one column, {names[0]!r}, holding "
                f"{shown!r}: pass --separator {shown!r} (in Python DataFile(path, "
                f"separator={shown!r})), or --separator ',' if it really is one column"
            )


def _readstat(source: DataFile, fmt: str, role: str, *, metadataonly: bool = False) -> Any:
    """``(frame, metadata)`` of a Stata, SPSS or SAS file by pyreadstat (polars output, codes
    not labels); the frame's numbers are made exact (:func:`_exact_numbers`)."""
    import pyreadstat

    reader = getattr(pyreadstat, _READSTAT[fmt])
    options: dict[str, Any] = {"output_format": "polars", "metadataonly": metadataonly}
    if source.encoding is not None:
        options["encoding"] = source.encoding.upper()
    try:
        frame, meta = reader(os.fspath(source.path), **options)
    except Exception as exc:  # pyreadstat raises ReadstatError, PyreadstatError and others
        raise ValidationError(
            f"{role} '{source.path}' is not a readable {_NAMES[fmt]} file: {_first_line(exc)}"
        ) from None
    return (frame if metadataonly else _exact_numbers(frame)), meta


def _exact_numbers(frame: pl.DataFrame) -> pl.DataFrame:
    """NaN is missing, and a float column of whole numbers of magnitude <= 2^53 is Int64."""
    floats = [c for c, t in frame.schema.items() if t.is_float()]
    if not floats:
        return frame
    frame = frame.with_columns(pl.col(floats).fill_nan(None))
    c = pl.col(floats)
    whole = frame.select(((c == c.floor()) & (c.abs() <= 2.0**53)).all()).row(0, named=True)
    ints = [name for name in floats if whole[name]]
    return frame.with_columns(pl.col(ints).cast(pl.Int64)) if ints else frame


def _file_header(source: DataFile, role: str) -> list[str]:
    path = source.path
    fmt = format_of(path, role=role)
    _check_options(source, fmt, role)
    _check_file(path, role)
    if fmt == "csv":
        names = _csv_header(path, source.separator or ",", source.encoding, role)
        if source.separator is None:
            _one_column(path, names, role)
        return names
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names)
        except Exception as exc:  # pyarrow raises several types for a broken file
            raise ValidationError(
                f"{role} '{path}' is not a readable Parquet file: {_first_line(exc)}"
            ) from None
    return list(_readstat(source, fmt, role, metadataonly=True)[1].column_names)


def header(source: Source, *, role: str = "data file") -> list[str]:
    """The column names of a source, exactly as written; duplicated names are refused.

    ``source`` is any shape :func:`~persuasive.files.sources.as_source` accepts. A CSV header
    that is one name holding ``;``, a tab or ``|`` (a file read with the wrong separator) is
    refused with the separator to pass, unless the separator was given.

    Examples
    --------
    >>> import polars as pl
    >>> header(pl.DataFrame({"k": ["a"], "c": [1]}))
    ['k', 'c']
    """
    src = as_source(source)
    if isinstance(src, pl.DataFrame):
        names = list(src.columns)
    elif isinstance(src, pl.LazyFrame):
        names = list(src.collect_schema().names())
    else:
        names = _file_header(src, role)
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise ValidationError(
                f"the header names column {name!r} twice (columns {seen[name] + 1} and {i + 1}); "
                "rename one: a release must know which column it reads"
            )
        seen[name] = i
    return names


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def scan(
    source: Source, *, text: Sequence[str] = (), infer: bool = False, role: str = "data file"
) -> pl.LazyFrame:
    """A lazy frame of ``source`` whose ``text`` columns are read as strings, exactly.

    Parameters
    ----------
    source : path, DataFile, polars / pandas DataFrame, polars LazyFrame or pyarrow Table
        A file (CSV, Parquet, Stata, SPSS, SAS) or an in-memory table
        (:func:`~persuasive.files.sources.as_source`).
    text : sequence of str
        Columns a CSV file must give as written (keys, counts and values parsed by this
        module). Ignored for other sources, whose columns keep their declared types.
    infer : bool
        Infer the types of the *other* CSV columns from the whole file (for SQL conditions
        over covariates); otherwise every CSV column is read as text.

    Notes
    -----
    CSV and Parquet files are scanned lazily. A Stata, SPSS or SAS file is read whole by
    pyreadstat (it has no lazy reader), as is a CSV file in an encoding other than UTF-8: it is
    decoded strictly and re-encoded as UTF-8 into a private temporary folder, read, and the
    folder removed.
    """
    src = as_source(source)
    names = header(src, role=role)
    if isinstance(src, pl.DataFrame):
        return src.lazy()
    if isinstance(src, pl.LazyFrame):
        return src
    path = src.path
    fmt = format_of(path, role=role)
    if fmt in _READSTAT:
        return _readstat(src, fmt, role)[0].lazy()
    try:
        if fmt == "parquet":
            return pl.scan_parquet(path)
        options: dict[str, Any] = {"separator": src.separator or ","}
        if infer:
            options["schema_overrides"] = {c: pl.String for c in text if c in names}
            options["infer_schema_length"] = None
        else:
            options["infer_schema"] = False
        if src.encoding in (None, "utf-8", "utf-8-sig"):
            return pl.scan_csv(path, **options)
        return _transcoded(path, src.encoding, options, role)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise ValidationError(f"cannot read {role} '{path}': {_first_line(exc)}") from None


def _transcoded(path: Path, encoding: str, options: dict[str, Any], role: str) -> pl.LazyFrame:
    """A CSV file in ``encoding``, decoded strictly and read through a private UTF-8 copy."""
    import tempfile

    decoder = codecs.getincrementaldecoder(encoding)()
    with tempfile.TemporaryDirectory(prefix="persuasive-") as tmp:  # mode 0700
        utf8 = Path(tmp) / "data.csv"
        offset = 0
        with open(path, "rb") as src, open(utf8, "wb") as dst:
            try:
                while chunk := src.read(_WINDOW):
                    dst.write(decoder.decode(chunk).encode("utf-8"))
                    offset += len(chunk)
                dst.write(decoder.decode(b"", final=True).encode("utf-8"))
            except UnicodeDecodeError as exc:
                at = f"near byte {offset + exc.start}"
                raise _not_text(path, encoding, at, role) from None
        return pl.read_csv(utf8, **options).lazy()
