"""Every sub-claim's section, in the report's order (docs/CLAIM.md)."""

from __future__ import annotations

from experiments.analysis.tables import load
from experiments.analysis.verdicts import at_init as verdicts_attn
from experiments.analysis.verdicts import mup as verdicts_mup
from experiments.analysis.verdicts import quality as verdicts_quality
from experiments.analysis.verdicts.cost import cost
from experiments.analysis.verdicts.section import Section


def all_sections(res: load.Results) -> list[Section]:
    return [verdicts_attn.variance(res), verdicts_attn.saturation(res), verdicts_attn.jacobian(res),
            verdicts_attn.gradients(res), verdicts_quality.quality(res), cost(res), verdicts_mup.extra(res)]
