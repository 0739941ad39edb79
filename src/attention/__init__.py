"""Attention as the paper defines it: a compatibility function of query and
key gives weights over the values; the output is their weighted sum.

A variant supplies its compatibility (score) function, its parameters and,
if not softmax, its weight function; masking and the weighted sum are shared
(`core`). Every module of this package is imported here, so a variant is one
module that calls `registry.register` (docs/EXTENDING.md).
"""
import importlib
import pkgutil

from attention import stats  # noqa: F401
from attention.core import (
    attend,
    attend_with_logits,
    factored_scores,
    init_params,
    masked_softmax,
    scores,
)
from attention.registry import (
    VARIANTS,
    UnknownVariantError,
    Variant,
    get_variant,
    option_schema,
    register,
    variant_names,
)

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")  # each variant module registers itself

__all__ = [
    "VARIANTS", "Variant", "UnknownVariantError", "get_variant", "option_schema", "register",
    "variant_names", "init_params", "scores", "factored_scores", "attend", "attend_with_logits",
    "masked_softmax", "stats",
]
