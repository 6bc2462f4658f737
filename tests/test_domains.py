"""Parameter domains (persuasive._domains): one declaration per parameter, shared by the Python
API, the spec parser and the CLI lookup; and the import graph of the packages."""

from __future__ import annotations

import inspect
import json
import math
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    API_MECHANISMS,
    API_PRIOR_CLASSES,
    API_SCORES,
    invalid_value,
    valid_value,
)

import persuasive as pp
from persuasive import _domains as dm
from persuasive.classes import receivers
from persuasive.errors import ValidationError
from persuasive.spec import schema, spec_from_dict

# --------------------------------------------------------------------------------------------
# A Param checks and describes its domain
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("param", "text"),
    [
        (dm.THRESHOLD, "an integer in [1, 1000000]"),
        (dm.RELEASE["h"], "an integer in [2, 1000000]"),
        (dm.GAUSSIAN_SIGMA, "a real number in (0, inf)"),
        (dm.KAPPA, "a real number in [0, inf]"),
        (dm.DELTA, "a real number in [0, 1)"),
        (dm.SMALL_CELL_ALPHA, "a real number in (0, 1]"),
        (dm.RENYI_ORDER, "a real number in (1, inf)"),
        (dm.SEED, "an integer in [0, 9223372036854775807]"),
        (dm.F_DIVERGENCE, 'one of "kl", "tv", "chi2"'),
        (dm.ANCHORED, "true or false"),
        (dm.MEAN_RANGE, "a pair LO:HI of real numbers with 0 <= LO <= HI < inf"),
        (dm.KERNEL_MATRIX, "a 2-d array of numbers, e.g. [[0.75, 0.25], [0.25, 0.75]]"),
    ],
)
def test_domain_text(param: dm.Param, text: str) -> None:
    assert param.domain() == text


@pytest.mark.parametrize(
    ("param", "value", "message"),
    [
        (dm.THRESHOLD, 0, "h must be an integer in [1, 1000000]; got 0"),
        (dm.THRESHOLD, 1_000_001, "h must be an integer in [1, 1000000]; got 1000001"),
        (dm.THRESHOLD, 1e30, "h must be an integer in [1, 1000000]; got 1e+30"),
        (dm.THRESHOLD, 2.5, "h must be an integer; got 2.5"),
        (dm.THRESHOLD, math.inf, "h must be an integer; got inf"),
        (dm.THRESHOLD, True, "h must be an integer; got True"),
        (dm.THRESHOLD, "3", "h must be an integer; got '3'"),
        (dm.GAUSSIAN_SIGMA, 0.0, "h must be in (0, inf); got 0.0"),
        (dm.GAUSSIAN_SIGMA, math.inf, "h must be a finite number; got inf"),
        (dm.DELTA, 1.0, "h must be in [0, 1); got 1.0"),
        (dm.ANCHORED, 1, "h must be true or false; got 1"),
        (dm.F_DIVERGENCE, "hellinger", 'h must be one of "kl", "tv", "chi2"; got \'hellinger\''),
        (dm.MEAN_RANGE, (3.0, 1.0), "h must be a pair LO:HI of real numbers with 0 <= LO <= HI"),
        (dm.MEAN_RANGE, (-1.0, 1.0), "h (LO) must be in [0, inf); got -1.0"),
        (dm.MEAN_RANGE, (0.0, math.inf), "h (HI) must be a finite number; got inf"),
        (dm.PAIRS, [[0, -1]], "h[0][1] must be an integer in [0, inf); got -1"),
        (dm.PAIRS, [[0, 1, 2]], "h[0] must be a pair [i, j]; got [0, 1, 2]"),
        (dm.KERNEL_MATRIX, [[1.0], [1.0, 0.0]], "h must be rectangular: row 1 has 2 entries"),
        (dm.KERNEL_MATRIX, [[1.0, "a"]], "h[0][1] must be a number; got 'a'"),
        (dm.KERNEL_MATRIX, np.ones(3), "h must have 2 dimension(s); got shape (3,)"),
        (dm.KERNEL_MATRIX, [[1.0, math.nan]], "h must contain only finite numbers; entry (0, 1)"),
    ],
)
def test_check_rejects_with_the_standard_message(param: dm.Param, value: Any, message: str) -> None:
    with pytest.raises(ValidationError) as err:
        param.check("h", value)
    assert str(err.value).startswith(message)


def test_check_accepts_and_converts_at_the_bounds() -> None:
    assert dm.THRESHOLD.check("h", 1) == 1 and dm.THRESHOLD.check("h", dm.H_MAX) == dm.H_MAX
    assert dm.THRESHOLD.check("h", 5.0) == 5 and type(dm.THRESHOLD.check("h", np.int64(5))) is int
    assert dm.SEED.check("seed", dm.SEED_MAX) == 2**63 - 1
    assert dm.KAPPA.check("kappa", math.inf) == math.inf and dm.DELTA.check("delta", 0) == 0.0
    assert dm.SMALL_CELL_ALPHA.check("alpha", 1.0) == 1.0
    assert dm.ANCHORED.check("anchored", np.bool_(True)) is True
    assert dm.INDEX.check("i", None) is None  # optional without default: None is "absent"
    assert dm.PAIRS.check("pairs", ((0, 1), [2, 3])) == ((0, 1), (2, 3))
    got = dm.LINEAR_A.check("A", [[1, 2], [3, 4]])
    assert isinstance(got, np.ndarray) and got.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert dm.MEAN_RANGE.check("m", [0, 2]) == (0.0, 2.0)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_strategies_follow_the_declarations(data: st.DataObject) -> None:
    """What tests/strategies.py draws is inside (outside) each declared domain."""
    path, p = data.draw(st.sampled_from(list(dm.iter_params())))
    good = data.draw(valid_value(p))
    p.check(path, good)
    bad = data.draw(invalid_value(p))
    with pytest.raises(ValidationError):
        p.check(path, bad)


def test_every_declaration_is_documented_and_well_formed() -> None:
    seen = 0
    for path, p in dm.iter_params():
        seen += 1
        assert p.kind in dm.KINDS, path
        assert p.doc, f"{path} has no doc"
        assert p.domain(), path
        if p.low is not None and p.high is not None:
            assert p.low < p.high, path
        if p.kind == "str":
            assert p.choices, path
        if not p.required and p.default is not None:
            p.check(path, p.default)  # a default is inside its own domain
    assert seen > 60


# --------------------------------------------------------------------------------------------
# The CLI lookup
# --------------------------------------------------------------------------------------------


def test_release_lookup_by_option_name() -> None:
    assert dm.lookup("--negbin-size") is dm.lookup("negbin_size") is dm.RELEASE["negbin_size"]
    assert dm.check("--h", 7) == 7
    with pytest.raises(ValidationError, match=r"^--h must be an integer in \[2, 1000000\]; got 1$"):
        dm.check("--h", 1)
    with pytest.raises(ValidationError, match=r"^--r must be an integer in \[2, 1000000\]"):
        dm.check("--r", 10**30)
    with pytest.raises(ValidationError, match=r"^--seed must be an integer in \[0, "):
        dm.check("--seed", -1)
    with pytest.raises(
        ValidationError, match=r"^--samples must be an integer in \[2, 10000000000\]"
    ):
        dm.check("--samples", 10**11)
    with pytest.raises(ValidationError, match=r"^size must be in \(0, inf\); got 0"):
        dm.check("--negbin-size", 0, name="size")
    assert dm.check("--poisson-mean", (1, 40)) == (1.0, 40.0)
    assert dm.describe("--alpha") == "a real number in (0, 1]"
    with pytest.raises(KeyError, match="no declared domain for '--colour'"):
        dm.lookup("--colour")


def test_release_domains_are_the_api_domains() -> None:
    """A CLI option and the API argument it becomes accept the same values."""
    same = {
        "alpha": dm.RECEIVERS["small_cell"]["alpha"],
        "negbin_size": dm.RECEIVERS["negative_binomial"]["size"],
        "mean_max": dm.RECEIVERS["poisson"]["mean_max"],
        "r1": dm.PRIOR_CLASSES["gaussian_mean"]["r1"],
        "r2": dm.PRIOR_CLASSES["gaussian_mean"]["r2"],
        "max_mean_sd": dm.PRIOR_CLASSES["gaussian_mean"]["max_mean_sd"],
        "delta": schema.DEFINITION["delta"],
        "n_samples": schema.AUDIT["n_samples"],
        "seed": schema.AUDIT["seed"],
    }
    fields = ("kind", "low", "high", "low_open", "high_open", "allow_inf")
    for key, api in same.items():
        cli = dm.RELEASE[key]
        assert [getattr(cli, f) for f in fields] == [getattr(api, f) for f in fields], key
    # the release threshold is the mechanism's, from R_MIN (= the score's smallest r)
    assert dm.RELEASE["h"].low == dm.SCORE_R.low == receivers.R_MIN == 2
    assert dm.RELEASE["h"].high == dm.THRESHOLD.high == dm.SCORE_R.high == dm.H_MAX


# --------------------------------------------------------------------------------------------
# The spec uses the very declarations the API uses
# --------------------------------------------------------------------------------------------


def test_spec_tables_are_the_declared_registries() -> None:
    for kind in API_MECHANISMS:
        assert schema.MECHANISMS[kind][0] is dm.MECHANISMS[kind], kind
    for kind in API_SCORES:
        assert schema.SCORES[kind][0] is dm.SCORES[kind], kind
    for kind in API_PRIOR_CLASSES:
        assert schema.PRIOR_CLASSES[kind][0] is dm.PRIOR_CLASSES[kind], kind
    assert set(API_SCORES) == set(schema.SCORES) and set(API_PRIOR_CLASSES) == set(
        schema.PRIOR_CLASSES
    )
    assert set(API_MECHANISMS) == {
        k
        for k, (params, _) in schema.MECHANISMS.items()
        if all(p.kind != "table" for p in params.values())
    }
    assert schema.DEFINITION["kappa"] is dm.KAPPA
    for key in ("delta", "alpha", "risk"):
        p, q = schema.DEFINITION[key], dm.DEFINITION[key]
        assert (p.kind, p.low, p.high, p.low_open, p.high_open, p.choices) == (
            q.kind,
            q.low,
            q.high,
            q.low_open,
            q.high_open,
            q.choices,
        )


def _constructors() -> list[tuple[str, Any, dict[str, dm.Param]]]:
    return (
        [(f"mechanism {k}", API_MECHANISMS[k], dm.MECHANISMS[k]) for k in API_MECHANISMS]
        + [(f"score {k}", API_SCORES[k], dm.SCORES[k]) for k in API_SCORES]
        + [(f"class {k}", API_PRIOR_CLASSES[k], dm.PRIOR_CLASSES[k]) for k in API_PRIOR_CLASSES]
        + [(f"receiver {k}", cls, dm.RECEIVERS[k]) for k, (cls, _) in receivers.MODELS.items()]
        + [
            ("prior gaussian", pp.GaussianPrior, dm.PRIORS["gaussian"]),
            ("prior discrete", pp.DiscretePrior, dm.PRIORS["discrete"]),
            ("prior two_point", pp.TwoPointPrior, dm.PRIORS["two_point"]),
            ("preset pure_dp", pp.pure_dp, dm.PRESETS["pure_dp"]),
            ("preset probabilistic_dp", pp.probabilistic_dp, dm.PRESETS["probabilistic_dp"]),
            ("preset renyi_dp", pp.renyi_dp, dm.PRESETS["renyi_dp"]),
            ("mechanism linear_gaussian", pp.LinearGaussian, dm.MECHANISMS["linear_gaussian"]),
        ]
    )


@pytest.mark.parametrize(
    ("what", "api", "params"),
    _constructors(),
    ids=lambda x: getattr(x, "__qualname__", str(x))[:30],
)
def test_signatures_match_the_declarations(
    what: str, api: Any, params: dict[str, dm.Param]
) -> None:
    """Every declared parameter is an argument of the constructor, with the declared default."""
    signature = inspect.signature(api)
    for name, p in params.items():
        assert name in signature.parameters, f"{what}: no argument {name}"
        default = signature.parameters[name].default
        if p.required:
            assert default is inspect.Parameter.empty, f"{what}.{name} has a default"
        else:
            assert default == p.default, f"{what}.{name}: default {default!r} != {p.default!r}"


# --------------------------------------------------------------------------------------------
# The Python API and the spec parser agree on every value of every parameter
# --------------------------------------------------------------------------------------------

#: Valid values for the required parameters of each table (the one under test is replaced).
BASE: dict[str, Any] = {
    "A": [1.0, 2.0],
    "h": 3,
    "scale": 1.0,
    "sigma": 1.0,
    "epsilon": 1.0,
    "matrix": [[0.5, 0.5], [0.25, 0.75]],
    "s": 1.0,
    "r1": 1.0,
    "r2": 4.0,
    "alpha": 0.2,
}

#: Optional as domains (the constructors default to None) but refused as None by their class:
#: the bounded-error classes' r0.
CLASS_REQUIRED: dict[str, Any] = {"max_person_error": 1.0}
BASE.update(CLASS_REQUIRED)

#: (where in a spec, tag, registry of API constructors, the declared tables)
TABLES: list[tuple[str, str, dict[str, Any], dict[str, dict[str, dm.Param]]]] = [
    ("mechanism", "type", API_MECHANISMS, dm.MECHANISMS),
    ("definition.scores[0]", "type", API_SCORES, dm.SCORES),
    ("definition.priors", "class", API_PRIOR_CLASSES, dm.PRIOR_CLASSES),
]

FIELDS = [
    (where, tag, kind, name)
    for where, tag, api, tables in TABLES
    for kind in api
    for name in tables[kind]
]


def _document(where: str, table: dict[str, Any]) -> dict[str, Any]:
    definition: dict[str, Any] = {
        "kind": "pp",
        "kappa": 1.0,
        "scores": [{"type": "log"}],
        "priors": {"class": "neighbours"},
    }
    doc: dict[str, Any] = {"mechanism": {"type": "exact_mean"}, "definition": definition}
    if where == "mechanism":
        doc["mechanism"] = table
    elif where == "definition.priors":
        definition["priors"] = table
    else:
        definition["scores"] = [table]
    return doc


def _outcome(build: Any) -> str | None:
    try:
        build()
    except ValidationError as exc:
        return str(exc)
    return None


def _agree(where: str, name: str, api_msg: str | None, spec_msg: str | None) -> None:
    assert (api_msg is None) == (spec_msg is None), (api_msg, spec_msg)
    if api_msg is not None and spec_msg is not None:
        assert name in api_msg, api_msg
        # the spec names the key path, then says exactly what the API says
        assert spec_msg in (f"{where}.{api_msg}", f"{where}: {api_msg}"), (api_msg, spec_msg)


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_api_and_spec_agree_on_every_parameter(data: st.DataObject) -> None:
    where, tag, kind, name = data.draw(st.sampled_from(FIELDS))
    api = dict(TABLES_BY_WHERE[where][0])[kind]
    params = TABLES_BY_WHERE[where][1][kind]
    kwargs = {k: BASE[k] for k, p in params.items() if p.required or k in CLASS_REQUIRED}
    p = params[name]
    kwargs[name] = data.draw(st.one_of(valid_value(p), invalid_value(p)))
    api_msg = _outcome(lambda: api(**kwargs))
    spec_msg = _outcome(lambda: spec_from_dict(_document(where, {tag: kind, **kwargs})))
    _agree(where, name, api_msg, spec_msg)


TABLES_BY_WHERE = {where: (api, tables) for where, _, api, tables in TABLES}


@pytest.mark.parametrize(
    ("where", "kind", "values", "name"),
    [
        # the cases of the issue: accepted by the API, rejected by the spec, before
        ("definition.scores[0]", "small_cell_log", {"r": 1}, "r"),
        ("definition.scores[0]", "small_cell_log", {"r": 10**7}, "r"),
        ("mechanism", "cell_suppression", {"h": 10**18}, "h"),
        ("mechanism", "randomized_response", {"epsilon": 1.0, "k": 10**6}, "k"),
        ("definition.priors", "neighbours", {"anchored": 1}, "anchored"),
        ("definition.priors", "small_cell", {"h": 3, "alpha": 1.5}, "alpha"),
        ("definition.priors", "gaussian_mean", {"r1": 1.0, "r2": 1.0}, "r2"),
        ("mechanism", "finite_kernel", {"matrix": [0.5, 0.5]}, "matrix"),
    ],
)
def test_api_and_spec_agree_on_the_cases_of_the_issue(
    where: str, kind: str, values: dict[str, Any], name: str
) -> None:
    api, _ = TABLES_BY_WHERE[where]
    tag = "class" if where == "definition.priors" else "type"
    api_msg = _outcome(lambda: api[kind](**values))
    spec_msg = _outcome(lambda: spec_from_dict(_document(where, {tag: kind, **values})))
    assert api_msg is not None
    _agree(where, name, api_msg, spec_msg)


def _preset_document(kind: str, kappa: Any, extra: dict[str, Any]) -> dict[str, Any]:
    definition = {
        "kind": kind,
        "kappa": kappa,
        "scores": [{"type": "log"}],
        "priors": {"class": "neighbours"},
        **extra,
    }
    return {"mechanism": {"type": "exact_mean"}, "definition": definition}


PRESET_SPECS = {
    "pure_dp": lambda v: _preset_document("pp", v["epsilon"], {"delta": 0.0}),
    "probabilistic_dp": lambda v: _preset_document("pp", v["epsilon"], {"delta": v["delta"]}),
    "renyi_dp": lambda v: _preset_document(
        "ppe", v["epsilon"], {"risk": "renyi", "alpha": v["alpha"]}
    ),
}
PRESET_BASE = {"epsilon": 1.0, "delta": 0.1, "alpha": 2.0}
#: preset argument -> the spec key it becomes
SPEC_KEY = {"epsilon": "kappa", "delta": "delta", "alpha": "alpha"}


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_presets_and_spec_definitions_agree(data: st.DataObject) -> None:
    preset = data.draw(st.sampled_from(sorted(dm.PRESETS)))
    params = dm.PRESETS[preset]
    name = data.draw(st.sampled_from(sorted(params)))
    values = {k: PRESET_BASE[k] for k in params}
    values[name] = data.draw(st.one_of(valid_value(params[name]), invalid_value(params[name])))
    api_msg = _outcome(lambda: getattr(pp, preset)(**values))
    spec_msg = _outcome(lambda: spec_from_dict(PRESET_SPECS[preset](values)))
    assert (api_msg is None) == (spec_msg is None), (api_msg, spec_msg)
    if api_msg is not None and spec_msg is not None:
        # each names its own parameter (ε is epsilon, not kappa) and states the same domain
        assert api_msg.startswith(f"{name} must "), api_msg
        assert spec_msg.startswith(f"definition.{SPEC_KEY[name]} must "), spec_msg
        assert api_msg.split(" must ", 1)[1] == spec_msg.split(" must ", 1)[1]
    if api_msg is None:
        assert (
            getattr(pp, preset)(**values) == spec_from_dict(PRESET_SPECS[preset](values)).definition
        )


# --------------------------------------------------------------------------------------------
# No import circle between packages
# --------------------------------------------------------------------------------------------

#: Circles between packages owned by other engineers, still to be broken (each entry is an
#: edge "importer -> imported" of the package graph). The test fails when one disappears, so
#: that the entry is removed with the fix.
PENDING_EDGES: set[tuple[str, str]] = set()

_RECORDER = textwrap.dedent(
    """
    import builtins, importlib, json, pkgutil, sys

    edges = set()
    real_import = builtins.__import__
    real_import_module = importlib.import_module

    def record(importer, target):
        if importer and importer.startswith("persuasive") and target.startswith("persuasive"):
            edges.add((importer, target))

    def resolve(name, globals_, level):
        if not level:
            return name
        package = (globals_ or {}).get("__package__") or ""
        base = package.rsplit(".", level - 1)[0] if level > 1 else package
        return f"{base}.{name}" if name else base

    def hooked(name, globals=None, locals=None, fromlist=(), level=0):
        module = real_import(name, globals, locals, fromlist, level)
        importer = (globals or {}).get("__name__", "")
        target = resolve(name, globals, level)
        targets = [target]
        for item in fromlist or ():
            sub = f"{target}.{item}"
            if sub in sys.modules:
                targets.append(sub)
        for t in targets:
            record(importer, t)
        return module

    def hooked_import_module(name, package=None):
        importer = sys._getframe(1).f_globals.get("__name__", "")
        relative = name.startswith(".")
        record(importer, importlib.util.resolve_name(name, package) if relative else name)
        return real_import_module(name, package)

    builtins.__import__ = hooked
    importlib.import_module = hooked_import_module
    import importlib.util
    import persuasive
    names = ["persuasive"] + [
        m.name for m in pkgutil.walk_packages(persuasive.__path__, "persuasive.")
    ]
    for name in names:
        importlib.import_module(name)
    builtins.__import__ = real_import
    print(json.dumps(sorted(edges)))
    """
)


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_between_packages() -> None:
    """Import every persuasive module in a fresh interpreter, recording which module imports
    which at import time (imports inside functions, which run later, are not recorded: a lazy
    import may go "upward"), and check that the graph of packages is acyclic."""
    run = subprocess.run(
        [sys.executable, "-c", _RECORDER], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    edges = {(a, b) for a, b in json.loads(run.stdout.strip().splitlines()[-1])}
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        pa, pb = _package(a), _package(b)
        if pa != pb and pa != "persuasive" and pb != "persuasive":  # the root re-exports all
            graph.setdefault(pa, set()).add(pb)
    present = {(a, b) for a, bs in graph.items() for b in bs}
    assert PENDING_EDGES <= present, (
        f"circle(s) fixed, remove from PENDING_EDGES: {PENDING_EDGES - present}"
    )
    for a, b in PENDING_EDGES:
        graph[a].discard(b)
    assert _cycles(graph) == []
    # the circle this module's owner broke stays broken: classes and spec are one-way
    assert "persuasive.spec" not in graph.get("persuasive.classes", set())
    assert "persuasive.classes" in graph["persuasive.spec"]
    assert graph.get("persuasive._domains", set()) <= {
        "persuasive.errors",
        "persuasive._validation",
    }
