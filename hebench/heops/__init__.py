"""Per-operation HE costs: ``hebench compare libraries`` and ``hebench tune``."""
