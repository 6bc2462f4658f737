"""Counts at the limits of 64-bit integers, and posteriors too large to hold, in a release
with margins: exact counts, one-line refusals, never a wrapped total nor a crash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from persuasive.classes.receivers import PoissonReceiver
from persuasive.cli import app
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.margins import MarginTable, margin_sums, posterior
from persuasive.margins.table import MAX_TOTAL
from persuasive.release.margins import release_table_with_margins

REC = PoissonReceiver(2, 8)


def test_integer_counts_above_2_53_are_kept_exactly() -> None:
    big = 2**62 + 1  # float64 would round it to 2**62
    t = MarginTable(np.array([[big, 3], [1, 5]], dtype=np.int64), h=3, margins="rows")
    assert int(t.counts[0, 0]) == big
    assert int(margin_sums(t.counts, (0,))[0]) == big + 3  # Python's exact sum


def test_counts_adding_up_past_2_63_are_refused_naming_the_total() -> None:
    counts = np.array([[2**62, 2**62], [1, 1]], dtype=np.int64)
    exact = sum(int(c) for c in counts.ravel())  # computed by Python's integers
    with pytest.raises(ValidationError) as info:
        MarginTable(counts, h=3, margins="rows")
    assert str(info.value).startswith(f"counts add up to {exact}, above 2**63 - 1")
    assert exact > MAX_TOTAL


def test_an_unsigned_count_above_2_63_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"entry \(0, 1\) is 9223372036854775808"):
        MarginTable(np.array([[1, 2**63]], dtype=np.uint64), h=3, margins="rows")


@pytest.mark.parametrize("bad", [[[-1, 2]], [[1.5, 2]]])
def test_negative_and_fractional_counts_keep_their_messages(bad: list[list[float]]) -> None:
    with pytest.raises(ValidationError, match="counts must be non-negative"):
        MarginTable(np.array(bad), h=3, margins="rows")


def test_a_total_past_2_63_is_one_line_exit_2_on_the_command_line(tmp_path: Path) -> None:
    data = tmp_path / "t.csv"
    data.write_text(f"a,b,n\n1,x,{2**62}\n2,y,5\n1,y,{2**62}\n2,x,1\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["release", "table", str(data), "--keys", "a,b", "--count", "n", "--h", "3"]
    args += ["--poisson-mean", "2:8", "--margins", "rows,cols", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "above 2**63 - 1" in result.stderr and not out.exists()


def test_a_posterior_grid_above_max_grid_is_refused_naming_the_widest_cell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 2 x 2 with row and column margins: the four cells form one component; the classical rule
    # hides all four, and the cell of count 900 can then take 0..(its row's hidden total)
    df = pl.DataFrame({"a": ["p", "p", "q", "q"], "b": ["x", "y", "x", "y"], "n": [1, 900, 40, 50]})
    monkeypatch.setattr(posterior, "MAX_GRID", 1000)
    with pytest.raises(UnsupportedCombinationError) as info:
        release_table_with_margins(
            df, keys=["a", "b"], count="n", h=3, receiver=REC, margins="rows,cols"
        )
    text = str(info.value)
    assert "\n" not in text and "more than MAX_GRID = 1,000" in text
    assert "suppressed cell (a='p', b='y')" in text  # the cell of the widest support


def test_the_grid_check_leaves_ordinary_tables_alone() -> None:
    df = pl.DataFrame({"a": ["p", "p", "q", "q"], "b": ["x", "y", "x", "y"], "n": [1, 900, 40, 50]})
    rel = release_table_with_margins(
        df, keys=["a", "b"], count="n", h=3, receiver=REC, margins="rows,cols"
    )
    assert rel.published["n"].to_list()[1:] == [900, 40, 50]


def test_a_release_from_a_frame_publishes_counts_above_2_53_exactly(tmp_path: Path) -> None:
    big = 2**60 + 1  # float64 would round it to 2**60
    df = pl.DataFrame({"a": ["p", "p", "q", "q"], "b": ["x", "y", "x", "y"], "n": [big, 7, 9, 5]})
    rel = release_table_with_margins(
        df, keys=["a", "b"], count="n", h=3, receiver=REC, margins="rows"
    )
    assert rel.published["n"].to_list()[0] == big
    rel.write(tmp_path / "out")
    text = (tmp_path / "out" / "released.csv").read_text(encoding="utf-8")
    assert str(big) in text and str(big + 7) in (tmp_path / "out" / "margins.csv").read_text()
