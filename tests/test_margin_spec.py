"""parse_margins (persuasive.margins.margin_spec): dimensions by position are ASCII digits."""

from __future__ import annotations

import re

import pytest

from persuasive.errors import ValidationError
from persuasive.margins.table import parse_margins  # the old import path still works


def test_positions_are_ascii_digits_and_others_one_error() -> None:
    dims = ["a", "b"]
    assert parse_margins("1", dims) == parse_margins("b", dims) == parse_margins([[1]], dims)
    assert parse_margins(" 0 ,b", dims) == parse_margins("rows,cols", dims)
    # '²'.isdigit() is true and int('²') raises: it was an internal error (exit 3); the
    # Arabic-Indic zero was read as dimension 0
    for token in ("\u00b2", "\u0660", "1.0"):
        with pytest.raises(ValidationError, match=re.escape(f"missing dimension {token!r}")):
            parse_margins(token, dims)
    with pytest.raises(ValidationError, match=re.escape("positions must be in 0..1")):
        parse_margins("-1", dims)
