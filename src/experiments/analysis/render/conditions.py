"""The conditions of the report's sections, stated once: what they share at the top, what differs
in each section.

A section's conditions are its sources (verdicts.section: Runs, Probe, StepZero, GradientProbe,
CostBench). Two kinds are shared: the config every training run has in common (one value, in
every run of summary.parquet), and sources that several sections read alike (the init-time
probe of 1, 2 and 3a). The top states both once; a section keeps only what is neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments.analysis.tables import load
from experiments.analysis.verdicts.section import CostBench, GradientProbe, Probe, Runs, Section, StepZero, constant_config

SEP = "; "


def config_words(pairs) -> list[str]:
    return [f"`{col}`={value}" for col, value in pairs]


def runs_words(r: Runs, drop=frozenset()) -> str:
    """'task `x`; optimizer `y`; 400 steps; 3 seeds (0, 1, 2); 12 runs; …', the config in `drop` left out."""
    if not r.described:
        return f"task {r.task}, optimizer {r.optimizer} (no summary.parquet for details)"
    steps = ", ".join(map(str, r.steps)) if r.steps is not None else "?"
    runs = f"{r.n_runs} runs" + (f", of which {r.n_diverged} diverged (left out after init)" if r.n_diverged else "")
    parts = [f"task `{r.task}`", f"optimizer `{r.optimizer}`", f"{steps} steps",
             f"{len(r.seeds)} seeds ({', '.join(map(str, r.seeds))})", runs]
    if r.experiments is not None:
        parts.append("experiment " + ", ".join(f"`{e}`" for e in r.experiments))
    return SEP.join(parts + config_words(p for p in r.config if p not in drop))


def source_words(src, drop=frozenset()) -> str:
    """One source of a section's numbers in words."""
    if isinstance(src, Runs):
        return runs_words(src, drop)
    if isinstance(src, StepZero):
        return "step 0 of training: " + runs_words(src.runs, drop)
    if isinstance(src, Probe):
        desc = ", ".join(f"{c} {', '.join(values)}" for c, values in src.columns)
        return f"init-time probe: {desc}; {src.n_seeds} seed(s)"
    if isinstance(src, GradientProbe):
        if src.input_models is None:
            return "init-time probe"
        return (f"init-time probe, input_model {', '.join(src.input_models)} (gradients w.r.t. {src.wrt}); "
                f"{src.n_seeds} seed(s)")
    assert isinstance(src, CostBench)
    batches = ", ".join(map(str, src.batches)) if src.batches is not None else "?"
    return (f"cost benchmark: impl {', '.join(src.impls)}; modes {', '.join(src.modes)}; "
            f"n {', '.join(map(str, src.ns))}; d_k {', '.join(map(str, src.d_ks))}; batch {batches}")


def words(s: Section, drop=frozenset()) -> str:
    """The section's conditions in one line ('not measured' where it has no sources)."""
    return SEP.join(source_words(src, drop) for src in s.sources) if s.sources else "not measured"


@dataclass(frozen=True)
class Conditions:
    training: tuple[tuple[str, str], ...]  # (column, value) every training run shares
    shared: list[tuple[list[str], tuple]]  # (section numbers, the sources they share)


def split(res: load.Results, sections: list[Section]) -> Conditions:
    training = ()
    if res.summary is not None:
        complete = res.summary.dropna(axis=1, how="any")  # a column some runs lack is not shared by all
        training = constant_config(complete, res.summary)
    alike: dict[tuple, list[Section]] = {}
    for s in sections:
        if s.sources:
            alike.setdefault(s.sources, []).append(s)
    return Conditions(training, [([s.number for s in group], sources) for sources, group in alike.items()
                                 if len(group) > 1])


def top_lines(c: Conditions) -> list[str]:
    """Markdown bullets of what the sections share."""
    lines = []
    if c.training:
        lines.append("- **Every training run** (`summary.parquet`): " + SEP.join(config_words(c.training)) + ".")
    drop = frozenset(c.training)
    lines += [f"- **Sections {', '.join(numbers)}**: {SEP.join(source_words(x, drop) for x in sources)}."
              for numbers, sources in c.shared]
    return lines


def _beside_training(c: Conditions, s: Section) -> str:
    """' (and those of every training run, at the top, except …)' for a section read on training runs."""
    if not c.training or not s.sources or not isinstance(s.sources[0], Runs):
        return ""
    own = {p for src in s.sources if isinstance(src, Runs) for p in src.config}
    unshared = config_words(p for p in c.training if p not in own)  # its runs differ there, or vary
    return (" (and those of every training run, at the top" +
            (f", except {', '.join(unshared)}" if unshared else "") + ")")


def section_line(c: Conditions, s: Section) -> str:
    """The section's conditions beyond those stated at the top; one line per (task, optimizer)."""
    for numbers, _ in c.shared:
        if s.number in numbers:
            return f"**Conditions.** those of sections {', '.join(numbers)}, stated at the top."
    drop = frozenset(c.training)
    common = _beside_training(c, s)
    if len(s.sources) < 2:
        return f"**Conditions.** {words(s, drop)}{common}."
    return "**Conditions**" + common + ":\n" + "\n".join(f"- {source_words(src, drop)}" for src in s.sources)
