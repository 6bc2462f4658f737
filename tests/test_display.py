"""The notebook API: exports, one ``write(folder)``, a short ``repr`` and ``_repr_html_``.

Every release result, the certify ``Certificate`` and ``Verification`` show a one-line repr
(under 200 characters, with κ) and a well-formed HTML block with the guarantee sentence and κ;
the HTML of a table never shows a suppressed count; ``write(folder)`` writes a folder whose
certificate verifies (``persuasive.report.verify.verify_certificate``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import persuasive as pp
from persuasive.report.verify import verify_certificate

POI = pp.PoissonReceiver(0.0, 3.0)

#: Suppressed counts no other number of the display can be mistaken for.
SECRET = (3173, 4129)


class _Parsed(HTMLParser):
    """Checks that every tag closes in order; collects the text and the table cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []
        self.cells: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.stack.append(tag)
        if tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack}"
        self.stack.pop()
        if tag == "td" and self._cell is not None:
            self.cells.append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse(html: str) -> _Parsed:
    p = _Parsed()
    p.feed(html)
    p.close()
    assert p.stack == [], f"unclosed tags {p.stack}"
    return p


def _table(counts: list[int] | None = None, h: int = 5) -> pp.TableRelease:
    counts = counts or [3, 4, 12, 25, 0]
    df = pl.DataFrame({"county": [f"c{i}" for i in range(len(counts))], "cancer": counts})
    return pp.release_table(df, keys="county", count="cancer", h=h, receiver=POI)


def _margins() -> pp.MarginRelease:
    df = pl.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 0, 1], "n": [3, 30, 40, 50]})
    return pp.release_table_with_margins(
        df, keys=["a", "b"], count="n", h=5, receiver=pp.PoissonReceiver(1, 40), margins="rows"
    )


def _linear() -> pp.LinearRelease:
    df = pl.DataFrame({"y": [1.0, 2.0, 6.0, 3.0], "g": [1, 1, 2, 2]})
    stats = [("all", "mean", "true"), ("g1", "mean", "g = 1")]
    return pp.release_linear(df, value="y", statistics=stats, r1=1.0, r2=4.0)


def _group_means() -> pp.GroupMeansRelease:
    df = pl.DataFrame({"g": ["a", "a", "b", "b", "b"], "y": [1.0, 3.0, 2.0, 2.0, 5.0]})
    return pp.release_group_means(df, value="y", group="g", r1=1.0, r2=4.0)


RELEASES: dict[str, Callable[[], Any]] = {
    "table": _table,
    "mean": lambda: pp.release_mean([1.0, 2.0, 6.0], r1=1.0, r2=4.0),
    "noisy mean": lambda: pp.release_mean(
        [1.0, 2.0, 6.0, 4.0], r1=1.0, r2=4.0, noise=("gaussian", 1.0), delta=0.05, rng=0
    ),
    "group means": _group_means,
    "linear": _linear,
    "margins": _margins,
}


# ------------------------------------------------------------------ exports


def test_release_api_is_exported_lazily() -> None:
    names = [
        "release_table",
        "release_mean",
        "release_group_means",
        "release_linear",
        "release_table_with_margins",
        "calibrate_threshold",
        "calibrate_mean",
        "verify_certificate",
        "write_release",
        "TableRelease",
        "MeanRelease",
        "GroupMeansRelease",
        "LinearRelease",
        "MarginRelease",
        "PoissonReceiver",
        "NegativeBinomialReceiver",
        "SmallCellReceiver",
        "Verification",
    ]
    for name in names:
        assert name in pp.__all__
        assert getattr(pp, name) is not None
    assert pp.__all__ == sorted(pp.__all__)
    for name in pp.__all__:  # every export resolves
        getattr(pp, name)
    assert callable(pp.certify) and callable(pp.audit)  # the functions, not the subpackages
    code = (
        "import sys, persuasive as pp; assert 'polars' not in sys.modules; "
        "pp.PoissonReceiver; assert 'polars' not in sys.modules; pp.release_table; "
        "assert 'polars' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------ repr


@pytest.mark.parametrize("name", list(RELEASES))
def test_repr_is_one_short_line_with_kappa(name: str) -> None:
    rel = RELEASES[name]()
    text = repr(rel)
    assert len(text) < 200, text
    assert "\n" not in text
    assert "κ=" in text and type(rel).__name__ in text
    assert ("holds" in text) == bool(rel.guarantee["holds"])


def test_repr_of_certificate_verification_and_refusal(tmp_path: Path) -> None:
    cert = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 2.5).certify(
        pp.ExactMean()
    )
    assert len(repr(cert)) < 200 and "κ=2.386" in repr(cert) and "Prop 7" in repr(cert)
    folder = _table().write(tmp_path / "out")
    check = verify_certificate(folder / "certificate.json", published=folder)
    assert len(repr(check)) < 200 and "κ=" in repr(check) and "verified" in repr(check)
    df = pl.DataFrame({"y": [1.0, 2.0, 6.0, 3.0]})
    diff = [("all", "mean", "true"), ("no3", "sum", "row_id != 3")]
    refused = pp.release_linear(df, value="y", statistics=diff, r1=1.0, r2=4.0)
    assert "refused" in repr(refused) and "κ=∞" in repr(refused) and len(repr(refused)) < 200


# ------------------------------------------------------------------ HTML


def _own_text(parsed: _Parsed, statement: str) -> str:
    """The HTML's text that the display writes itself: without the guarantee sentence (another
    module's) and without the published values."""
    text = " ".join(parsed.text).replace(statement, "")
    for cell in parsed.cells:
        text = text.replace(cell, "")
    return text


@pytest.mark.parametrize("name", list(RELEASES))
def test_html_is_well_formed_with_statement_and_kappa(name: str) -> None:
    rel = RELEASES[name]()
    parsed = parse(rel._repr_html_())
    text = " ".join(parsed.text)
    statement = str(rel.guarantee["statement"])
    assert statement in text
    assert "κ = " in text
    own = _own_text(parsed, statement)
    for symbol in ("_", "^", "Release(", "<", "{"):
        assert symbol not in own, (symbol, own)


def test_html_never_shows_a_suppressed_count() -> None:
    rel = _table([3, 4, 12, 25, 0])
    parsed = parse(rel._repr_html_())
    values = parsed.cells[1::2]  # (county, cancer) per row
    assert values == ["suppressed", "suppressed", "12", "25", "suppressed"]
    assert "3" not in parsed.cells and "4" not in parsed.cells
    big = _table([SECRET[0], SECRET[1], 12345], h=5000)
    for text in (big._repr_html_(), repr(big)):
        assert all(str(s) not in text and f"{s:,}" not in text for s in SECRET)
    assert "12345" in big._repr_html_()
    margins = parse(_margins()._repr_html_())
    assert margins.cells[:4] == ["0", "0", "suppressed", "primary"]
    assert "3" not in margins.cells


def test_html_shows_the_first_rows_and_how_many() -> None:
    rel = _table(list(range(30)))
    parsed = parse(rel._repr_html_())
    assert len(parsed.cells) == 2 * 10
    assert "first 10 of 30 rows" in " ".join(parsed.text)


def test_html_escapes_what_it_shows() -> None:
    df = pl.DataFrame({"county": ["<b>&x</b>", "o'k"], "cancer": [7, 9]})
    rel = pp.release_table(df, keys="county", count="cancer", h=5, receiver=POI)
    html = rel._repr_html_()
    assert "<b>" not in html and "&lt;b&gt;&amp;x&lt;/b&gt;" in html
    assert parse(html).cells[0] == "<b>&x</b>"


def test_html_of_certificate_and_verification(tmp_path: Path) -> None:
    rel = _table()
    parsed = parse(rel.certificate._repr_html_())
    text = " ".join(parsed.text)
    assert rel.certificate.explain() in text and "κ = 0.2042" in text
    assert "_" not in text and "^" not in text
    folder = rel.write(tmp_path / "out")
    check = verify_certificate(folder / "certificate.json", published=folder)
    text = " ".join(parse(check._repr_html_()).text)
    assert "verified" in text and rel.guarantee["statement"] in text and "κ = " in text


# ------------------------------------------------------------------ write(folder)


@pytest.mark.parametrize("name", list(RELEASES))
def test_write_folder_verifies(tmp_path: Path, name: str) -> None:
    rel = RELEASES[name]()
    folder = rel.write(tmp_path / "released")
    assert folder == tmp_path / "released" and folder.is_dir()
    assert (folder / "certificate.json").is_file()
    check = verify_certificate(folder / "certificate.json", published=folder)
    assert check.ok and check.published_checked, check.mismatches
    assert check.statement == rel.guarantee["statement"]


def test_write_options(tmp_path: Path) -> None:
    rel = _table()
    folder = rel.write(tmp_path / "out", format="parquet", report=True)
    assert (folder / "released.parquet").is_file() and (folder / "report" / "report.html").exists()
    with pytest.raises(pp.ValidationError, match=r"not empty|exists|force"):
        rel.write(folder)
    assert rel.write(folder, force=True) == folder
    assert sorted(p.name for p in folder.iterdir()) == [
        ".persuasive-output.json",
        "certificate.json",
        "released.csv",
    ]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(pp.ValidationError):
        rel.write(mine, force=True)  # never replaces a folder persuasive did not write
    assert (mine / "notes.txt").read_text() == "keep"
    with pytest.raises(pp.ValidationError, match="format must be one of csv, parquet"):
        rel.write(tmp_path / "x", format="xlsx")


def test_refused_linear_release_writes_nothing(tmp_path: Path) -> None:
    df = pl.DataFrame({"y": [1.0, 2.0, 6.0, 3.0]})
    diff = [("all", "mean", "true"), ("no3", "sum", "row_id != 3")]
    refused = pp.release_linear(df, value="y", statistics=diff, r1=1.0, r2=4.0)
    parse(refused._repr_html_())
    with pytest.raises(pp.ValidationError, match="nothing to publish"):
        refused.write(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_write_release_takes_a_string_folder(tmp_path: Path) -> None:
    doc, files = pp.write_release(_table(), str(tmp_path / "w"))
    assert files["certificate"] == tmp_path / "w" / "certificate.json"
    assert doc["guarantee"]["statement"] == _table().guarantee["statement"]


def test_write_never_replaces_the_folder_holding_the_input(tmp_path: Path) -> None:
    """``rel.write(folder, force=True)`` refuses a folder that holds the file the release was
    read from, as ``--out DIR --force`` does; the input is untouched."""
    import persuasive as pp

    folder = tmp_path / "work"
    folder.mkdir()
    data = folder / "counts.csv"
    data.write_text("k,n\na,3\nb,12\na,4\nb,7\n", encoding="utf-8")
    keyed = folder / "table.csv"
    keyed.write_text("k,n\na,3\nb,12\n", encoding="utf-8")
    rel = pp.release_table(keyed, keys="k", count="n", h=5, receiver=pp.SmallCellReceiver(0.2))
    assert rel.inputs == (keyed,)
    for target in (folder, tmp_path):
        with pytest.raises(pp.PersuasiveError):
            rel.write(target, force=True)
    assert keyed.read_text(encoding="utf-8") == "k,n\na,3\nb,12\n"
    means = pp.release_group_means(pp.DataFile(data), value="n", group="k", r1=1.0, r2=4.0)
    with pytest.raises(pp.PersuasiveError):
        means.write(folder, force=True)
    assert data.is_file()
