"""The inputs of a release with margins (persuasive.release.margins_input): totals given as a
frame or file that do not add up are named as the file names them."""

from __future__ import annotations

import re

import polars as pl
import pytest

from persuasive.classes.receivers import PoissonReceiver
from persuasive.errors import ValidationError
from persuasive.release.margins import release_table_with_margins


@pytest.mark.parametrize(("margin", "row"), [("b", 1), ("total", 0)])
def test_totals_that_do_not_add_up_name_the_margin_and_the_entry(margin: str, row: int) -> None:
    cells = pl.DataFrame({"a": ["x", "x", "y", "y"], "b": [1, 2, 1, 2], "n": [1, 30, 40, 50]})
    b_tot = cells.group_by("b").agg(pl.col("n").sum()).sort("b")  # the sums, computed here
    given = pl.DataFrame(
        {
            "margin": ["b", "b", "total"],
            "a": [None, None, None],
            "b": [*b_tot["b"].to_list(), None],
            "total": [*b_tot["n"].to_list(), int(cells["n"].sum())],
        },
        schema_overrides={"a": pl.String},
    )
    kw = dict(keys=["a", "b"], count="n", h=3, receiver=PoissonReceiver(1.0, 40.0))
    assert release_table_with_margins(cells, margins=given, **kw).table.margins == ((), (1,))
    i = given["margin"].to_list().index(margin) + row
    true = int(given["total"][i])
    off = given.with_columns(total=pl.col("total") + (pl.int_range(pl.len()) == i).cast(int))
    where = "b=2" if margin == "b" else "the grand total"
    said = (
        f"margins: the total of margin {margin!r} at ({where}) is {true + 1} in the totals "
        f"given, but the cells add up to {true}"
    )
    with pytest.raises(ValidationError, match="^" + re.escape(said)):
        release_table_with_margins(cells, margins=off, **kw)
