"""Language models: a GPT-2-architecture decoder (tiny and GPT-2-small configurations), LoRA adapters through
``peft``, next-token loss and perplexity, and the tiny base pretrained on public Shakespeare.

Every module here imports Hugging Face ``transformers`` / ``peft``; this package's import first hides a
torchvision that is installed but cannot be imported (see :mod:`.torchvision_guard`), so import these
modules through this package, never ``transformers`` first.
"""

from hebench.models.language.torchvision_guard import hide_broken_torchvision

TORCHVISION_HIDDEN = hide_broken_torchvision()  # the import error of a torchvision hidden here, else None
