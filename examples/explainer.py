"""An interactive explainer of Persuasive Privacy (a marimo notebook; plain Python).

Open it with ``marimo edit examples/explainer.py`` (or ``marimo run examples/explainer.py`` for
the app alone); ``python examples/explainer.py`` runs every cell once with the sliders at their
defaults and prints the two κ. Sliders: r1 and r2 of Prop 7 (the exact mean: κ = r1 + log r2),
and h and α of Prop 8 (cell suppression: κ = −log α, with α stated directly or derived from a
Poisson Receiver's mean range). Each κ is the library's certificate (``persuasive.certify``),
and the figure shows the prior and posterior of the Receiver that attains it.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import math

    import marimo as mo
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    import persuasive as pp

    return math, mo, np, plt, pp


@app.cell
def _(mo):
    mo.md(r"""
    # Persuasive Privacy, interactively

    A **Sender** publishes $T$; a **Receiver** with prior $Q$ updates to the posterior
    $Q_T$. Privacy is what the Receiver gains in a proper score $S$ on the true data $x$:
    $\Delta = S(Q, x) - S(Q_T, x)$. A release is private at level $\kappa$ against a class
    of Receivers when $\Delta \le \kappa$ for every Receiver in it (Bon et al. 2026,
    Def 3). Below, two releases **with no noise at all**:

    * **Prop 7, the exact mean.** Against Gaussian Receivers whose prior guess of the mean
      is off by at most $\sqrt{r_1}$ of its prior sd and whose correlations are balanced to
      within $r_2$: $\kappa = r_1 + \log r_2$ (Dawid–Sebastiani score of one person).
    * **Prop 8, cell suppression.** Cells below $h$ are left empty. Against Receivers
      putting prior mass at least $\alpha$ below $h$ on each cell: $\kappa = -\log\alpha$
      (log score of a small cell). A Poisson Receiver with its mean in $[\mu_-, \mu_+]$
      has $\alpha(h) = P_{\mathrm{Poi}(\mu_+)}(X < h)$.
    """)
    return


@app.cell
def _(mo):
    r1 = mo.ui.slider(0.1, 5.0, step=0.1, value=1.0, label="r1 (squared error of the prior mean)")
    r2 = mo.ui.slider(1.1, 20.0, step=0.1, value=4.0, label="r2 (correlation balance)")
    h = mo.ui.slider(2, 40, step=1, value=10, label="h (suppress counts below h)")
    source = mo.ui.radio(
        options=["state α", "Poisson mean range"], value="state α", label="Receivers of Prop 8"
    )
    alpha = mo.ui.slider(0.01, 1.0, step=0.01, value=0.2, label="α (prior mass below h)")
    poisson = mo.ui.range_slider(0.0, 40.0, step=0.5, value=[0.5, 5.0], label="Poisson mean range")
    mo.vstack([mo.md("### Prop 7"), r1, r2, mo.md("### Prop 8"), h, source, alpha, poisson])
    return alpha, h, poisson, r1, r2, source


@app.cell
def _(alpha, h, poisson, r1, r2, source):
    # The slider values as plain numbers (app.run(defs=...) can override this cell).
    r1_value = float(r1.value)
    r2_value = float(r2.value)
    h_value = int(h.value)
    use_poisson = source.value == "Poisson mean range"
    alpha_value = float(alpha.value)
    poisson_range = (float(poisson.value[0]), float(poisson.value[1]))
    return alpha_value, h_value, poisson_range, r1_value, r2_value, use_poisson


@app.cell
def _(math, pp, r1_value, r2_value):
    # Prop 7: the library's certificate for the exact mean against the class G^r_x.
    mean_certificate = pp.certify(
        pp.ExactMean(),
        pp.PersuasivePrivacy(
            pp.MarginalDSS(), pp.GaussianMeanClass(r1_value, r2_value), kappa=math.inf
        ),
    )
    kappa_mean = mean_certificate.kappa
    return (kappa_mean,)


@app.cell
def _(alpha_value, h_value, math, poisson_range, pp, use_poisson):
    # Prop 8: alpha from the Receiver model, then the library's certificate for suppression.
    receiver = (
        pp.PoissonReceiver(*poisson_range) if use_poisson else pp.SmallCellReceiver(alpha_value)
    )
    alpha_h = receiver.alpha(h_value)
    table_certificate = pp.certify(
        pp.CellSuppression(h_value),
        pp.PersuasivePrivacy(
            pp.SmallCellLogScore(h_value), pp.SmallCellClass(h_value, alpha_h), kappa=math.inf
        ),
    )
    kappa_table = table_certificate.kappa
    return alpha_h, kappa_table, receiver


@app.cell
def _(math, np, pp, r1_value, r2_value):
    # The Gaussian Receiver attaining Prop 7 (docs/math.md §8): independent priors, person 1
    # holding a share 1 - 1/r2 of the prior variance, the prior mean of the mean off by
    # sqrt(r1) of its sd. The release shows the mean t; person 1's posterior follows.
    share = 1.0 - 1.0 / r2_value
    n_people = max(2, 1 + math.ceil(1.0 / (r2_value - 1.0) - 1e-9))  # others' shares <= share
    total = 1.0 / share  # person 1's prior variance is 1
    variances = np.array([1.0] + [(total - 1.0) / (n_people - 1)] * (n_people - 1))
    sd_of_mean = math.sqrt(total) / n_people
    t = math.sqrt(r1_value) * sd_of_mean  # the published mean (prior mean 0)
    post_mean = (1.0 / n_people) / sd_of_mean**2 * t  # Cov(X1, mean) / Var(mean) * t
    post_var = 1.0 - share  # = 1 / r2
    # The true value of person 1 where the Dawid-Sebastiani gain is largest, and that gain:
    x1 = post_mean + post_var * post_mean / (1.0 - post_var)
    x = np.concatenate([[x1], np.full(n_people - 1, (n_people * t - x1) / (n_people - 1))])

    def dss(m, v, value):
        return (value - m) ** 2 / v + math.log(v)

    gain_mean = dss(0.0, 1.0, x1) - dss(post_mean, post_var, x1)
    in_class = pp.GaussianMeanClass(r1_value, r2_value).contains(
        pp.GaussianPrior(np.zeros(n_people), variances), x=x
    )
    return gain_mean, in_class, post_mean, post_var, x1


@app.cell
def _(alpha_h, h_value, np, receiver):
    # The Receiver attaining Prop 8 on one small cell, its prior and its posterior once the
    # cell is shown as suppressed (the prior conditioned on "below h").
    worst = receiver.worst_prior(h_value)
    counts = np.arange(0, max(2 * h_value, 30) + 1)
    if isinstance(worst, np.ndarray):
        prior_pmf = np.zeros(counts.size)
        prior_pmf[: worst.size] = worst[: counts.size]
    else:
        prior_pmf = worst.pmf(counts)
    posterior_pmf = np.where(counts < h_value, prior_pmf / alpha_h, 0.0)
    small = int(np.argmax(prior_pmf[:h_value]))  # a small true count the prior deems possible
    gain_table = float(np.log(posterior_pmf[small] / prior_pmf[small]))
    return counts, gain_table, posterior_pmf, prior_pmf, small


@app.cell
def _(
    counts,
    h_value,
    math,
    np,
    plt,
    post_mean,
    post_var,
    posterior_pmf,
    prior_pmf,
    small,
    x1,
):
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    grid = np.linspace(-4.0, 4.0, 400)

    def normal(m, v):
        return np.exp(-((grid - m) ** 2) / (2 * v)) / math.sqrt(2 * math.pi * v)

    left.plot(grid, normal(0.0, 1.0), color="#7f8c8d", label="prior of person 1")
    left.plot(grid, normal(post_mean, post_var), color="#2c3e50", label="posterior (mean seen)")
    left.axvline(x1, color="#c0392b", linestyle="--", label="person 1's true value")
    left.set_title("Prop 7: the exact mean, the Receiver attaining κ", fontsize=10)
    left.legend(fontsize=8)
    width = 0.4
    right.bar(counts - width / 2, prior_pmf, width, color="#7f8c8d", label="prior of the cell")
    right.bar(counts + width / 2, posterior_pmf, width, color="#2c3e50", label="posterior")
    right.axvline(h_value - 0.5, color="black", linestyle="--", linewidth=1)
    right.axvline(small, color="#c0392b", linestyle=":", label=f"a true count of {small}")
    right.set_title(f"Prop 8: the cell is shown as suppressed (below h = {h_value})", fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()
    figure = fig
    return (figure,)


@app.cell
def _(
    alpha_h,
    figure,
    gain_mean,
    gain_table,
    h_value,
    in_class,
    kappa_mean,
    kappa_table,
    math,
    mo,
    r1_value,
    r2_value,
):
    mo.vstack(
        [
            mo.md(
                f"""
                **Prop 7**: κ = r1 + log r2 = {r1_value:g} + log {r2_value:g} =
                **{kappa_mean:.4f} nats** (certified); the Receiver drawn on the left is in the
                class ({in_class}) and gains {gain_mean:.4f} nats on person 1.

                **Prop 8**: α = {alpha_h:.4f} below h = {h_value}, κ = −log α =
                **{kappa_table:.4f} nats** (certified; e^κ = {math.exp(kappa_table):.2f}: the
                probability of a small cell's true count rises at most that much); the
                Receiver drawn on the right gains {gain_table:.4f} nats on a suppressed cell.
                """
            ),
            figure,
        ]
    )
    return


@app.cell
def _(kappa_mean, kappa_table):
    print(f"Prop 7 kappa = {kappa_mean:.6f}; Prop 8 kappa = {kappa_table:.6f}")
    return


if __name__ == "__main__":
    app.run()
