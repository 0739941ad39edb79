"""scripts/answer_study.sh, the committed study as one command: every preset and cell it names
exists, and every cell the answer presets select on is confirmed, after its selection."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
SCRIPT = ROOT / "scripts" / "answer_study.sh"


def _commands() -> list[tuple[str, dict]]:
    """(verb, {key: value}) for each train / confirm line of the script, in order."""
    out = []
    for line in SCRIPT.read_text().splitlines():
        words = shlex.split(line) if re.match(r"^(train|confirm) ", line) else []
        if words:
            out.append((words[0], dict(w.split("=", 1) for w in words[1:])))
    return out


def _selected_cells(args: dict) -> list[str]:
    """The cells a train line selects on: its cell=, else its preset's sweep."""
    if "cell" in args:
        return args["cell"].split(",")
    preset = OmegaConf.load(CONF / "experiment" / f"{args['experiment']}.yaml")
    sweep = OmegaConf.select(preset, "hydra.sweeper.params.cell")
    return str(sweep).split(",") if sweep else []


def test_every_preset_and_cell_named_exists():
    for verb, args in _commands():
        if "experiment" in args:
            assert (CONF / "experiment" / f"{args['experiment']}.yaml").exists(), args
        for cell in ([args["for_cell"]] if "for_cell" in args else _selected_cells(args)):
            assert (CONF / "cell" / f"{cell}.yaml").exists(), (verb, cell)


def test_every_cell_selected_on_is_confirmed_after_its_last_selection():
    commands = _commands()
    last_selection, confirmed = {}, {}
    for i, (verb, args) in enumerate(commands):
        if verb == "train" and args.get("experiment", "").startswith("answer"):
            for cell in _selected_cells(args):
                last_selection[cell] = i
        elif verb == "confirm":
            confirmed[args["for_cell"]] = i
    assert last_selection and set(last_selection) == set(confirmed)
    assert all(confirmed[c] > last_selection[c] for c in confirmed), (last_selection, confirmed)
