"""Every sub-claim's section, in the report's order (docs/CLAIM.md)."""

from __future__ import annotations

from experiments.analysis.tables import load
from experiments.analysis.verdicts import at_init, mup, quality
from experiments.analysis.verdicts.cost import cost
from experiments.analysis.verdicts.section import Section


def all_sections(res: load.Results) -> list[Section]:
    return [at_init.variance(res), at_init.saturation(res), at_init.jacobian(res),
            at_init.gradients(res), quality.quality(res), cost(res), mup.extra(res)]
