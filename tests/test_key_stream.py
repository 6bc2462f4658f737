"""persuasive.files.key_stream.increasing against Python's tuple order.

Python compares strings by code point, which is the order of their UTF-8 bytes, and tuples
lexicographically: the oracle is ``all(rows[i] < rows[i + 1])``. The tables are read from
several Parquet files so that consecutive keys also meet across the batches of the stream.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from persuasive.files.key_stream import increasing

KEYS = st.lists(
    st.tuples(st.integers(-3, 3), st.text(alphabet="ab\u00e9\U0001f600", max_size=2)),
    max_size=30,
)


@settings(max_examples=80, deadline=None)
@given(rows=KEYS, cuts=st.lists(st.integers(0, 30), max_size=4), sort=st.booleans())
def test_increasing_is_the_strict_order_of_the_rows(
    tmp_path_factory: object, rows: list[tuple[int, str]], cuts: list[int], sort: bool
) -> None:
    if sort:
        rows = sorted(set(rows))
    folder = Path(tmp_path_factory.mktemp("keys"))  # type: ignore[attr-defined]
    bounds = sorted({0, len(rows), *(c for c in cuts if c < len(rows))})
    files = []
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        f = folder / f"part-{i:03d}.parquet"
        pl.DataFrame(rows[a:b], schema={"x": pl.Int64, "y": pl.String}, orient="row").write_parquet(
            f
        )
        files.append(f)
    frame = (
        pl.scan_parquet(files) if files else pl.LazyFrame(schema={"x": pl.Int64, "y": pl.String})
    )
    want = all(rows[i] < rows[i + 1] for i in range(len(rows) - 1))
    assert increasing(frame, ["x", "y"]) == want
    one = [r[1] for r in rows]
    assert increasing(frame, ["y"]) == all(one[i] < one[i + 1] for i in range(len(one) - 1))


def test_a_missing_key_is_not_increasing() -> None:
    frame = pl.LazyFrame({"k": [1, None, 3]})
    assert increasing(frame, ["k"]) is False
    assert increasing(pl.LazyFrame({"k": [1, 2, 3]}), ["k"]) is True
