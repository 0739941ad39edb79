"""A variant of attention is its compatibility (score) function.

Each variant supplies two pure functions:
  init(rng, d_k, **init_options) -> params      (a dict pytree, {} if parameter-free)
  score(params, q, k, key_count, **score_options) -> logits [..., n_q, n_k]
Masking and the weighted sum live once, in `core.attend`; the weights come from
the variant's weight function (`weights`, masked softmax unless it says otherwise).

`key_count` ([..., n_q, 1], float) is the number of keys each query row may
attend to; only length-aware variants read it.

A variant is one module of this package that calls `register(Variant(...))`
(the package imports every module it holds); conf/attention/<name>.yaml is optional
(comments, or a named setting such as mup8).
Its options are the keyword arguments its init and score functions take, with
their annotated types and defaults: `option_schema` turns them into the typed
schema of its config group, so a typo fails naming the key (docs/EXTENDING.md).
"""
from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Optional

from attention.checks import check
from attention.weights import masked_softmax

Params = dict[str, Any]
# The paper's three, first in every list; the others follow in the order they register.
PAPER_VARIANTS = ("scaled", "unscaled", "additive")


@dataclass(frozen=True)
class Variant:
    name: str
    init: Callable[..., Params]
    score: Callable[..., Any]
    doc: str = ""
    # Names of the knobs each function takes; anything else is an error.
    init_options: tuple[str, ...] = ()
    score_options: tuple[str, ...] = ()
    # The factor c in logits = c * q.k at init, as a function of d_k and the
    # number of keys; None where the score is not a scaled dot product.
    # Used for theory lines (Var(logit) = c^2 Var(q.k)).
    logit_scale: Callable[[int, int], float] | None = None
    # True where score(params, q, k) = c * q.k with c fixed by d_k and the
    # options alone (no per-row factor): then q.k = (W_k^T q).x lets a model
    # skip forming the keys (see experiments.training.reassociate.bilinear_rows).
    bilinear: bool = False
    # factored(params, q, w_k, x, key_count, **score_options) -> logits: the same
    # score with the keys given in factored form k = x @ w_k (w_k [d_model, d_k],
    # x [..., n_k, d_model]), written so that nothing of size n_k x d_k is formed.
    # None where the variant has no such form (see training.reassociate.factored_rows).
    factored: Callable[..., Any] | None = None
    # weights(logits, mask) -> weights over the keys, 0 where masked (attention.weights)
    weights: Callable[..., Any] = masked_softmax
    # how figures and tables name and draw it; "" and None: its name and a colour of its own
    label: str = ""
    color: str | None = None
    # range checks of its options: check(options) raises ValueError("attention.<key>: ...")
    check: Callable[[dict], None] | None = None
    # query_init_scale(d_k) -> the factor on W_q's init (the model's query projection, not the
    # variant's own parameters); None: W_q as the model's init draws it (training.inits)
    query_init_scale: Callable[[int], float] | None = None

    def init_logit_scale(self, d_k: int, n_keys: int) -> float:
        """c at init: the score's factor times W_q's init factor (Var(logit) = d_k c^2 for unit
        q, k components); unscaled_init's is scaled's, 1/sqrt(d_k). Only where logit_scale is set."""
        query = 1.0 if self.query_init_scale is None else self.query_init_scale(d_k)
        return self.logit_scale(d_k, n_keys) * query

    @property
    def reassociable(self) -> bool:
        """Whether model.reassociate changes this variant's computation."""
        return self.bilinear or self.factored is not None


VARIANTS: dict[str, Variant] = {}


def register(variant: Variant) -> Variant:
    VARIANTS[variant.name] = variant
    return variant


class UnknownVariantError(ValueError):
    pass


def get_variant(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        valid = ", ".join(sorted(VARIANTS))
        raise UnknownVariantError(
            f"attention: unknown variant {name!r}; valid names: {valid}"
        ) from None


def variant_names() -> list[str]:
    """Every registered variant: the paper's three first, then in registration order."""
    return [n for n in PAPER_VARIANTS if n in VARIANTS] + [n for n in VARIANTS if n not in PAPER_VARIANTS]


def _option_fields(fn: Callable, names: tuple[str, ...]) -> list[tuple]:
    """(name, type, field) of each option `fn` takes: its annotation and default."""
    hints = typing.get_type_hints(fn)
    params = inspect.signature(fn).parameters
    fields = []
    for name in names:
        kind = hints.get(name, Any)
        args = typing.get_args(kind)
        if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
            kind = Optional[next(a for a in args if a is not type(None))]
        fields.append((name, kind, dataclasses.field(default=params[name].default)))
    return fields


def option_schema(variant: Variant) -> type:
    """The typed schema of conf/attention/<name>.yaml: `name` and every option,
    typed and defaulted as the variant's init and score functions declare them."""
    fields = [("name", str, dataclasses.field(default=variant.name))]
    fields += _option_fields(variant.init, variant.init_options)
    fields += _option_fields(variant.score, variant.score_options)
    return dataclasses.make_dataclass(f"{variant.name}_options", fields)


def option_error(ok: bool, key: str, allowed: str, value) -> None:
    """A variant's range check: `checks.check` under `attention.<key>` (docs/EXTENDING.md)."""
    check(ok, f"attention.{key}", allowed, value)


def split_options(variant: Variant, options: dict) -> tuple[dict, dict]:
    """(init options, score options) of a variant; unknown names are an error."""
    known = variant.init_options + variant.score_options
    unknown = sorted(set(options) - set(known))
    if unknown:
        allowed = ", ".join(known) or "none"
        raise ValueError(f"attention.{unknown[0]}: not an option of {variant.name!r}; "
                         f"allowed: {allowed}")
    pick = lambda names: {k: v for k, v in options.items() if k in names}
    return pick(variant.init_options), pick(variant.score_options)


def no_params(rng, d_k: int) -> Params:
    del rng, d_k
    return {}
