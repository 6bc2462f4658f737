r"""The shapes a release's data may come in, brought to two at the boundary: a file or a frame.

A release reads its data through :func:`persuasive.files.reading.header` and
:func:`~persuasive.files.reading.scan`, which first call :func:`as_source`. It accepts

* a **path** (``str`` or path-like) to a CSV, Parquet, Stata (``.dta``), SPSS
  (``.sav``, ``.zsav``) or SAS (``.sas7bdat``, ``.xpt``) file;
* a :class:`DataFile`: a path with the options of its format (the CSV ``separator``, the
  text ``encoding``), accepted everywhere a path is (it is path-like);
* a **polars** ``DataFrame`` or ``LazyFrame``, as it is;
* a **pandas** ``DataFrame``, converted exactly (:func:`from_pandas`);
* a **pyarrow** ``Table`` or ``RecordBatch`` (``polars.from_arrow``, which keeps every Arrow
  type), or any object exporting the Arrow stream interface (``__arrow_c_stream__``).

Each is converted once; nothing downstream knows which shape the data had, so the same data give
byte-identical publications and certificates whatever the shape.
"""

from __future__ import annotations

import codecs
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from persuasive.errors import ValidationError

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl
    import pyarrow as pa

__all__ = [
    "ACCEPTED",
    "DataFile",
    "Source",
    "as_source",
    "encoding_of",
    "from_pandas",
    "is_table",
    "separator_of",
]

#: Every shape of data a release accepts (a path, a DataFile or an in-memory table).
Source: TypeAlias = (
    "str | os.PathLike[str] | DataFile | pl.DataFrame | pl.LazyFrame | pd.DataFrame | pa.Table"
)

#: What :func:`as_source` accepts, as error messages list it.
ACCEPTED = (
    "a file path (.csv, .parquet/.pq, Stata .dta, SPSS .sav/.zsav, SAS .sas7bdat/.xpt), "
    "a persuasive.files.DataFile, a polars DataFrame or LazyFrame, a pandas DataFrame or a "
    "pyarrow Table"
)

#: The words accepted for a tab separator (besides the tab character itself).
_TAB_WORDS = ("tab", "\\t")


def separator_of(value: Any, *, name: str = "separator") -> str | None:
    r"""One ASCII character separating CSV fields; ``"tab"`` and ``"\t"`` (backslash-t) mean a
    tab. None passes through (the default, a comma).

    Examples
    --------
    >>> separator_of(";"), separator_of("tab"), separator_of("\\t")
    (';', '\t', '\t')
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be one character, e.g. ';'; got {value!r}")
    text = "\t" if value.lower() in _TAB_WORDS else value
    if len(text) != 1 or not text.isascii() or text in '"\r\n':
        raise ValidationError(
            f"{name} must be one ASCII character other than a quote or a line break "
            f"(e.g. ';', '|', or 'tab'); got {value!r}"
        )
    return text


def encoding_of(value: Any, *, name: str = "encoding") -> str | None:
    """The canonical name of a text encoding Python knows (``latin-1`` -> ``iso8859-1``); None
    passes through (the default, UTF-8).

    Examples
    --------
    >>> encoding_of("latin-1"), encoding_of("UTF8"), encoding_of("cp1252")
    ('iso8859-1', 'utf-8', 'cp1252')
    """
    if value is None:
        return None
    try:
        info = codecs.lookup(value) if isinstance(value, str) else None
    except LookupError:
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        raise ValidationError(
            f"{name} must name a text encoding, e.g. utf-8, latin-1 or cp1252; got {value!r}"
        )
    return info.name


@dataclass(frozen=True)
class DataFile:
    r"""A data file and the options of its format; accepted everywhere a path is.

    Parameters
    ----------
    path : str or path-like
        The file: ``.csv``, ``.parquet``/``.pq``, ``.dta``, ``.sav``/``.zsav``, ``.sas7bdat``
        or ``.xpt``.
    separator : str, optional
        CSV only: the one ASCII character between fields (default ``,``); ``"tab"`` or
        ``"\t"`` for a tab.
    encoding : str, optional
        The text encoding (default UTF-8; a UTF-8 byte-order mark is skipped). A CSV file in
        another encoding is decoded strictly (a byte that is not a character of it is an error)
        and re-encoded as UTF-8 into a private temporary file that is read and then removed, so
        every character is published exactly, in UTF-8. For Stata, SPSS and SAS files it
        overrides the encoding the file declares (pyreadstat's ``encoding``). Parquet text is
        always UTF-8.

    Examples
    --------
    >>> f = DataFile("counts.csv", separator=";", encoding="latin-1")
    >>> str(f), f.separator, f.encoding
    ('counts.csv', ';', 'iso8859-1')
    >>> import os
    >>> os.fspath(f)
    'counts.csv'
    """

    path: Path
    separator: str | None = None
    encoding: str | None = None

    def __post_init__(self) -> None:
        path = self.path
        if not isinstance(path, (str, os.PathLike)) or str(os.fspath(path)).strip() == "":
            raise ValidationError(f"path must name a data file; got {path!r}")
        object.__setattr__(self, "path", Path(os.fspath(path)))
        object.__setattr__(self, "separator", separator_of(self.separator))
        object.__setattr__(self, "encoding", encoding_of(self.encoding))

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return str(self.path)


def _module_type(module: str, name: str) -> type | None:
    """``module.name`` if that module is already imported (data of a module never imported
    cannot be an instance of its types, so nothing is imported here)."""
    mod = sys.modules.get(module)
    found = getattr(mod, name, None) if mod is not None else None
    return found if isinstance(found, type) else None


def is_table(obj: Any) -> bool:
    """Whether ``obj`` is a table or a file :func:`as_source` reads (a path, a DataFile, a
    polars, pandas or pyarrow table), rather than, say, an array of values.

    Examples
    --------
    >>> is_table("t.csv"), is_table([1.0, 2.0])
    (True, False)
    """
    import polars as pl

    if isinstance(obj, (str, os.PathLike, DataFile, pl.DataFrame, pl.LazyFrame)):
        return True
    kinds = [_module_type("pandas", "DataFrame")]
    kinds += [_module_type("pyarrow", n) for n in ("Table", "RecordBatch")]
    return any(t is not None and isinstance(obj, t) for t in kinds)


def as_source(obj: Any, *, name: str = "data") -> DataFile | pl.DataFrame | pl.LazyFrame:
    """``obj`` as a :class:`DataFile` or a polars frame (see the module docstring).

    Examples
    --------
    >>> import pandas as pd
    >>> as_source(pd.DataFrame({"area": ["01", "02"], "n": [3, 12]})).rows()
    [('01', 3), ('02', 12)]
    >>> as_source("t.csv")
    DataFile(path=PosixPath('t.csv'), separator=None, encoding=None)
    """
    import polars as pl

    if isinstance(obj, (DataFile, pl.DataFrame, pl.LazyFrame)):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        return DataFile(Path(obj))
    pd_frame = _module_type("pandas", "DataFrame")
    if pd_frame is not None and isinstance(obj, pd_frame):
        return from_pandas(obj)
    pd_series = _module_type("pandas", "Series")
    if pd_series is not None and isinstance(obj, pd_series):
        raise ValidationError(
            f"{name} must be a table; got a pandas Series: pass series.to_frame() or the frame "
            "it came from (accepted: " + ACCEPTED + ")"
        )
    arrow = [_module_type("pyarrow", n) for n in ("Table", "RecordBatch")]
    if any(t is not None and isinstance(obj, t) for t in arrow):
        out = pl.from_arrow(obj)
        assert isinstance(out, pl.DataFrame)
        return out
    if hasattr(obj, "__arrow_c_stream__") and not isinstance(obj, type):
        try:
            return pl.DataFrame(obj)
        except Exception as exc:  # the exporter's own error types
            raise ValidationError(
                f"{name}: cannot read the Arrow stream of a {type(obj).__name__} "
                f"({_first_line(exc)}); convert it to a pyarrow Table first"
            ) from None
    raise ValidationError(f"{name} must be {ACCEPTED}; got {type(obj).__name__}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def from_pandas(frame: pd.DataFrame) -> pl.DataFrame:
    """A pandas DataFrame as a polars DataFrame, exactly.

    * Text (``object`` of strings, ``str``, ``string``) stays text: ``"01"`` keeps its zero.
    * Integers keep their type, the nullable ``Int64``/``UInt64``… included (``<NA>`` is
      missing); booleans and dates are kept.
    * A float ``NaN`` — pandas' missing value — is a missing value (null), so a release's checks
      report it by its row.
    * A categorical column of text becomes a polars ``Enum`` with the same categories in the same
      order (other categoricals keep their values' type).
    * A *named* index (e.g. the keys after ``groupby``) becomes leading columns; an unnamed index
      (row labels) is dropped.

    An ``object`` column mixing types (``1`` and ``"a"``) is refused naming the column: convert it
    first (``df[c].astype("string")``), so no value is silently changed.
    """
    import pandas as pd
    import polars as pl

    if isinstance(frame.columns, pd.MultiIndex):
        raise ValidationError(
            "the pandas DataFrame has several header levels (MultiIndex columns); flatten them "
            "first, e.g. df.columns = ['_'.join(map(str, c)) for c in df.columns]"
        )
    index = [n for n in frame.index.names if n is not None]
    keep_index = bool(index)
    names = [*(frame.index.names if keep_index else []), *frame.columns]
    for n in names:
        if not isinstance(n, str):
            raise ValidationError(
                f"pandas column names must be text; got {n!r} ({type(n).__name__}): rename it, "
                "e.g. df.columns = df.columns.map(str)"
            )
    seen: dict[str, int] = {}
    for i, n in enumerate(names):
        if n in seen:
            raise ValidationError(
                f"the pandas DataFrame names column {n!r} twice (columns {seen[n] + 1} and "
                f"{i + 1}, counting a named index first); rename one: a release must know which "
                "column it reads"
            )
        seen[n] = i
    enums: dict[str, list[str]] = {}
    for n in frame.columns:
        dtype = frame[n].dtype
        if isinstance(dtype, pd.CategoricalDtype):
            cats = list(dtype.categories)
            if all(isinstance(x, str) for x in cats):
                enums[n] = cats
    try:
        out = pl.from_pandas(frame, include_index=keep_index, nan_to_null=True)
    except Exception:  # pyarrow and polars raise several types; find the column at fault
        for n in frame.columns:
            try:
                pl.from_pandas(frame[[n]], nan_to_null=True)
            except Exception as exc:
                raise ValidationError(
                    f"pandas column {n!r} (dtype {frame[n].dtype}) cannot be converted exactly "
                    f"({_first_line(exc)}); give it one type first, e.g. "
                    f"df[{n!r}] = df[{n!r}].astype('string')"
                ) from None
        raise
    assert isinstance(out, pl.DataFrame)
    if enums:
        out = out.with_columns(pl.col(n).cast(pl.Enum(c)) for n, c in enums.items())
    return out
