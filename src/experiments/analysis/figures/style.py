"""One look for every figure: a distinct colour per variant, log2 d_k axes, short tick labels,
one legend for all of a figure's panels, deterministic files."""

from __future__ import annotations

import io
import textwrap
import zlib
from typing import Callable

import matplotlib

matplotlib.use("Agg")  # files only; never a display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import LogFormatterSciNotation  # noqa: E402

import attention  # noqa: E402
from experiments.analysis.stats.intervals import mean_ci  # noqa: E402

# The colours of variants that name none of their own (Variant.color), from tab10's family.
# Each clears every other and every variant's own colour by CIE76 ΔE 25 in Lab, and by ΔE 40
# where their hues lie within 20°: a lighter shade of one hue reads as the same variant
# (tests/test_palette.py). None is near white, black or grey (background, theory lines, bands).
SPARE_COLOURS = ("#17becf", "#1b9e77", "#f0027f", "#e6ab02", "#000080")


def palette(names=()) -> dict[str, str]:
    """The colour of every registered variant and of `names`: a variant's own colour where it
    names one; each other registered variant, in alphabetical order, then each other name, takes
    the first spare not yet taken, counting from a place its name fixes (crc32): a new name moves
    no other variant's colour unless it lands on it, and a name the registry lacks never takes a
    registered variant's colour. Past the last spare, colours repeat."""
    registered = attention.variant_names()
    out = {n: attention.VARIANTS[n].color for n in registered if attention.VARIANTS[n].color}
    for name in sorted(set(registered) - set(out)) + sorted(set(names) - set(registered)):
        start = zlib.crc32(name.encode()) % len(SPARE_COLOURS)
        turn = SPARE_COLOURS[start:] + SPARE_COLOURS[:start]
        out[name] = next((c for c in turn if c not in out.values()), turn[0])
    return out


def _theory_scale2(variant) -> Callable[[float], float]:
    return lambda d: variant.init_logit_scale(d, 2) ** 2  # at init: W_q's own factor included


COLOURS = palette()  # every registered variant's colour (the dashboard's legend)
# Theory scale factor c^2 of q.k for the variants whose c is fixed by d_k alone
# (Variant.bilinear): Var(c q.k) = d_k c^2 for unit-variance q, k.
THEORY_SCALE2 = {name: _theory_scale2(v) for name, v in attention.VARIANTS.items()
                 if v.bilinear and v.logit_scale is not None}

STYLE = {
    "figure.dpi": 110, "savefig.dpi": 110, "font.size": 9, "axes.titlesize": 10,
    "axes.labelsize": 9, "legend.fontsize": 8, "axes.grid": True, "grid.alpha": 0.3,
    "axes.spines.top": False, "axes.spines.right": False,
    "svg.hashsalt": "attention-scaling",  # stable element ids: identical SVG on rerun
    "svg.fonttype": "path",  # text as paths: no font needed where the SVG is shown
}
plt.rcParams.update(STYLE)  # this process only draws files: one style for all of them


def colour(variant: str) -> str:
    return palette([variant])[variant]


def label(variant: str) -> str:
    known = attention.VARIANTS.get(variant)
    return known.label or variant if known is not None else variant


def new_figure(nrows: int = 1, ncols: int = 1, width: float = 4.2, height: float = 3.2, **kw):
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                             squeeze=False, layout="constrained", **kw)
    return fig, axes


def suptitle(fig, text: str) -> None:
    """A figure title wrapped to the figure's width: a centred title wider than a narrow
    figure (few d_k columns) would be cut at both edges, which no layout engine fixes."""
    size = plt.rcParams["font.size"] * 1.2  # rcParams "figure.titlesize" is "large"
    chars = max(20, int(fig.get_figwidth() * 72 / (0.6 * size)))  # 0.6 em: a wide average glyph
    fig.suptitle(textwrap.fill(text, chars), fontsize=size)


def nothing_to_show(ax, text: str) -> None:
    """An empty panel that says why, instead of a line drawn at a placeholder value."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.35")
    ax.set_yticks([])


def dk_axis(ax, d_ks) -> None:
    """log2 x axis with a tick at every d_k measured."""
    ax.set_xscale("log", base=2)
    ticks = sorted({int(d) for d in d_ks})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("d_k (key/query dimension)")


def short(x: float) -> str:
    """A tick label of two significant figures: 0.85, 0.056, 1000 (3e-05 outside 0.001 to 10,000)."""
    if x == 0 or 1e-3 <= abs(x) < 1e4:
        return f"{float(f'{x:.2g}'):g}"
    return f"{x:.2g}"


class ShortLogFormatter(LogFormatterSciNotation):
    """Matplotlib's choice of which log ticks to label (the decades, and a few ticks between
    where the axis spans less than a decade or two), each labelled short: 0.4, 2, 30, 10^-5."""

    def __call__(self, x, pos=None):
        text = super().__call__(x, pos)
        return short(x) if text and 1e-3 <= abs(x) < 1e4 else text


def log_scale(ax, axis: str = "y") -> None:
    """A log10 axis with short labels on its major and minor ticks."""
    getattr(ax, f"set_{axis}scale")("log")
    ticks = getattr(ax, f"{axis}axis")
    ticks.set_major_formatter(ShortLogFormatter())
    ticks.set_minor_formatter(ShortLogFormatter())


def mean_band(ax, df: pd.DataFrame, column: str, x: str = "d_k", **line_kw) -> None:
    """Seed mean per x with its 95% t-interval over seeds (none below stats.MIN_SEEDS), one line per variant."""
    for variant, g in df.groupby("attention", sort=False):
        pts = []
        for xv, gx in g.groupby(x):
            pts.append((xv, *mean_ci(gx[column].to_numpy())))
        if not pts:
            continue
        xs, m, lo, hi = (np.array(a, dtype=float) for a in zip(*pts))
        kw = dict(color=colour(variant), label=label(variant), marker="o", ms=3, lw=1.4) | line_kw
        ax.plot(xs, m, **kw)
        ok = np.isfinite(lo) & np.isfinite(hi)
        ax.fill_between(xs[ok], lo[ok], hi[ok], color=colour(variant), alpha=0.18, lw=0)


def theory_lines(ax, d_ks, variants) -> None:
    """Dashed Var = d_k c^2 for the variants with a closed form."""
    xs = np.array(sorted(set(d_ks)), dtype=float)
    for v in variants:
        if v in THEORY_SCALE2:
            ys = xs * np.array([THEORY_SCALE2[v](d) for d in xs])
            ax.plot(xs, ys, ls="--", lw=1, color=colour(v), alpha=0.8)


DIVERGED_MARK = dict(marker="x", ms=6, mew=1.6, ls="none")  # a diverged run, in its variant's colour


def mark_diverged(ax, counts: dict[tuple[str, int], int]) -> None:
    """An x per (variant, d_k) cell with diverged runs, at the foot of the panel, with their
    number beside it: those runs are left out of the line above, not drawn as zeros."""
    if not counts:
        return
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo - 0.12 * (hi - lo), hi)  # room at the foot, below every data point
    foot = ax.get_xaxis_transform()  # x in data units, y in axes units
    for (variant, d_k), n in sorted(counts.items()):
        ax.plot([d_k], [0.04], transform=foot, color=colour(variant), clip_on=False, **DIVERGED_MARK)
        ax.annotate(str(n), (d_k, 0.04), xycoords=foot, xytext=(4, 2), textcoords="offset points",
                    fontsize=7, color=colour(variant))


def legend(ax, theory: bool = False, diverged: int = 0, own: bool = False) -> None:
    """Legend outside the axes, so it never hides data: at the right, naming every line of every
    panel of ax's figure once (a panel may lack a line another has); `own`: below ax, naming
    ax's own lines (labels that differ from panel to panel, as fitted slopes do).
    `diverged`: number of diverged runs marked in the figure (mark_diverged)."""
    entries = {}
    for panel in [ax] if own else ax.figure.axes:
        for handle, text in zip(*panel.get_legend_handles_labels()):
            entries.setdefault(text, handle)
    handles, labels = list(entries.values()), list(entries)
    if theory:
        handles.append(plt.Line2D([], [], ls="--", color="k", lw=1))
        labels.append("theory at init: d_k c²")
    if diverged:
        handles.append(plt.Line2D([], [], color="k", **DIVERGED_MARK))
        labels.append(f"diverged: {diverged} run{'s' if diverged != 1 else ''}, left out of\n"
                      "the means (× at the foot: count)")
    if not handles:
        return
    if own:
        # 4 font sizes below the axes: under the tick labels and the x label, whatever ax's height
        ax.legend(handles, labels, frameon=False, loc="upper center", bbox_to_anchor=(0.5, 0), borderaxespad=4)
    else:
        ax.legend(handles, labels, frameon=False, loc="upper left", bbox_to_anchor=(1.02, 1.0))


def to_bytes(fig, fmt: str) -> bytes:
    """Render to bytes with no timestamp, so reruns give identical files."""
    buf = io.BytesIO()
    metadata = {"Date": None} if fmt == "svg" else {"Software": None}
    fig.savefig(buf, format=fmt, metadata=metadata)  # constrained layout already fits labels
    return buf.getvalue()


def freeze_layout(fig) -> None:
    """Keep the axes where the last draw's constrained layout put them: a second format of
    the same figure is drawn without solving the layout again (about 45% of a save)."""
    fig.set_layout_engine("none")


def close(fig) -> None:
    plt.close(fig)


class Skip(Exception):
    """Raised by a figure whose data are missing; the message is the one-line note."""
