"""Draw the tutorial's figures (docs/tutorial.md) into this folder; the PNGs are committed.

Run from the repository root: ``python docs/figures/make_figures.py``. Every number comes from
the library (:mod:`persuasive.classes.receivers`) or from the bundled county counts
(``examples/data/counts.csv``), so the figures say what the commands of the tutorial print.

* ``game.png`` — one small cell: a Receiver's prior on its count, and its posterior once the
  cell is published as suppressed (Prop 8);
* ``kappa_vs_h.png`` — κ = −log α(h) against the threshold h for the negative-binomial
  Receivers of the tutorial and for Poisson Receivers with three mean ranges;
* ``counts.png`` — the 301 county counts, with the thresholds h = 10 and h = 19.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from persuasive import NegativeBinomialReceiver, PoissonReceiver

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: The tutorial's Receivers: negative-binomial cell priors of size 1, mean anywhere in 1..40.
RECEIVER = NegativeBinomialReceiver(1.0, 40.0, 1.0)
H = 10
TRUE_COUNT = 3
#: PNG metadata without a creation date, so that re-running the script changes no byte.
META = {"Software": None}


def _save(fig: plt.Figure, name: str) -> None:
    fig.savefig(HERE / name, dpi=110, bbox_inches="tight", metadata=META)
    plt.close(fig)
    print(f"wrote docs/figures/{name}")


def game() -> None:
    """Prior and posterior of the least favourable Receiver on one cell whose count is 3."""
    prior = RECEIVER.worst_prior(H)
    xs = np.arange(0, 61)
    q = prior.pmf(xs)
    alpha = RECEIVER.alpha(H)
    post = np.where(xs < H, q / alpha, 0.0)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, probs, title in (
        (axes[0], q, "Before: the Receiver's prior on the cell"),
        (axes[1], post, "After: the cell is published as suppressed"),
    ):
        colours = ["#c0392b" if x == TRUE_COUNT else "#7f8c8d" for x in xs]
        ax.bar(xs, probs, color=colours, width=0.85)
        ax.axvline(H - 0.5, color="black", linestyle="--", linewidth=1)
        ax.text(H + 0.5, 0.118, f"h = {H}")
        ax.set_title(title, fontsize=11)
        ax.set_xlabel("count in the cell")
    axes[0].set_ylabel("probability")
    axes[0].set_ylim(0, post.max() * 1.15)
    axes[0].annotate(
        f"true count {TRUE_COUNT}: {q[TRUE_COUNT]:.3f}\nP(count < {H}) = α = {alpha:.3f}",
        xy=(TRUE_COUNT, q[TRUE_COUNT]),
        xytext=(18, 0.055),
        arrowprops={"arrowstyle": "->"},
    )
    axes[1].annotate(
        f"true count {TRUE_COUNT}: {q[TRUE_COUNT]:.3f} / α = {post[TRUE_COUNT]:.3f}\n"
        f"its probability × 1/α = {1 / alpha:.2f}:\n"
        f"log score gains −log α = {-np.log(alpha):.2f} nats",
        xy=(TRUE_COUNT, post[TRUE_COUNT]),
        xytext=(14, 0.06),
        arrowprops={"arrowstyle": "->"},
    )
    fig.suptitle(
        "Negative-binomial prior, mean 40, size 1 (the least favourable Receiver of the class)",
        fontsize=10,
    )
    _save(fig, "game.png")


def kappa_vs_h() -> None:
    """κ(h) = −log α(h) for the tutorial's Receivers and three Poisson classes."""
    hs = np.arange(2, 41)
    fig, ax = plt.subplots(figsize=(7, 4))
    models = [
        (RECEIVER, "negative binomial, size 1, mean ≤ 40", "#2c3e50", "-"),
        (PoissonReceiver(0.5, 3.0), "Poisson, mean ≤ 3", "#27ae60", "--"),
        (PoissonReceiver(0.5, 10.0), "Poisson, mean ≤ 10", "#e67e22", "--"),
        (PoissonReceiver(0.5, 20.0), "Poisson, mean ≤ 20", "#c0392b", "--"),
    ]
    for model, label, colour, style in models:
        ax.plot(hs, [model.kappa(int(h)) for h in hs], style, color=colour, label=label)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    for h in (10, 19):
        k = RECEIVER.kappa(h)
        ax.plot([h], [k], "o", color="#2c3e50")
        ax.annotate(f"h = {h}: κ = {k:.2f}", xy=(h, k), xytext=(h + 1.5, k + 1.2))
    ax.set_ylim(0, 8)
    ax.set_xlabel("suppression threshold h (cells with a count below h are suppressed)")
    ax.set_ylabel("certified κ = −log α(h)  (nats)")
    ax.set_title("A larger h protects more; a more confident Receiver needs a larger h")
    ax.legend(fontsize=9)
    _save(fig, "kappa_vs_h.png")


def counts() -> None:
    """The bundled county counts and the two thresholds of the tutorial."""
    c = pl.read_csv(ROOT / "examples" / "data" / "counts.csv")["cancer"].to_numpy()
    cap = 100
    fig, ax = plt.subplots(figsize=(7, 3.4))
    ax.hist(np.minimum(c, cap), bins=np.arange(0, cap + 2) - 0.5, color="#7f8c8d")
    for h, colour in ((10, "#c0392b"), (19, "#e67e22")):
        n = int((c < h).sum())
        ax.axvline(h - 0.5, color=colour, linestyle="--")
        ax.text(
            45,
            ax.get_ylim()[1] * (0.85 if h == 10 else 0.72),
            f"h = {h}: {n} suppressed",
            color=colour,
        )
    ax.set_xlabel(f"breast-cancer deaths in a county (counts above {cap} drawn at {cap})")
    ax.set_ylabel("counties")
    ax.set_title(f"The {len(c)} county counts of examples/data/counts.csv")
    _save(fig, "counts.png")


if __name__ == "__main__":
    game()
    kappa_vs_h()
    counts()
