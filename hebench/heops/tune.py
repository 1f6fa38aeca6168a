"""``hebench tune``'s library side: measure candidate compact parameter sets here, keep the Pareto set.

For a model (or a parameter count), a number of clients, value sizes and a security level, each
candidate (``seal-bfv`` at the packings that fit and, at the best packing, rings 2x and 4x the
smallest secure one (same bytes, fewer per-ciphertext costs), ``seal-ckks``, and the TenSEAL CKKS N=8192
baseline for reference) encrypts a sample of values as each client would, the aggregator sums
``clients`` of them (up to 4 distinct ones) with FedAvg weights and public keys only, and one
client decrypts. Per value: upload and download bytes, CPU (client encrypt + serialize +
deserialize + decrypt, plus the aggregation's share per client), and the max error against numpy's
weighted sum, beside the stated precision. The Pareto set minimises bytes, CPU and stated error.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hebench.crypto import create_adapter, load_adapter
from hebench.crypto.compact_params import MAX_VALUES_PER_SLOT, SealBFVParams, bfv_layout
from hebench.crypto.security import MAX_LOG_Q
from hebench.errors import ParameterError

if TYPE_CHECKING:
    from hebench.config import Suite

BASELINE = {"ring_degree": 8192, "coeff_mod_bits": [60, 40, 40, 60], "scale_bits": 40}
MEASURED_CLIENTS = 4  # distinct updates encrypted; the weights still assume `clients` summands


@dataclass(frozen=True)
class Candidate:
    name: str
    adapter: str
    params: dict[str, Any]

    @property
    def short(self) -> str:
        """The name without its ring degree (tables show N in a column of its own)."""
        return self.name.split(" N=")[0]


@dataclass(frozen=True)
class Measurement:
    candidate: Candidate
    ring_degree: int | None
    log_q: int | None
    values_per_slot: int
    security_bits: int
    upload_bytes_per_value: float
    download_bytes_per_value: float
    cpu_s_per_value: float
    max_abs_error: float
    precision: float
    pareto: bool = False
    phases_s: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SuiteTarget:
    """What a suite asks of compact HE: values per update, clients per aggregate, and the headroom its FedAvg
    weights need (``max_summands``)."""

    suite: str
    parameters: int
    clients: int  # updates summed per round
    headroom: int  # max_summands: the largest total of integer FedAvg weights a round can reach
    samples: tuple[int, ...]  # each client's training samples (the FedAvg weights' numerators)
    clip: float | None  # the suite's compact configurations' clip, if it has any


def fedavg_headroom(samples: Sequence[int], per_round: int | None = None) -> int:
    """``max_summands`` for exact FedAvg weights n_i / Σn over any ``per_round`` of these clients (all: None).

    The weights of a round's clients S reduce to integers over Σ_S n / gcd_S(n); that total is at most the
    ``per_round`` largest counts over the gcd of all counts (the README's rule: equal counts need the number
    of clients, the quickstart's 480/479/479 need 1438).
    """
    counts = [int(n) for n in samples]
    if not counts or min(counts) < 1:
        raise ParameterError("every client needs at least one training sample", "check the suite's data section")
    k = len(counts) if per_round is None else min(per_round, len(counts))
    return sum(heapq.nlargest(k, counts)) // math.gcd(*counts)


def suite_target(suite: Suite) -> SuiteTarget:
    """Load the suite's data and model (as a run would) to size compact HE for it."""
    from hebench.data.registry import load_federated
    from hebench.models.registry import build_model, parameter_count

    data = load_federated(suite.data, suite.seed)
    suite = suite.with_clients(len(data.clients))
    model = build_model(suite.model.name, data.input_shape, data.num_classes, suite.model.hidden)
    samples = tuple(len(c) for c in data.clients)
    per_round = suite.training.clients_per_round
    clients = len(samples) if per_round is None else min(int(per_round), len(samples))
    clips = [
        float(c.params["clip"]) for c in suite.configurations if c.adapter.startswith("seal-") and "clip" in c.params
    ]
    return SuiteTarget(
        suite.name,
        parameter_count(model),
        clients,
        fedavg_headroom(samples, per_round),
        samples,
        max(clips) if clips else None,
    )


def _built(model: str) -> Any:
    """A model hebench builds, seeded as runs are (28x28 inputs, 62 classes as FEMNIST; mlp: 10; RGB 32x32 for
    the ResNets and ViT; 32 tokens for BERT)."""
    import torch

    from hebench.models.registry import build_model

    classes = 10 if model == "mlp" else 62
    shape = {"resnet18": (3, 32, 32), "resnet50": (3, 32, 32), "vit_small": (3, 32, 32), "bert_base": (1, 1, 32)}
    torch.manual_seed(0)
    return build_model(model, shape.get(model, (1, 28, 28)), classes)


def model_parameters(model: str) -> int:
    """Parameter count of a model hebench builds (shapes as :func:`_built`)."""
    from hebench.models.registry import parameter_count

    return parameter_count(_built(model))


@dataclass(frozen=True)
class ClipProposal:
    """A compact adapter's ``clip`` for a model: the initial model fits with room to double (no range scale)."""

    clip: float
    max_abs: float  # the largest |weight| of the initial model
    tensor: str  # the parameter holding it


def propose_clip(model: str) -> ClipProposal:
    """The smallest power of two at least twice the initial model's largest |weight| (hebench.fl.value_range).

    Tensors that outgrow it during training are scaled per round by the clients, so a larger clip only costs
    precision everywhere; a smaller one costs it in the tensors that need a scale.
    """
    from hebench.fl.value_range import MARGIN
    from hebench.models.shared import shared_tensors

    peaks = {name: float(p.detach().abs().max()) for name, p in shared_tensors(_built(model)) if p.numel()}
    tensor = max(peaks, key=lambda name: peaks[name])
    return ClipProposal(float(2 ** math.ceil(math.log2(MARGIN * peaks[tensor]))), peaks[tensor], tensor)


def candidates(
    bits: list[int], clients: int, clip: float, security: int, baseline: bool, headroom: int | None = None
) -> list[Candidate]:
    """Candidate sets for ``clients`` updates per aggregate, ``headroom`` (default: ``clients``) the
    ``max_summands`` their FedAvg weights need."""
    out = []
    summands = headroom or clients
    for b in bits:
        common = {"bits": b, "clip": clip, "max_summands": summands, "security_level": security}
        best = bfv_layout(SealBFVParams(**common)).values_per_slot
        for vps in range(1, MAX_VALUES_PER_SLOT + 1):
            try:
                bfv_layout(SealBFVParams(**common, values_per_slot=vps))
            except ParameterError:
                continue
            if vps in (1, best) or vps == best - 1:
                out.append(Candidate(f"seal-bfv {b}-bit x{vps}", "seal-bfv", {**common, "values_per_slot": vps}))
        smallest = bfv_layout(SealBFVParams(**common)).ring_degree
        for ring in (2 * smallest, 4 * smallest):  # larger rings: same bytes, fewer per-ciphertext costs
            if ring <= max(MAX_LOG_Q):
                params = {**common, "values_per_slot": best, "ring_degree": ring}
                out.append(Candidate(f"seal-bfv {b}-bit x{best} N={ring}", "seal-bfv", params))
        out.append(Candidate(f"seal-ckks {b}-bit", "seal-ckks", common))
    if baseline:
        out.append(Candidate("tenseal-ckks N=8192", "tenseal-ckks", {**BASELINE, "max_summands": summands}))
    return out


def round_weights(clients: int, samples: Sequence[int] | None = None) -> list[float]:
    """FedAvg weights of the first (up to 4) updates measured: equal shares of ``clients``, or with sample
    counts those of the round of the ``clients`` largest counts (the one that needs the most headroom)."""
    if samples is None:
        return [1.0 / clients] * min(clients, MEASURED_CLIENTS)
    chosen = heapq.nlargest(clients, samples)
    total = sum(chosen)
    return [n / total for n in chosen[:MEASURED_CLIENTS]]


def measure(candidate: Candidate, values: int, weights: Sequence[float], clip: float, seed: int = 0) -> Measurement:
    """Encrypt ``len(weights)`` updates, sum them with those FedAvg weights and public keys only, decrypt."""
    rng = np.random.default_rng(seed)
    holder = create_adapter(candidate.adapter, candidate.params)
    holder.keygen()
    public = load_adapter(holder.export_keys(secret=False))
    k = len(weights)
    xs = [rng.uniform(-clip, clip, values) for _ in range(k)]
    cpu: dict[str, float] = {}

    def timed(phase: str, fn: Callable[[], Any]) -> Any:
        start = time.process_time()
        out = fn()
        cpu[phase] = cpu.get(phase, 0.0) + time.process_time() - start
        return out

    blobs = [timed("encrypt", lambda x=x: holder.serialize(holder.encrypt(x))) for x in xs]
    total = None
    for blob, weight in zip(blobs, weights, strict=True):
        term = timed("aggregate", lambda b=blob, w=weight: public.multiply_plain(public.deserialize(b), w))
        total = term if total is None else timed("aggregate", lambda t=total, u=term: public.add(t, u))
    aggregate = timed("aggregate", lambda: public.serialize(total))
    got = timed("decrypt", lambda: holder.decrypt(holder.deserialize(aggregate)))
    want = sum(w * x for w, x in zip(weights, xs, strict=True))
    info = holder.info()
    layout = info.params.get("layout", {})
    per_client = cpu["encrypt"] / k + cpu["aggregate"] / k + cpu["decrypt"]
    return Measurement(
        candidate=candidate,
        ring_degree=info.ring_degree,
        log_q=info.log_q,
        values_per_slot=int(layout.get("values_per_slot", 1)),
        security_bits=info.security_bits,
        upload_bytes_per_value=sum(map(len, blobs)) / k / values,
        download_bytes_per_value=len(aggregate) / values,
        cpu_s_per_value=per_client / values,
        max_abs_error=float(np.abs(got - want).max()),
        precision=info.precision,
        phases_s={"encrypt": cpu["encrypt"] / k, "aggregate": cpu["aggregate"] / k, "decrypt": cpu["decrypt"]},
    )


def pareto(measurements: list[Measurement]) -> list[Measurement]:
    """The same list, with ``pareto`` set where no other is at least as good in bytes, CPU and error.

    Error is the stated precision (the guarantee), not the sample's max error, which varies by chance.
    """

    def key(m: Measurement) -> tuple[float, float, float]:
        return (m.upload_bytes_per_value + m.download_bytes_per_value, m.cpu_s_per_value, m.precision)

    out = []
    for m in measurements:
        dominated = any(
            all(a <= b for a, b in zip(key(o), key(m), strict=True)) and key(o) != key(m) for o in measurements
        )
        out.append(Measurement(**{**m.__dict__, "pareto": not dominated}))
    return out


def tune(
    parameters: int,
    clients: int,
    bits: list[int],
    clip: float,
    security: int = 128,
    sample: int = 1 << 17,
    baseline: bool = True,
    on_start: Callable[[Candidate, int], None] | None = None,
    on_done: Callable[[Measurement], None] | None = None,
    headroom: int | None = None,
    samples: Sequence[int] | None = None,
) -> list[Measurement]:
    """Measure every candidate on ``min(parameters, sample)`` values; per-value figures hold for any size.

    ``clients`` updates per aggregate; ``headroom`` (default: ``clients``) is the ``max_summands`` written;
    with ``samples`` (each client's count) the updates are weighed as FedAvg weighs them, so a headroom too
    small for those weights fails here, not in a run. ``on_start(candidate, total)`` and
    ``on_done(measurement)`` report progress.
    """
    if clients < 1 or parameters < 1:
        raise ParameterError("clients and parameters must be positive", "pass --clients N and a model or --parameters")
    values = min(parameters, sample)
    todo = candidates(bits, clients, clip, security, baseline, headroom)
    weights = round_weights(clients, samples)
    results = []
    for cand in todo:
        if on_start is not None:
            on_start(cand, len(todo))
        results.append(measure(cand, values, weights, clip))
        if on_done is not None:
            on_done(results[-1])
    return pareto(results)


def suite_block(measurements: list[Measurement]) -> dict[str, Any]:
    """The Pareto set as suite ``configurations`` (host-he; change ``mode`` to offload as needed)."""
    return {
        "configurations": [
            {"name": m.candidate.name, "mode": "host-he", "adapter": m.candidate.adapter, "params": m.candidate.params}
            for m in measurements
            if m.pareto
        ]
    }
