"""'1 prior sd', '2 prior sds': the noun agrees with r0 in every message that states it."""

from __future__ import annotations

import re

import pytest

from persuasive._wording import prior_sds
from persuasive.linear.advice import linear_noise_advice
from persuasive.release.mean_advice import noise_advice
from persuasive.release.mean_results import receivers_words
from persuasive.report.kinds.mean import MeanParams

#: a number followed by the noun, singular or plural
PHRASE = re.compile(r"(\d+(?:\.\d+)?) prior (sds?)\b")


def _agrees(text: str) -> list[str]:
    """Every "<number> prior sd(s)" of ``text``; fails if a noun disagrees with its number."""
    found = PHRASE.findall(text)
    for number, noun in found:
        assert noun == ("sd" if float(number) == 1.0 else "sds"), (number, noun, text)
    return [f"{a} prior {b}" for a, b in found]


def test_prior_sds() -> None:
    assert [prior_sds(v) for v in (1.0, 1, 0.5, 2.0, 1.38)] == [
        "1 prior sd",
        "1 prior sd",
        "0.5 prior sds",
        "2 prior sds",
        "1.38 prior sds",
    ]
    assert prior_sds(1.0, "1.000") == "1.000 prior sd"


@pytest.mark.parametrize(("r0", "want"), [(1.0, "1 prior sd"), (2.0, "2 prior sds")])
def test_mean_advice_agrees(r0: float, want: str) -> None:
    text = noise_advice(0.1, 4.0, 0.1, 1.0, 0.05, max_person_error=r0)
    assert text is not None and want in _agrees(text)


def test_mean_advice_offer_agrees() -> None:
    # against Prop 7's class the advice offers the largest r0 that pays (1.38 here)
    text = noise_advice(1.0, 4.0, 1.0, None, 0.05)
    assert text is not None and _agrees(text)


@pytest.mark.parametrize(("r0", "want"), [(1.0, "1 prior sd"), (0.5, "0.5 prior sds")])
def test_release_summary_agrees(r0: float, want: str) -> None:
    p = MeanParams(1.0, 4.0, 8.0, 1.0, 0.05, "x", max_person_error=r0)
    assert want in _agrees(receivers_words(p))


@pytest.mark.parametrize(("r0", "v"), [(1.0, None), (3.0, 1.0)])
def test_linear_advice_agrees(r0: float, v: float | None) -> None:
    text = linear_noise_advice(1.0, 4.0, 0.5, max_stat_sd=v, delta=0.05, max_person_error=r0)
    assert text is not None
    assert prior_sds(r0) in _agrees(text)
