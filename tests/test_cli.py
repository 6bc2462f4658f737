"""Tests of the ``persuasive`` command line: exit codes, JSON output and one-line errors.

The certified values are checked against closed forms computed here with scipy (docs/math.md §6–9),
not against the library's own output.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from scipy import stats
from typer.testing import CliRunner

from persuasive.cli import app
from persuasive.spec import example_paths

runner = CliRunner()
EXAMPLES = {p.stem: p for p in example_paths()}

#: name -> (exit status, certified kappa from an independent closed form, or None)
EXPECTED: dict[str, tuple[int, float | None]] = {
    # Gaussian sigma = 1: delta(k) = Phi(1/2 - k), smallest kappa at delta = 1/2 - Phi^-1(delta)
    "prop6_gaussian": (0, 0.5 - stats.norm.ppf(0.31)),
    "prop6_gaussian_fails": (1, 0.5 - stats.norm.ppf(0.25)),
    # Laplace b = 1: the loss is at most 1/b = 1, attained with probability 1/2
    "prop6_laplace": (0, 1.0),
    # 4-RR(2): P(loss > 0) = e^2 / (e^2 + 3) = 0.7112 <= 0.72, so kappa = 0 already
    "prop6_randomized_response": (0, 0.0),
    "prop7_exact_mean": (0, 1.0 + math.log(4.0)),
    "prop8_cell_suppression": (0, -math.log(0.2)),
    # D_2(N(0, 4) || N(1, 4)) = alpha / (2 sigma^2)
    "appc_renyi_gaussian": (0, 2.0 / (2.0 * 2.0**2)),
    # KL(Lap(0, 1) || Lap(1, 1)) = e^{-1} + 1 - 1
    "appc_kl_laplace": (0, math.exp(-1.0)),
}


def run(*args: str) -> Any:
    return runner.invoke(app, list(args))


def spec_text(**definition: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "kind": "pp",
        "kappa": 1.0,
        "delta": 0.31,
        "scores": [{"type": "log"}],
        "priors": {"class": "neighbours"},
    }
    d.update(definition)
    return {"description": "test", "mechanism": {"type": "gaussian", "sigma": 1.0}, "definition": d}


def write(tmp_path: Path, data: dict[str, Any] | str, name: str = "spec.toml") -> Path:
    f = tmp_path / name
    f.write_text(data if isinstance(data, str) else tomli_w.dumps(data), encoding="utf-8")
    return f


def test_every_expected_example_is_bundled() -> None:
    assert set(EXPECTED) <= set(EXAMPLES)


# --------------------------------------------------------------------------------------------
# certify / audit each bundled spec
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_certify_example(name: str) -> None:
    status, kappa = EXPECTED[name]
    result = run("certify", str(EXAMPLES[name]))
    assert result.exit_code == status, result.output
    assert "basis" in result.stdout and name in result.stdout
    as_json = run("certify", str(EXAMPLES[name]), "--json")
    assert as_json.exit_code == status
    payload = json.loads(as_json.stdout)
    assert payload["spec"] == str(EXAMPLES[name])
    assert payload["holds"] is (status == 0)
    assert payload["basis"]
    if kappa is not None:
        assert float(payload["kappa"]) == pytest.approx(kappa, abs=1e-6)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_audit_example(name: str) -> None:
    status, kappa = EXPECTED[name]
    result = run("audit", str(EXAMPLES[name]), "--json", "--seed", "7")
    assert result.exit_code == status, result.output
    payload = json.loads(result.stdout)
    assert payload["spec"] == str(EXAMPLES[name])
    assert payload["holds"] is (status == 0)
    assert {"kappa", "method", "witness"} <= set(payload)
    if kappa is not None:  # an audit is a lower bound: it never exceeds the exact worst case
        assert float(payload["kappa"]) <= kappa + 1e-6
    human = run("audit", str(EXAMPLES[name]), "--quiet")
    assert human.exit_code == status
    assert "audited κ" in human.stdout


def test_examples_command() -> None:
    result = run("examples", "--quiet")
    assert result.exit_code == 0, result.output
    for name in EXAMPLES:
        assert name in result.stdout
    assert f"{len(EXAMPLES)} of {len(EXAMPLES)} examples reproduced" in result.stdout


def test_examples_json() -> None:
    result = run("examples", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["name"] for r in rows} == set(EXAMPLES)
    for r in rows:
        assert r["ok"] and r["audit_below_certificate"] and not r["errors"]
        assert r["verdict"] == r["expected"]
        assert {"kappa", "basis"} <= set(r["certificate"])


# --------------------------------------------------------------------------------------------
# Bad input: exit 2, one line on stderr naming the field, no traceback
# --------------------------------------------------------------------------------------------

BAD_SPECS = [
    (
        {**spec_text(), "mechanism": {"type": "gaussian", "sigma": 1.0, "sigmaa": 2.0}},
        "unknown key 'mechanism.sigmaa'",
    ),
    (spec_text(kappa=-1.0), "definition.kappa must be in [0, inf]; got -1.0"),
    (spec_text(delta=1.0), "definition.delta must be in [0, 1); got 1.0"),
    (spec_text(delta=1.5), "definition.delta must be in [0, 1); got 1.5"),
    (spec_text(kappa=math.nan), "definition.kappa must be a finite number; got nan"),
    (
        spec_text(priors={"class": "gaussian_mean", "r1": 1.0, "r2": 1.0}),
        "definition.priors.r2 must be in (1, inf); got 1.0",
    ),
    (
        spec_text(priors={"class": "small_cell", "h": 0, "alpha": 0.2}),
        "definition.priors.h must be an integer in [1, ",
    ),
    (
        spec_text(priors={"class": "small_cell", "h": 3, "alpha": 1.5}),
        "definition.priors.alpha must be in (0, 1]; got 1.5",
    ),
    (
        spec_text(priors={"class": "small_cell", "h": 3, "alpha": 0.0}),
        "definition.priors.alpha must be in (0, 1]; got 0.0",
    ),
    (
        {**spec_text(), "mechanism": {"type": "cell_suppression", "h": 0}},
        "mechanism.h must be an integer in [1, ",
    ),
    ({**spec_text(), "extra": {}}, "unknown key 'extra'"),
]


@pytest.mark.parametrize("command", ["certify", "audit", "validate"])
@pytest.mark.parametrize(("data", "message"), BAD_SPECS)
def test_bad_spec_exit_2(tmp_path: Path, command: str, data: dict[str, Any], message: str) -> None:
    result = run(command, str(write(tmp_path, data)))
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert message in lines[0]
    if "must be" in message:  # the value given is named
        assert "; got " in lines[0]
    assert "Traceback" not in result.stderr


def test_malformed_toml_exit_2(tmp_path: Path) -> None:
    f = write(tmp_path, '[mechanism]\ntype = "gaussian"\nsigma = \n')
    result = run("certify", str(f))
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "is not valid TOML" in line and "line 3" in line and str(f) in line


def test_missing_file_exit_2(tmp_path: Path) -> None:
    result = run("certify", str(tmp_path / "nope.toml"))
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: spec file '{tmp_path / 'nope.toml'}' not found"
    result = run("audit", str(tmp_path / "nope.toml"), "--json")
    assert result.exit_code == 2 and result.stdout == ""


def test_bad_option_exit_2(tmp_path: Path) -> None:
    f = write(tmp_path, spec_text())
    assert run("audit", str(f), "--samples", "0").exit_code == 2
    assert run("audit", str(f), "--seed", "-1").exit_code == 2
    assert run("certify").exit_code == 2


def test_validate_prints_spec(tmp_path: Path) -> None:
    f = write(tmp_path, spec_text())
    result = run("validate", str(f))
    assert result.exit_code == 0
    assert "GaussianMechanism(sigma=1)" in result.stdout or "Gaussian(sigma=1)" in result.stdout
    payload = json.loads(run("validate", str(f), "--json").stdout)
    assert payload["definition"]["delta"] == 0.31
    assert payload["mechanism"] == {"mechanism": "GaussianMechanism", "sigma": 1.0}


def test_version() -> None:
    from persuasive import __version__

    result = run("version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"persuasive {__version__}"


def test_console_script_installed() -> None:
    exe = shutil.which("persuasive")
    cmd = [exe] if exe else [sys.executable, "-m", "persuasive.cli"]
    out = subprocess.run([*cmd, "version"], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.startswith("persuasive ")
    bad = subprocess.run(
        [*cmd, "certify", "no-such-spec.toml"], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: spec file 'no-such-spec.toml' not found"


# --------------------------------------------------------------------------------------------
# The README: its Python quick start runs, its set-up commands match CI
# --------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def _blocks(text: str, lang: str) -> list[str]:
    parts = text.split(f"```{lang}\n")[1:]
    return [p.split("```", 1)[0] for p in parts]


@pytest.mark.skipif(not (ROOT / "README.md").exists(), reason="no README beside the tests")
def test_readme_quickstart_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    theory, notebook = _blocks((ROOT / "README.md").read_text(encoding="utf-8"), "python")
    exec(compile(theory, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "True 2.386294361119891 Prop 7 (Bon et al. 2026)"
    kappa, method, holds = out[-1].split()
    assert float(kappa) <= 0.5 - stats.norm.ppf(0.31) + 1e-9
    assert (method, holds) == ("monte-carlo", "True")
    # The notebook block, from a copy of the repository's root (it reads examples/data/).
    shutil.copytree(ROOT / "examples" / "data", tmp_path / "examples" / "data")
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    exec(compile(notebook, "README.md", "exec"), scope)
    rel = scope["rel"]
    assert (tmp_path / "released" / "certificate.json").is_file()
    assert (tmp_path / "released" / "released.csv").is_file()
    assert rel.certificate.holds and rel.summary()["n_cells"] == 301  # type: ignore[attr-defined]


@pytest.mark.skipif(not (ROOT / ".ci" / "run").exists(), reason="no .ci/run beside the tests")
def test_readme_setup_commands_match_ci() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    commands = [b.strip() for b in _blocks(setup, "bash")]
    assert commands == [
        "pip install . && persuasive demo",
        "pip install -e '.[test]' && python -m pytest",
    ]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install --quiet -e '.[dev]'" in ci  # dev includes test
    assert "apt-get install -y -qq chromium" in ci  # the report's headless-browser test
    # CI runs the README's test command itself (quietly), as its last step.
    assert ci.rstrip().endswith(commands[1].replace("pip install -e", "pip install --quiet -e"))
