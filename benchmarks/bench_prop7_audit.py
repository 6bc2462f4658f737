"""Prop 7 search audit at scale: priors/s and peak memory of ``pp.audit(ExactMean(), ...)``.

For n = 10^2, 10^3 and 10^4 (``MarginalDSS()`` over all coordinates, r = (1, 4), x ~ N(0, I),
``n_starts=2``) each case runs in a fresh subprocess, which reports

- the whole audit: candidate priors evaluated (screen + Nelder–Mead) per second of wall time,
  the κ found against the bound r1 + log r2, and the witness type;
- the batched screen alone (``gaussian_search._screen``: 1024 random candidates per family,
  structured Σ = diag(σ)Φ_λdiag(σ) from s = Σ1, no n × n matrix), in priors/s;
- the subprocess's peak resident memory (``ru_maxrss``) at the end of the audit, next to that of
  a subprocess that only imports the library.

Then the linear search audit ``audit_linear`` (A = the mean and the mean of the first half,
r = (1, 4), 16 starts per family; dense up to n = 500, structured above) at the same n.
It also prints, in its own subprocess, the dense reference of the earlier version of this
script: the closed-form loss ``batch_marginal_loss`` of 32 dense 1000 × 1000 covariances.
Nothing is asserted.

Run: ``python benchmarks/bench_prop7_audit.py``
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time

import numpy as np

SIZES = (100, 1000, 10_000)
SCREEN = 1024
LINEAR_STARTS = 16


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _one(n: int) -> dict[str, object]:
    import persuasive as pp
    from persuasive.audit import gaussian_search as gs

    out: dict[str, object] = {"n": n}
    rng = np.random.default_rng(0)
    x = rng.normal(size=n)
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 10.0)
    t0 = time.perf_counter()
    a = pp.audit(pp.ExactMean(), d, x=x, rng=0, n_starts=2)
    dt = time.perf_counter() - t0
    assert a.witness is not None
    out["peak_rss_mb"] = _rss_mb()  # the audit's peak (ru_maxrss only grows)
    out.update(
        audit_s=dt,
        evals=a.evaluations,
        audit_rate=a.evaluations / dt,
        kappa=a.kappa,
        bound=1.0 + math.log(4.0),
        witness=type(a.witness.prior).__name__,
    )
    rows = np.arange(n)
    rates = {}
    for name, fam in gs._families(n).items():
        cand = rng.normal(0.0, 1.5, size=(SCREEN, n + fam.extra))
        t0 = time.perf_counter()
        gs._screen(cand, n, fam, 4.0, rows)
        rates[name] = cand.shape[0] / (time.perf_counter() - t0)
        del cand
    out["screen_rate"] = rates
    return out


def _linear(n: int) -> dict[str, object]:
    from persuasive.linear import LinearGaussianClass, audit_linear

    a = np.vstack([np.full(n, 1.0 / n), np.r_[np.full(n // 2, 2.0 / n), np.zeros(n - n // 2)]])
    cls = LinearGaussianClass(1.0, 4.0)
    t0 = time.perf_counter()
    res = audit_linear(a, cls, starts=LINEAR_STARTS, rng=0)
    dt = time.perf_counter() - t0
    return {
        "evals": res.evaluations,
        "audit_s": dt,
        "audit_rate": res.evaluations / dt,
        "gap": cls.class_kappa(a) - res.kappa,
        "peak_rss_mb": _rss_mb(),
    }


def _dense_reference(n: int) -> dict[str, object]:
    from persuasive.audit.gaussian_search import batch_marginal_loss

    rng = np.random.default_rng(0)
    a3 = rng.normal(size=(32, n, 64)) / 8.0
    covs = a3 @ a3.transpose(0, 2, 1) + np.eye(n)
    means, x = rng.normal(size=(32, n)), rng.normal(size=n)
    batch_marginal_loss(means, covs, x)
    t0 = time.perf_counter()
    for _ in range(5):
        batch_marginal_loss(means, covs, x)
    return {"rate": 32 * 5 / (time.perf_counter() - t0), "peak_rss_mb": _rss_mb()}


def _run(args: list[str]) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    from persuasive.audit import gaussian_search as gs

    base = _run(["--import-only"])
    print(
        f"Prop 7 search audit, MarginalDSS(), r = (1, 4), n_starts = 2; "
        f"BATCH_BYTES = {gs.BATCH_BYTES / 2**20:.0f} MiB; one subprocess per n"
    )
    print(f"import persuasive only: peak RSS {base['peak_rss_mb']:.0f} MB")
    for n in SIZES:
        r = _run(["--one", str(n)])
        sr: dict[str, float] = r["screen_rate"]  # type: ignore[assignment]
        screen = ", ".join(f"{k} {v:,.0f}" for k, v in sr.items())
        gap = float(r["bound"]) - float(r["kappa"])  # type: ignore[arg-type]
        print(
            f"n = {n:>6}: audit {r['audit_rate']:8.0f} priors/s ({r['evals']} priors in "
            f"{r['audit_s']:.2f} s), bound - kappa {gap:.1e}, "
            f"witness {r['witness']}, peak RSS {r['peak_rss_mb']:.0f} MB"
        )
        print(f"{'':10}screen alone ({SCREEN} candidates/family, priors/s): {screen}")
    print(
        f"audit_linear, A = (mean, mean of the first half) (k = 2), r = (1, 4), "
        f"starts = {LINEAR_STARTS} per family"
    )
    for n in SIZES:
        r = _run(["--linear", str(n)])
        print(
            f"n = {n:>6}: audit {r['audit_rate']:8.1f} priors/s ({r['evals']} priors in "
            f"{r['audit_s']:.2f} s), bound - kappa {float(r['gap']):.1e}, "  # type: ignore[arg-type]
            f"peak RSS {r['peak_rss_mb']:.0f} MB"
        )
    ref = _run(["--dense-reference", "1000"])
    print(
        f"dense reference (the earlier script): batch_marginal_loss of 32 dense 1000 x 1000 "
        f"covariances {ref['rate']:.0f} priors/s, peak RSS {ref['peak_rss_mb']:.0f} MB"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(_one(int(sys.argv[2]))))
    elif len(sys.argv) > 1 and sys.argv[1] == "--linear":
        print(json.dumps(_linear(int(sys.argv[2]))))
    elif len(sys.argv) > 1 and sys.argv[1] == "--dense-reference":
        print(json.dumps(_dense_reference(int(sys.argv[2]))))
    elif len(sys.argv) > 1 and sys.argv[1] == "--import-only":
        import persuasive  # noqa: F401
        from persuasive.audit import gaussian_search  # noqa: F401

        print(json.dumps({"peak_rss_mb": _rss_mb()}))
    else:
        main()
