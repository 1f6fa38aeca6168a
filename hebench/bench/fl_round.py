"""One host-he FedAvg round of FedNIC's CNN (cnn_dropout), 2 clients: flat vs per-layer packing.

Per adapter and packing: HE CPU seconds per client per round (encrypt, serialize,
deserialize, decrypt), upload bytes per parameter and expansion over float32,
beside FedNIC's 78.8 MB per update and FedML-HE's 16.6x expansion.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hebench.analysis.summary import summarize_run
from hebench.bench.registry import Option, study
from hebench.config import parse_suite
from hebench.crypto.registry import status
from hebench.data.cache import FEMNIST_SAMPLE
from hebench.results import read_records
from hebench.results.records import PartyRoundRecord
from hebench.runtime.runner import Runner

HE_PHASES = ("encrypt", "serialize", "deserialize", "decrypt")
LATTICE = ("tenseal-ckks", "tenseal-bfv", "pyfhel-ckks", "pyfhel-bfv")


def bench_data(data_path: Path | None) -> dict[str, Any]:
    """Two clients of the FEMNIST sample shipped in datasets/ where it is present, else of the embedded digits."""
    if data_path is None:
        return {"dataset": "digits", "clients": 2}
    return {"dataset": "femnist", "clients": 2, "path": str(data_path)}


def fl_round_suite(adapters: list[str], data_path: Path | None) -> dict[str, Any]:
    data = bench_data(data_path)
    configs: list[dict[str, Any]] = [{"mode": "raw"}]
    for name in adapters:
        params = {"key_bits": 2048} if name == "paillier" else {}
        configs.append({"mode": "host-he", "adapter": name, "params": params})
        if name != "paillier":
            configs.append({"mode": "host-he", "adapter": name, "params": params, "packing": "per-layer"})
    return {
        "name": "bench-fl-round",
        "data": data,
        "model": {"name": "cnn_dropout"},
        "training": {"rounds": 1, "local_steps": 1, "batch_size": 32, "lr": 0.03},
        "configurations": configs,
        "measure": {"timeout_s": 3600},
    }


@study(
    "fl_round",
    options=(Option("--with-paillier", "with_paillier", "include Paillier (2048-bit) in the round (minutes)"),),
)
def fl_round(with_paillier: bool = False) -> dict[str, Any]:
    """One host-HE FedAvg round of FedNIC's CNN (2 clients): HE CPU and bytes per adapter, flat vs per-layer packing."""
    adapters = [a for a in LATTICE if status(a).available] + (["paillier"] if with_paillier else [])
    data_path = FEMNIST_SAMPLE if FEMNIST_SAMPLE.is_dir() else None
    with tempfile.TemporaryDirectory() as tmp:
        results = Runner(parse_suite(fl_round_suite(adapters, data_path)), Path(tmp)).run()
        records = read_records(results).records
    rows = []
    for row in summarize_run(records):
        clients = [r for r in records if isinstance(r, PartyRoundRecord) and r.config == row.config and r.trained]
        he_cpu = [sum(r.phases[ph].cpu_s for ph in HE_PHASES if ph in r.phases) for r in clients]
        upload = row.upload_bytes_per_client_round or 0.0
        rows.append(
            {
                "config": row.config,
                "parameters": row.parameters,
                "he_cpu_s_per_client": sum(he_cpu) / len(he_cpu),
                "client_cpu_s_per_round": row.client_cpu_s_per_round,
                "upload_bytes": upload,
                "upload_mb": upload / 1e6,
                "bytes_per_parameter": upload / row.parameters,
                "expansion_over_float32": upload / (4 * row.parameters),
                "aggregate_s": row.aggregator_wall_s.get("aggregate"),
            }
        )
    return {
        "benchmark": "fl_round_cnn_dropout",
        "dataset": "femnist-sample" if data_path else "digits",
        "references": {"fednic_update_mb": 78.8, "fedml_he_expansion": 16.6},
        "rows": rows,
    }
