"""Models: FedML's CNN_DropOut (FEMNIST), DLG's sigmoid LeNet, an MLP, ResNet-18/50, ViT-Small, BERT-base; GPT-2
decoders with LoRA adapters in :mod:`hebench.models.language`."""

from hebench.models.registry import build_model, count_parameters, parameter_count

__all__ = ["build_model", "count_parameters", "parameter_count"]
