"""Homomorphic-encryption adapters: one interface, one adapter per library, a registry."""

from hebench.crypto.base import EncryptedVector, HEAdapter, SchemeInfo
from hebench.crypto.registry import AdapterStatus, adapter_names, create_adapter, list_adapters, load_adapter

__all__ = [
    "AdapterStatus",
    "EncryptedVector",
    "HEAdapter",
    "SchemeInfo",
    "adapter_names",
    "create_adapter",
    "list_adapters",
    "load_adapter",
]
