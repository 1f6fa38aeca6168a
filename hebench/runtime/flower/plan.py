"""What a Flower run needs to know, passed as Flower run config (public) and node config (node-local).

Run config travels through the SuperLink, so it carries nothing secret: the
suite, the configuration, the hub's addresses, its CA certificate (for the
server) and the server's hub credential (which only ever yields public keys).
The clients' hub credential, the hub CA they trust, the partition and the
offload engine are node config, set where each SuperNode starts and never
seen by the server: a SuperLink that rewrote the run config could not make a
node take keys from anyone but the hub.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hebench.config import Configuration, Suite
from hebench.errors import PartyError
from hebench.results.run_folder import RunFolder

PLAN_KEY = "hebench-plan"
SERVER_KEY = "hebench-server-key"


@dataclass(frozen=True)
class FlowerPlan:
    suite: Suite
    config_index: int
    run_id: str
    hub_public: tuple[str, int]  # the server's door: public keys and records
    hub_holders: tuple[str, int]  # the clients' door: secret keys (host-he) and records
    run_dir: str
    hub_ca: str | None = None  # PEM of the CA that signed the hub's certificate (None: loopback, no TLS)

    @property
    def config(self) -> Configuration:
        return self.suite.configurations[self.config_index]

    def transcript(self, role: str) -> Path | None:
        """Where a party appends what it received, with ``measure.transcripts`` (security scans)."""
        if not self.suite.measure.transcripts:
            return None
        folder = RunFolder(Path(self.run_dir)).transcripts(self.config.label)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{role}.bin"

    def to_json(self) -> str:
        return json.dumps(
            {
                "suite": self.suite.model_dump(mode="json"),
                "config_index": self.config_index,
                "run_id": self.run_id,
                "hub_public": list(self.hub_public),
                "hub_holders": list(self.hub_holders),
                "run_dir": self.run_dir,
                "hub_ca": self.hub_ca,
            }
        )

    @classmethod
    def from_run_config(cls, run_config: dict[str, Any]) -> FlowerPlan:
        text = run_config.get(PLAN_KEY)
        if not text:
            raise PartyError(
                "this Flower run carries no hebench plan", "start it with `hebench run SUITE --engine flower`"
            )
        raw = json.loads(str(text))
        return cls(
            suite=Suite.model_validate(raw["suite"]),
            config_index=int(raw["config_index"]),
            run_id=str(raw["run_id"]),
            hub_public=(raw["hub_public"][0], int(raw["hub_public"][1])),
            hub_holders=(raw["hub_holders"][0], int(raw["hub_holders"][1])),
            run_dir=str(raw["run_dir"]),
            hub_ca=raw.get("hub_ca"),
        )


@dataclass(frozen=True)
class NodeSettings:
    """One SuperNode's own settings (``--node-config``)."""

    partition: int
    partitions: int
    credential: Path  # the clients' hub key file
    hub_ca: Path | None  # the CA this node trusts for the hub's certificate
    engine: tuple[str, int] | None  # this node's offload engine
    engine_tls: Path | None  # `hebench engine certs` folder holding host-<partition>.pem
    worker: str | None = None  # simulation: the shared process hosting this virtual node (thread CPU accounting)

    @classmethod
    def from_node_config(cls, node_config: dict[str, Any]) -> NodeSettings:
        missing = [k for k in ("partition-id", "num-partitions", "hebench-credential") if k not in node_config]
        if missing:
            raise PartyError(
                f"SuperNode node config lacks {', '.join(missing)}",
                "start SuperNodes with --node-config \"partition-id=I num-partitions=N hebench-credential='FILE'\" "
                "(hebench flower up does this)",
            )
        engine = str(node_config.get("hebench-engine", ""))
        host, _, port = engine.rpartition(":")
        tls = str(node_config.get("hebench-engine-tls", ""))
        hub_ca = str(node_config.get("hebench-hub-ca", ""))
        return cls(
            partition=int(node_config["partition-id"]),
            partitions=int(node_config["num-partitions"]),
            credential=Path(str(node_config["hebench-credential"])),
            hub_ca=Path(hub_ca) if hub_ca else None,
            engine=(host, int(port)) if engine else None,
            engine_tls=Path(tls) if tls else None,
            worker=str(node_config["hebench-worker"]) if "hebench-worker" in node_config else None,
        )

    def read_credential(self) -> bytes:
        try:
            return bytes.fromhex(self.credential.read_text().strip())
        except (OSError, ValueError) as err:
            raise PartyError(
                f"cannot read the hub credential {self.credential}: {err}",
                "point hebench-credential at the federation's client.key",
            ) from None

    def read_hub_ca(self) -> str | None:
        if self.hub_ca is None:
            return None
        try:
            return self.hub_ca.read_text()
        except OSError as err:
            raise PartyError(
                f"cannot read the hub CA {self.hub_ca}: {err}",
                "point hebench-hub-ca at the federation's hub-tls/ca.pem",
            ) from None


# Message config keys and message types of hebench's Flower protocol.
ROUND, EPOCH = "hebench-round", "hebench-epoch"  # the round being trained and its key epoch
AGG_EPOCH, WEIGHTS = "hebench-aggregate-epoch", "hebench-weights"  # the aggregate's key epoch, FedAvg weights (JSON)
INITIAL, GLOBAL_DIGEST = "hebench-initial", "hebench-global-digest"  # round 1 / which aggregate the node holds
CLIENT = "hebench-client"  # metric: the replying node's partition
MAP_QUERY, MASK_QUERY = "query.hebench_map", "query.hebench_mask"  # selective mask agreement
PARTITION_QUERY = "query.hebench_partition"  # which suite client a node is (the server samples by partition)
# faults (hebench.faults): a node's train reply may say it left (metric: the phase, no update unless after_upload);
# an evaluate message says the round was skipped (the global model unchanged) or what the survivors' weights add to
LEFT, SKIPPED, WEIGHT_TOTAL = "hebench-left", "hebench-skipped", "hebench-weight-total"
PRE = "hebench-pre-weight"  # a training message's FedAvg weight for the node to apply before encryption (JSON)
INITIAL_DIGEST = "initial"  # the digest naming the suite's seeded initial model (no aggregate yet)
START_DIGEST = "hebench-start-digest"  # an aggregate's evaluate message: the global model its round started from
