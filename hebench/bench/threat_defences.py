"""What the defences against colluders and cheating aggregators cost (issue #29), measured in the same run.

- secagg's model check (``params.model_check``): one SecAgg+ round of 8 clients on CNN_DropOut's 1,206,590
  values with and without it (clients as threads, each charged its own thread's CPU; bytes of the local
  runtime's frames), plus the digest of the global model a client takes each round;
- decryptor-he against host-he, per client and round on the same vector: host-he encrypts and decrypts the
  aggregate itself; a decryptor-he client encrypts under the public set and opens the sealed aggregate, and
  the decryptor decrypts the one aggregate of the round and seals it. Bytes: what a client receives back.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

import numpy as np
from cryptography.fernet import Fernet

from hebench.bench.protections_scale import PARAMETERS, pair
from hebench.bench.registry import study
from hebench.crypto.registry import create_adapter, load_adapter, status
from hebench.fl.meter import PhaseMeter
from hebench.fl.roster import make_identities
from hebench.protections.decryptor_he.decryptor import open_sealed
from hebench.protections.secagg.client import SecAggClientRound
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.server import collect_secagg
from hebench.protections.selective.split import PLAIN

CLIENTS = 8


def _secagg_round(params: SecAggParams, size: int, clients: int) -> dict[str, float]:
    vector = np.random.default_rng(0).normal(0, 0.05, size).astype(np.float32)
    digest = hashlib.sha256(vector.tobytes()).digest()
    ends = {i: pair(f"client {i}") for i in range(clients)}
    identities = make_identities(clients)  # the trusted set-up (secagg's active model signs with them)
    cpu: dict[int, float] = {}

    def client(i: int) -> None:
        meter = PhaseMeter(worker="bench")
        SecAggClientRound(i, ends[i][1], params, meter, digest, identity=identities[i]).run(vector, 10, {})
        cpu[i] = sum(p["cpu_s"] for p in meter.take()["phases"].values())

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    collect_secagg({i: e[0] for i, e in ends.items()}, params, PhaseMeter(worker="bench"))
    for t in threads:
        t.join()
    return {
        "client_cpu_s": float(np.mean(list(cpu.values()))),
        "client_bytes_sent": float(np.mean([e[1].bytes_sent for e in ends.values()])),
    }


def model_check_cost(size: int = PARAMETERS, clients: int = CLIENTS, repeats: int = 3) -> dict[str, Any]:
    """secagg with and without the model check (rounds alternated, medians over ``repeats``), and the
    per-round digest (sha256 of the global model)."""
    runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    for _ in range(repeats):
        for check in (False, True):
            runs[check].append(_secagg_round(SecAggParams(model_check=check), size, clients))
    plain, checked = ({k: float(np.median([r[k] for r in runs[c]])) for k in runs[c][0]} for c in (False, True))
    model = np.random.default_rng(1).normal(0, 0.05, size).astype("<f4")
    t0 = time.thread_time()
    hashlib.sha256(model.tobytes()).digest()
    digest_cpu = time.thread_time() - t0
    return {
        "clients": clients,
        "parameters": size,
        "repeats": repeats,
        "without": plain,
        "with": checked,
        "digest_cpu_s": digest_cpu,
        "client_cpu_ratio": (checked["client_cpu_s"] + digest_cpu) / plain["client_cpu_s"],
        "client_extra_bytes": checked["client_bytes_sent"] - plain["client_bytes_sent"],
    }


def decryptor_cost(size: int = PARAMETERS, adapter_name: str = "tenseal-ckks") -> dict[str, Any] | None:
    """One round's HE work per client in host-he and decryptor-he, and the decryptor's, on one vector."""
    if not status(adapter_name).available:
        return None
    authority = create_adapter(adapter_name, {})
    authority.keygen()
    secret, public = load_adapter(authority.export_keys(secret=True)), load_adapter(authority.export_keys(secret=False))
    vector = np.random.default_rng(0).normal(0, 0.05, size).astype(np.float32)
    seal = Fernet.generate_key()

    def timed(work: Any) -> tuple[Any, float]:
        t0 = time.thread_time()
        out = work()
        return out, time.thread_time() - t0

    upload, host_up = timed(lambda: secret.serialize(secret.encrypt(vector)))
    _, host_down = timed(lambda: secret.decrypt(secret.deserialize(upload)))
    _, public_up = timed(lambda: public.serialize(public.encrypt(vector)))
    sealed, decryptor_cpu = timed(
        lambda: Fernet(seal).encrypt(PLAIN.serialize(PLAIN.encrypt(secret.decrypt(secret.deserialize(upload)))))
    )
    opened, open_cpu = timed(lambda: open_sealed(sealed, seal))
    assert np.abs(opened - vector).max() < 1e-3
    return {
        "adapter": adapter_name,
        "parameters": size,
        "host_he_client_cpu_s": host_up + host_down,
        "decryptor_he_client_cpu_s": public_up + open_cpu,
        "decryptor_cpu_s": decryptor_cpu,
        "client_cpu_ratio": (public_up + open_cpu) / (host_up + host_down),
        "aggregate_bytes": {"host_he": len(upload), "decryptor_he": len(sealed)},
    }


@study("threat_defences")
def threat_defences() -> dict[str, Any]:
    """What secagg's model check and decryptor-he cost (against host-he), on CNN_DropOut's 1,206,590 values."""
    return {"benchmark": "threat_defences", "model_check": model_check_cost(), "decryptor": decryptor_cost()}
