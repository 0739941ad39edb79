"""The figure list, and rendering it to bytes (plot writes them; the dashboard inlines them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from experiments.store.results import atomic_write_bytes

from experiments.analysis.figures import attn as figures_attn
from experiments.analysis.figures import instability as figures_instability
from experiments.analysis.figures import lr as figures_lr
from experiments.analysis.figures import margin as figures_margin
from experiments.analysis.figures import mechanism as figures_mechanism
from experiments.analysis.figures import profile as figures_profile
from experiments.analysis.figures import train as figures_train
from experiments.analysis.tables import load
from experiments.analysis.figures import style


@dataclass(frozen=True)
class FigureSpec:
    key: str  # file stem (learning curves, steps survival, lr accuracy, largest logit add _<task>_<optimizer>)
    title: str
    build: Callable  # Results -> [(name, Figure)]; raises style.Skip when data are missing


FIGURES = [
    FigureSpec("profile", "The d_k profile: paired Δ AUC against d_k, the alike margin and the crossover d*",
               figures_profile.profile),
    FigureSpec("margin_sensitivity", "Sub-claim 4's verdict per cell by the alike margin, the declared one "
               "marked, with the margins where it flips", figures_margin.margin_sensitivity),
    FigureSpec("logit_variance", "1. Logit variance vs d_k (init, probe, end) with theory", figures_attn.logit_variance),
    FigureSpec("entropy", "2. Normalised attention entropy vs d_k", figures_attn.entropy),
    FigureSpec("saturation", "3. Saturated share of rows vs d_k", figures_attn.saturation),
    FigureSpec("gradients", "4. Median softmax-Jacobian norm and Q/K gradient norms vs d_k", figures_attn.gradients),
    FigureSpec("quality", "5. Accuracy, steps to threshold and accuracy AUC vs d_k", figures_train.quality),
    FigureSpec("steps_survival", "6. Steps to threshold: Kaplan-Meier survival over seeds",
               figures_train.steps_survival),
    FigureSpec("learning_curves", "7. Learning curves (variant × d_k)", figures_train.learning_curves),
    FigureSpec("cost", "8. Cost: time and memory ratios vs n", figures_train.cost),
    FigureSpec("logit_growth", "9. Trained logit std vs d_k (the muP check)", figures_attn.logit_growth),
    FigureSpec("lr_accuracy", "10. Accuracy vs learning rate, one curve per d_k (the muP-transfer view)",
               figures_lr.lr_accuracy),
    FigureSpec("optimal_lr", "11. Optimal learning rate vs d_k, with the fitted slope", figures_lr.optimal_lr),
    FigureSpec("lr_sensitivity", "12. LR sensitivity vs d_k (Wortsman et al. 2023)", figures_lr.lr_sensitivity),
    FigureSpec("largest_logit", "13. Largest |attention logit| through training, per variant and d_k "
               "(the instability of Wortsman et al. 2023)", figures_instability.largest_logit),
    FigureSpec("mechanism", "14. The mechanism against the outcome: each run's lowest entropy and largest "
               "logit through training vs its accuracy AUC", figures_mechanism.mechanism),
]


@dataclass(frozen=True)
class Rendered:
    name: str
    title: str
    files: dict[str, bytes]  # format -> bytes


def render(res: load.Results, formats=("png", "svg")) -> tuple[list[Rendered], list[str]]:
    """Every figure the data allow, and a one-line note for each one skipped."""
    out, notes = [], []
    for spec in FIGURES:
        try:
            built = spec.build(res)
        except style.Skip as why:
            notes.append(f"skipped figure {spec.key}: {why}")
            continue
        for name, fig in built:
            try:
                files = {}
                for f in formats:
                    files[f] = style.to_bytes(fig, f)
                    style.freeze_layout(fig)  # the first format's layout serves the others
                out.append(Rendered(name, spec.title, files))
            finally:
                style.close(fig)
    return out, notes


def write(res: load.Results, out_dir: Path) -> tuple[list[Path], list[str]]:
    rendered, notes = render(res)
    paths = []
    for r in rendered:
        for fmt, data in r.files.items():
            path = out_dir / f"{r.name}.{fmt}"
            atomic_write_bytes(path, data)
            paths.append(path)
    return paths, notes
