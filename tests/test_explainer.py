"""The marimo explainer (examples/explainer.py) runs, and its κ are the paper's closed forms.

The notebook is plain Python: ``python examples/explainer.py`` runs every cell once, and
``app.run()`` returns the cells' outputs and definitions (``app.run(defs=...)`` replaces the
cell that turns the sliders into numbers, i.e. moves the sliders). Each κ is compared with a
value computed here independently: r1 + log r2 (Prop 7) and −log α (Prop 8) with ``math.log``,
α of a Poisson Receiver from scipy's cdf.
"""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import matplotlib
import pytest
from scipy import stats

matplotlib.use("Agg")
import matplotlib.pyplot as plt

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "explainer.py"


def _close_up(value: float, exact: float) -> None:
    """A certified κ is the exact value rounded up to a float: at or just above it."""
    assert value >= exact * (1 - 1e-15)
    assert value == pytest.approx(exact, rel=1e-12, abs=1e-15)


@pytest.fixture(scope="module")
def app() -> Any:
    spec = importlib.util.spec_from_file_location("persuasive_explainer", NOTEBOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module.app
    plt.close("all")


def test_runs_as_a_script() -> None:
    proc = subprocess.run(
        [sys.executable, str(NOTEBOOK)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    expected = f"Prop 7 kappa = {1 + math.log(4):.6f}; Prop 8 kappa = {-math.log(0.2):.6f}"
    assert expected in proc.stdout


def test_default_sliders_give_the_closed_forms(app: Any) -> None:
    _outputs, defs = app.run()
    # the defaults of the sliders, as the notebook's text documents them
    assert (defs["r1"].value, defs["r2"].value, defs["h"].value) == (1.0, 4.0, 10)
    assert defs["alpha"].value == 0.2 and defs["source"].value == "state α"
    _close_up(defs["kappa_mean"], 1.0 + math.log(4.0))  # Prop 7: r1 + log r2
    _close_up(defs["kappa_table"], -math.log(0.2))  # Prop 8: -log alpha
    # the Receivers drawn attain the certified κ, and the Gaussian one is in the class
    assert defs["in_class"] is True
    assert defs["gain_mean"] == pytest.approx(defs["kappa_mean"], rel=1e-9)
    assert defs["gain_table"] == pytest.approx(defs["kappa_table"], rel=1e-9)
    assert isinstance(defs["figure"], matplotlib.figure.Figure)


@pytest.mark.parametrize(
    ("r1", "r2", "h", "poisson_range"),
    [(2.5, 1.3, 7, (0.5, 5.0)), (0.3, 12.0, 3, (0.0, 2.0)), (5.0, 20.0, 40, (1.0, 40.0))],
)
def test_moved_sliders(
    app: Any, r1: float, r2: float, h: int, poisson_range: tuple[float, float]
) -> None:
    defs_in = {
        "r1_value": r1,
        "r2_value": r2,
        "h_value": h,
        "use_poisson": True,
        "alpha_value": 0.2,
        "poisson_range": poisson_range,
    }
    _outputs, defs = app.run(defs=defs_in)
    _close_up(defs["kappa_mean"], r1 + math.log(r2))
    alpha = float(stats.poisson.cdf(h - 1, poisson_range[1]))  # P_Poi(mu+)(X < h)
    assert defs["alpha_h"] == pytest.approx(alpha, rel=1e-10)
    assert defs["kappa_table"] == pytest.approx(-math.log(alpha), rel=1e-9, abs=1e-12)
    assert defs["in_class"] is True
    assert defs["gain_mean"] == pytest.approx(r1 + math.log(r2), rel=1e-9)
    assert defs["gain_table"] == pytest.approx(defs["kappa_table"], rel=1e-9, abs=1e-12)
