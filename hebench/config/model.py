"""The ``model:`` block: which network the clients train, and for the GPT-2 decoders how it is fine-tuned.

``fine_tuning`` says what a client trains and sends: ``{kind: full}`` (every parameter: the only choice for the
image models) or ``{kind: lora, rank, alpha, dropout, targets}`` (LoRA adapters on a frozen decoder: only the
adapters travel). A configuration may override it (``configurations[].fine_tuning``), so one suite compares
adapters with full fine-tuning of the same model. (The key is not ``adapter``: a configuration's ``adapter``
names its HE library.)
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, model_validator

from hebench.config.base import Frozen

ModelName = Literal[
    "cnn_dropout", "lenet", "mlp", "resnet18", "resnet50", "vit_small", "bert_base", "gpt2_tiny", "gpt2_small"
]
MODELS: tuple[str, ...] = get_args(ModelName)
# the GPT-2-architecture decoders (hebench.models.language.decoder), with the positions each reads: a text block
# longer than that has no position embedding (tests/models hold these equal to the decoders' shapes)
DECODER_POSITIONS: dict[str, int] = {"gpt2_tiny": 128, "gpt2_small": 1024}
PRETRAINED = ("gpt2_tiny",)  # decoders with a base pretrained centrally on public text, shipped with hebench
LORA_TARGETS = ("c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj", "c_proj", "c_fc")


class FullFineTuning(Frozen):
    """Every parameter trains and travels (tied embeddings once)."""

    kind: Literal["full"] = "full"

    @property
    def tag(self) -> str:
        return "full"


class LoraFineTuning(Frozen):
    """LoRA (Hu et al., 2021) through ``peft``: the base frozen, ``B @ A`` of rank ``rank`` on each target
    projection, scaled by ``alpha / rank``; only the adapters train and travel."""

    kind: Literal["lora"]
    rank: int = Field(8, ge=1)
    alpha: float = Field(16.0, gt=0)
    dropout: float = Field(0.0, ge=0, lt=1)  # 0: a client's update is a function of its data and seed
    targets: tuple[str, ...] = Field(("c_attn",), min_length=1)  # GPT-2's attention input projection (q, k, v)

    @model_validator(mode="after")
    def _known_targets(self) -> LoraFineTuning:
        unknown = [t for t in self.targets if t not in LORA_TARGETS]
        if unknown:
            raise ValueError(
                f"LoRA target {unknown[0]!r} is not a GPT-2 projection; choose from {', '.join(LORA_TARGETS)} "
                "(c_attn: queries, keys, values; attn.c_proj: the attention output)"
            )
        return self

    @property
    def tag(self) -> str:
        return f"lora-r{self.rank}"


FineTuning = Annotated[FullFineTuning | LoraFineTuning, Field(discriminator="kind")]


class ModelSpec(Frozen):
    # resnet50, vit_small, bert_base, gpt2_small: randomly initialised (no weights can be downloaded): cost, not
    # accuracy; gpt2_tiny: random, or with pretrained: true the base hebench pretrained on public Shakespeare
    name: ModelName = "mlp"
    hidden: int = Field(16, ge=1)  # mlp only
    pretrained: bool = False  # gpt2_tiny: start from the shipped base pretrained on public text
    # decoders: embedding rows, at least the tokenizer's vocabulary (rows past it are never read); None: the
    # tokenizer's size. 50257 gives gpt2_small GPT-2's published 124,439,808 parameters with any vocabulary
    vocab_size: int | None = Field(None, ge=257)
    # decoders: dropout on embeddings, attention and residuals in training; None: the shape's own (gpt2_small:
    # GPT-2's 0.1, gpt2_tiny: 0). 0 makes a client's update a function of its data (the exact text attack's premise)
    dropout: float | None = Field(None, ge=0, lt=1)
    fine_tuning: FineTuning = FullFineTuning()

    @model_validator(mode="after")
    def _decoder_options(self) -> ModelSpec:
        if self.pretrained and self.name not in PRETRAINED:
            raise ValueError(
                f"pretrained: true loads the base shipped for {', '.join(PRETRAINED)}; {self.name} is randomly "
                "initialised here (no weights can be downloaded): remove pretrained, or use name: gpt2_tiny"
            )
        if self.vocab_size is not None and (self.pretrained or not self.is_decoder):
            raise ValueError(
                "vocab_size sizes a randomly initialised decoder's embeddings (the pretrained base has its own, the "
                "image models none): remove vocab_size"
            )
        if self.dropout is not None and (self.pretrained or not self.is_decoder):
            raise ValueError(
                "dropout overrides a randomly initialised decoder's (the pretrained base and the image models have "
                "their own): remove dropout"
            )
        if isinstance(self.fine_tuning, LoraFineTuning) and not self.is_decoder:
            raise ValueError(
                f"LoRA adapters attach to the GPT-2 decoders' projections, not to {self.name}: use name: gpt2_tiny "
                "or gpt2_small, or fine_tuning: {kind: full}"
            )
        return self

    @property
    def is_decoder(self) -> bool:
        return self.name in DECODER_POSITIONS

    @property
    def task(self) -> Literal["classification", "next-token"]:
        """What the model is trained for: image (or token) classification, or next-token prediction on text."""
        return "next-token" if self.is_decoder else "classification"

    @property
    def origin(self) -> str:
        """Where the model's starting weights come from, in words (what its accuracy or perplexity starts from)."""
        if self.pretrained:
            return (
                "its base pretrained centrally by hebench on public text (the tiny-shakespeare roles no client "
                "holds), then fine-tuned by the clients"
            )
        if self.is_decoder:
            return (
                "randomly initialised (no pretrained weights can be downloaded here): its perplexity starts at an "
                "untrained model's"
            )
        return "randomly initialised and trained from scratch by the clients"

    def with_fine_tuning(self, fine_tuning: FullFineTuning | LoraFineTuning | None) -> ModelSpec:
        """This model fine-tuned as ``fine_tuning`` says (None: as it is)."""
        return self if fine_tuning is None else self.model_copy(update={"fine_tuning": fine_tuning})
