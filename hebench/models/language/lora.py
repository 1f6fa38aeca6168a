"""LoRA adapters through ``peft`` (Hu et al., 2021): a frozen base, trainable low-rank updates on chosen layers.

``attach_lora`` wraps a GPT-2-architecture model in place (``peft.get_peft_model``): every base parameter
is frozen, and each targeted projection ``W`` gains ``B @ A`` scaled by ``alpha / rank`` (``A`` random,
``B`` zero, so the wrapped model starts equal to the base). The default targets GPT-2's fused attention
input projection ``c_attn`` (queries, keys and values); ``attn.c_proj`` adds the attention output
projection (plain ``c_proj`` would also match the MLP's). GPT-2's layers are ``Conv1D`` (weights stored
transposed), hence ``fan_in_fan_out``. The trainable parameters, and only they, are the update a client
sends (:mod:`.adapter_update`); the base never travels.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from hebench.errors import ParameterError

ATTENTION_INPUT, ATTENTION_OUTPUT = "c_attn", "attn.c_proj"


@dataclass(frozen=True)
class LoraSpec:
    rank: int = 8
    alpha: float = 16.0
    dropout: float = 0.0  # 0: a client's update is a deterministic function of its data and seed
    targets: tuple[str, ...] = (ATTENTION_INPUT,)

    def check(self) -> None:
        if self.rank < 1:
            raise ParameterError(f"LoRA rank must be >= 1, got {self.rank}", "set lora.rank, e.g. 8")
        if not 0.0 <= self.dropout < 1.0:
            raise ParameterError(f"LoRA dropout must be in [0, 1), got {self.dropout}", "set lora.dropout, e.g. 0.0")
        if not self.targets:
            raise ParameterError("LoRA needs at least one target module", f"e.g. targets: [{ATTENTION_INPUT}]")


def attach_lora(model: nn.Module, spec: LoraSpec = LoraSpec()) -> nn.Module:
    """``model`` wrapped with LoRA adapters (a ``peft`` model; the base inside is frozen and shared, not copied)."""
    from peft import LoraConfig, get_peft_model

    spec.check()
    names = [name for name, _ in model.named_modules()]
    missing = [t for t in spec.targets if not any(n == t or n.endswith(f".{t}") for n in names)]
    if missing:
        raise ParameterError(
            f"no layer of this model is named {', '.join(missing)}",
            f"target GPT-2's projections: {ATTENTION_INPUT}, {ATTENTION_OUTPUT}, mlp.c_fc, mlp.c_proj",
        )
    config = LoraConfig(
        r=spec.rank,
        lora_alpha=spec.alpha,
        lora_dropout=spec.dropout,
        target_modules=list(spec.targets),
        fan_in_fan_out=True,
        bias="none",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)
