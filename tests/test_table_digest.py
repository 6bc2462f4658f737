"""The digest of a published table (persuasive.files.table_digest) against an independent
implementation, and the certificate's binding of a table by it.

The oracle builds each row's CSV line with Python's ``csv`` module (RFC 4180 quoting of the
fields that need it) and hashes the definition of the module docstring directly. Checked: the
digest of random tables (text with commas, quotes, line breaks and unicode, empty strings and
missing values, counts up to 2^63 - 1) equals the oracle's; it does not depend on how the rows
are cut into parts, nor on whether one file or a folder of part files holds them; any change of
a value, of a type, of the order or of the number of rows changes it; a release folder whose
table is rewritten as part files still verifies, and a changed part does not; a certificate
written before tables were bound by their rows (the file's SHA-256 and size) still verifies.
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from persuasive.classes.receivers import PoissonReceiver
from persuasive.files import table_digest as td
from persuasive.release.tables import release_table
from persuasive.report.kinds import file_facts
from persuasive.report.verify import verify_certificate

RECEIVER = PoissonReceiver(0.5, 3.0)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)


def _oracle(rows: list[tuple[str | None, int | None]], chunk_rows: int) -> str:
    """The digest of a (String key, Int64 count) table, computed from its definition."""

    def line(key: str | None, count: int | None) -> bytes:
        out = io.StringIO()
        fields = ["" if count is None else str(count)]
        if key is None:
            out.write("")
        elif key == "":
            out.write('""')
        else:
            # "\r\n" as the line terminator, so that a field holding either character of a
            # line break is quoted (Python quotes the characters of its line terminator)
            w = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
            w.writerow([key])
        return (out.getvalue().removesuffix("\r\n") + "," + fields[0] + "\n").encode("utf-8")

    h = hashlib.sha256(b"persuasive table digest 1\n")
    header = json.dumps([["k", "String"], ["n", "Int64"]], separators=(",", ":"))
    h.update(header.encode() + b"\n" + str(len(rows)).encode() + b"\n")
    for start in range(0, len(rows), chunk_rows):
        chunk = b"".join(line(k, c) for k, c in rows[start : start + chunk_rows])
        h.update(hashlib.sha256(chunk).digest())
    return h.hexdigest()


def _frame(rows: list[tuple[str | None, int | None]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"k": pl.String, "n": pl.Int64}, orient="row")


ROWS = st.lists(
    st.tuples(
        st.one_of(st.none(), TEXT),
        st.one_of(st.none(), st.integers(0, 2**63 - 1)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(rows=ROWS, chunk=st.sampled_from([1, 3, 7, 64]), cuts=st.lists(st.integers(0, 40)))
def test_digest_matches_an_independent_implementation(
    rows: list[tuple[str | None, int | None]], chunk: int, cuts: list[int]
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(td, "CHUNK_ROWS", chunk)
        frame = _frame(rows)
        whole = td.digest_frame(frame)
        assert whole["sha256"] == _oracle(rows, chunk)
        assert (whole["rows"], whole["chunk_rows"]) == (len(rows), chunk)
        parts = td.TableDigest(frame.schema)  # the same rows in parts of any sizes
        bounds = sorted({0, len(rows), *(c for c in cuts if c <= len(rows))})
        for a, b in itertools.pairwise(bounds):
            parts.update(frame.slice(a, b - a))
        assert parts.result() == whole


def test_every_change_changes_the_digest() -> None:
    frame = _frame([("01", 7), ("02", None), ("1", 12), ("", 5)])
    base = td.digest_frame(frame)["sha256"]
    changed = [
        frame.with_columns(pl.Series("n", [7, None, 12, 6])),  # a value
        frame.with_columns(pl.Series("n", [7, 0, 12, 5])),  # a missing value filled in
        frame.with_columns(pl.Series("k", ["1", "02", "1", ""])),  # a key (leading zero)
        frame.with_columns(pl.Series("k", ["01", "02", "1", None])),  # "" against missing
        frame.reverse(),  # the order
        frame.head(3),  # a row fewer
        frame.with_columns(pl.col("n").cast(pl.Int32)),  # a type
        frame.rename({"k": "key"}),  # a name
    ]
    digests = {td.digest_frame(f)["sha256"] for f in changed}
    assert base not in digests and len(digests) == len(changed)


def test_combine_refuses_a_wrong_number_of_chunks() -> None:
    with pytest.raises(ValueError, match="chunks"):
        td.combine([["k", "String"]], td.CHUNK_ROWS + 1, [hashlib.sha256().digest()])
    with pytest.raises(ValueError, match="32 bytes"):
        td.combine([["k", "String"]], 1, [b"short"])


def _release(tmp_path: Path, fmt: str) -> Path:
    df = pl.DataFrame({"k": [f"{i:03d}" for i in range(50)], "n": [i % 9 for i in range(50)]})
    rel = release_table(df, keys="k", count="n", h=5, receiver=RECEIVER)
    out = tmp_path / "out"
    rel.write(out, format=fmt)
    return out


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_table_rewritten_as_part_files_still_verifies(tmp_path: Path, fmt: str) -> None:
    out = _release(tmp_path, fmt)
    name = f"released.{fmt}"
    published = pl.read_csv(out / name, infer_schema=False) if fmt == "csv" else None
    table = pl.read_parquet(out / name) if fmt == "parquet" else published
    assert table is not None
    folder = tmp_path / "parts"
    (folder / name).mkdir(parents=True)
    for i, (a, b) in enumerate([(0, 13), (13, 40), (40, 50)]):  # Spark's layout
        part = folder / name / f"part-{i:05d}-abc-c000.{fmt}"
        piece = table.slice(a, b - a)
        piece.write_csv(part) if fmt == "csv" else piece.write_parquet(part)
    (folder / name / "_SUCCESS").write_bytes(b"")
    (folder / name / f".part-00000-abc-c000.{fmt}.crc").write_bytes(b"x")
    (folder / "certificate.json").write_bytes((out / "certificate.json").read_bytes())
    check = verify_certificate(folder / "certificate.json", published=folder)
    assert check.ok, check.mismatches
    # a part file in another order, or a count changed in one, is a mismatch
    last = folder / name / f"part-00002-abc-c000.{fmt}"
    piece = table.slice(40, 10).with_columns(pl.col("n").reverse())
    piece.write_csv(last) if fmt == "csv" else piece.write_parquet(last)
    check = verify_certificate(folder / "certificate.json", published=folder)
    assert not check.ok
    assert any("table.sha256" in m for m in check.mismatches), check.mismatches


def test_a_certificate_of_the_file_digest_form_still_verifies(tmp_path: Path) -> None:
    """Certificates written before tables were bound by their rows state the file's SHA-256
    and size; verify recomputes that form for them (and still catches a changed file)."""
    from persuasive.report.certificate import digest_of, dumps, loads

    out = _release(tmp_path, "csv")
    doc, _ = loads((out / "certificate.json").read_text(encoding="utf-8"), source="c")
    doc["publication"]["files"] = [file_facts("released.csv", out / "released.csv")]
    doc["digest"] = digest_of(doc)
    (out / "certificate.json").write_text(dumps(doc), encoding="utf-8")
    check = verify_certificate(out / "certificate.json", published=out)
    assert check.ok, check.mismatches
    (out / "released.csv").write_text(
        (out / "released.csv").read_text().replace("006,6", "006,7"), encoding="utf-8"
    )
    check = verify_certificate(out / "certificate.json", published=out)
    assert not check.ok
    assert any("publication.files[released.csv].sha256" in m for m in check.mismatches)


def test_a_table_that_does_not_read_back_with_its_digest_is_not_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release that gives the digest of its rows (an engine whose table stays on disk or in
    Spark) is checked against the digest read back from the written file: a mismatch is an
    internal error and leaves nothing."""
    from persuasive.files.output import OutputFolder
    from persuasive.release.pipeline import InternalError, publish
    from persuasive.release.streaming import StreamingTableRelease

    data = tmp_path / "t.csv"
    data.write_text("k,n\na,3\nb,9\nc,12\n", encoding="utf-8")
    rel = release_table(data, keys="k", count="n", h=5, receiver=RECEIVER, engine="streaming")
    right = rel.expected("released.csv")
    assert right == td.digest_frame(
        pl.DataFrame(
            {"k": ["a", "b", "c"], "n": [None, 9, 12]}, schema={"k": pl.String, "n": pl.Int64}
        )
    )
    wrong = {**right, "sha256": "0" * 64}
    monkeypatch.setattr(StreamingTableRelease, "expected", lambda self, name: wrong)
    with pytest.raises(InternalError, match="does not read back as released"):
        publish(rel, OutputFolder(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]
