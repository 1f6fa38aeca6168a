"""What the red-team tests share: digits clients that train a small MLP as hebench's clients do (one SGD step on
their own images, from the model the aggregator handed them), how an adversary turns an upload back into the
victim's gradient, a party's control pipe, and an observer's reading of the wire (frames off a tap, decoded as the
parties decode them)."""

from __future__ import annotations

import copy
import struct
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hebench.config import DataSpec
from hebench.data.registry import load_federated
from hebench.errors import PartyError
from hebench.fl.update import load_vector, model_vector
from hebench.models import build_model
from hebench.net.transport import Message, decode
from hebench.protections.red_team import Control as Control  # the live rounds' pipe, re-exported for the tests

LR = 0.5  # the clients' step: the adversary knows it (the suite says it)
BATCH = 4
SHAPE = (1, 28, 28)  # hebench's digits, upsampled


@dataclass
class Digits:
    """``clients`` digits clients of one round; client ``i`` trains on its first :data:`BATCH` images."""

    clients: int = 3
    seed: int = 0

    @cached_property
    def data(self):
        return load_federated(DataSpec(dataset="digits", clients=self.clients), self.seed)

    def model(self) -> nn.Module:
        torch.manual_seed(self.seed)
        return build_model("mlp", SHAPE, 10, 16)

    def batch(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        client = self.data.clients[i]
        return client.x[:BATCH], client.y[:BATCH]

    def gradient(self, net: nn.Module, i: int) -> np.ndarray:
        """Client ``i``'s gradient on ``net`` (what the adversary wants), flat."""
        x, y = self.batch(i)
        grads = torch.autograd.grad(F.cross_entropy(net(x), y), list(net.parameters()))
        return torch.cat([g.reshape(-1) for g in grads]).double().numpy()

    def trainer(self, like: nn.Module):
        """Client i's training: one SGD step from the model it holds (loaded into a copy of ``like``)."""

        def train(i: int, held: np.ndarray) -> np.ndarray:
            net = copy.deepcopy(like)
            load_vector(net, held)
            return (held - LR * self.gradient(net, i)).astype(np.float32)

        return train


def vector(net: nn.Module) -> np.ndarray:
    return model_vector(net)


def gradient_of(upload: np.ndarray, handed: np.ndarray) -> np.ndarray:
    """The gradient an adversary reads out of an upload, knowing the model it handed and the step."""
    return (handed.astype(np.float64) - upload.astype(np.float64)) / LR


def sizes(net: nn.Module) -> tuple[int, ...]:
    return tuple(p.numel() for p in net.parameters())


def windows(values: np.ndarray, count: int = 8, width: int = 16) -> list[bytes]:
    """``count`` windows of ``width`` float32 values spread over ``values``: what a byte scan looks for."""
    raw = np.asarray(values, dtype=np.float32)
    step = max((len(raw) - width) // count, 1)
    return [raw[s : s + width].tobytes() for s in range(0, len(raw) - width, step)][:count]


def wire_messages(stream: bytes, header: str = "!i") -> list[Message]:
    """Every hebench message in one direction of a TCP connection, as an observer reads it: the frames
    (multiprocessing's 4-byte length prefix; ``>Q`` for an engine's framed socket), those that decode as messages
    (the handshake's frames do not)."""
    size, at, found = struct.calcsize(header), 0, []
    while at + size <= len(stream):
        (n,) = struct.unpack(header, stream[at : at + size])
        if n == -1:  # multiprocessing's long form: an 8-byte length follows
            (n,) = struct.unpack("!Q", stream[at + size : at + size + 8])
            at += 8
        frame = stream[at + size : at + size + n]
        at += size + n
        try:
            found.append(decode(frame))
        except PartyError:
            continue
    return found
