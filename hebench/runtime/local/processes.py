"""The local runtime: parties as OS processes on this machine, over authenticated loopback sockets.

The key authority and the aggregator are processes; each client is a process
of its own, or (``runtime.hosting: pool``, and ``auto`` beyond a few clients)
a thread of one of a few pool workers (:mod:`hebench.runtime.local.pool`). In offload
mode each client also gets an engine process on its own cores (or a remote
engine from the suite). Each party receives only its own keys at the doors its
role may use, and each door keeper the keys of the parties its door admits
(:mod:`hebench.runtime.local.credentials`): a door learns who a peer is from the
key it proves (or its certificate), never from what it says.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing as mp
import queue
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hebench.config import Suite
from hebench.fl.aggregator import run_aggregator
from hebench.fl.allowance import allowance_for
from hebench.fl.client import run_client
from hebench.fl.key_authority import run_key_authority
from hebench.fl.party import KEY_AUTHORITY, Credentials, PartyContext, Wiring, client_party, engine_door, party_main
from hebench.fl.roster import make_identities
from hebench.net.address import parse_address
from hebench.net.certs import TLSFiles, make_certificates, make_party_certificates, party_tls
from hebench.net.shaping.scope import run_bound
from hebench.protections import KeyHolders
from hebench.protections.offload.engine import STOP, EngineConfig, local_engine_main
from hebench.protections.offload.placement import place
from hebench.protections.spec import resolve
from hebench.results.records import PoolWorkerRecord, Record
from hebench.results.run_folder import RunFolder, safe_label
from hebench.runtime.base import ConfigurationRun, Started, nothing_to_hold
from hebench.runtime.hosting import Hosting, plan_hosting
from hebench.runtime.local.credentials import RunCredentials
from hebench.runtime.local.network import ConfigurationNetwork, prepare
from hebench.runtime.local.party_names import helper_names
from hebench.runtime.local.pool import pool_main


class LocalRuntime:
    name = "hebench"
    supports_resume = True

    def session(self, suite: Suite, run_dir: Path, note: Callable[[str], None]) -> Any:
        return nothing_to_hold()

    def configuration_fields(self) -> dict[str, Any]:
        return {}

    def start(self, run: ConfigurationRun, control_recv: Callable[[Any, str, Started], Any]) -> Started:
        suite, config = run.suite, run.config
        creds = RunCredentials(config, len(run.data.clients))
        tls_folder = party_certificates(run)
        decrypts_for_others = config.spec.needs_engines or config.spec.key_holders is KeyHolders.DECRYPTOR
        base = PartyContext(
            suite=suite,
            config=config,
            run_dir=run.run_dir,
            credentials=Credentials(),
            run_id=secrets.token_hex(8),
            start_round=run.start_round,
            input_shape=run.data.input_shape,
            num_classes=run.data.num_classes,
            initial=run.initial,
            cores=host_cores(suite),
            tls=tls_folder,
            allowance=allowance_for(suite, config, run.data.input_shape, run.data.num_classes, run.start_round)
            if decrypts_for_others
            else None,
        )
        spawn = mp.get_context("spawn")
        helpers = helper_names(config)
        names = ("aggregator", *helpers, *(f"client-{i}" for i in range(len(run.data.clients))))
        started = Started(records=spawn.Queue(), expected_setup=frozenset(names), extra_aggregators=len(helpers))
        controls: dict[str, Any] = {}
        hosting = plan_hosting(suite.runtime, len(run.data.clients), base.cores)
        network = prepare(suite, config, len(run.data.clients), base.run_id)  # every party starts on its link

        def start_process(name: str, target: Callable, args: tuple) -> None:
            parent, child = spawn.Pipe()
            party = None if name.startswith("pool-") else name  # a pool's client threads bind their own links
            args = (network.setup, party, target, *args, child, started.records)
            proc = spawn.Process(target=run_bound, args=args, name=name, daemon=True)
            proc.start()
            network.register(proc.pid)
            started.parties[name], controls[name] = proc, parent

        def start_party(name: str, body: Callable, ctx: PartyContext, party: str) -> None:
            start_process(name, party_main, (name, body, dataclasses.replace(ctx, credentials=creds.of(party))))

        def stop() -> None:
            stop_parties(started, {n: c for n, c in controls.items() if n.startswith("engine-")})
            network.close()

        started.stop = stop
        if hosting.pooled:
            started.describe_exit = _pool_exit(hosting)
            started.finish = _pool_totals(hosting, started, suite.measure.timeout_s)
        try:
            engines, tls_dir = self._start_engines(
                run, spawn, started, controls, creds, control_recv, tls_folder, network
            )
            start_party("key_authority", run_key_authority, base, KEY_AUTHORITY)
            ka = control_recv(controls["key_authority"], "key_authority", started)
            controls["key_authority"].send((engines, tls_dir))
            start_party("aggregator", run_aggregator, base, "aggregator")
            agg_address = control_recv(controls["aggregator"], "aggregator", started)
            controls["aggregator"].send(ka["public"])
            helper_addresses = []
            for k, name in enumerate(helpers, start=1):  # share holders, a decryptor: the mode's spec names them
                assert config.spec.helper_party is not None
                start_party(name, resolve(config.spec.helper_party), base, name)
                controls[name].send(k)
                if config.spec.helper_dials:
                    controls[name].send(Wiring(ka.get("decryptor"), agg_address))
                address = control_recv(controls[name], name, started)
                if address is not None:
                    helper_addresses.append(address)
            holders = config.spec.key_holders
            key_authority = ka["key_holder"] if holders in (KeyHolders.CLIENTS, KeyHolders.DECRYPTOR) else None
            identities = make_identities(len(run.data.clients))  # the trusted set-up's signing keys and roster

            def client(i: int, worker: str | None = None) -> PartyContext:
                """Client i's context; only the evaluating client 0 holds the test set."""
                test = (run.data.test_x, run.data.test_y) if i == 0 else None
                shard = run.data.clients[i]
                return dataclasses.replace(
                    base,
                    client_index=i,
                    data=shard,
                    test=test,
                    credentials=creds.of(client_party(i)),
                    worker=worker,
                    identity=identities[i],
                )

            def wiring(i: int) -> Wiring:
                engine = (engines[i], tls_dir) if engines else None
                return Wiring(key_authority, agg_address, engine, tuple(helper_addresses))

            if hosting.pooled:
                for name, group in hosting.workers().items():
                    start_process(name, pool_main, (name, tuple(client(i, name) for i in group)))
                    controls[name].send({i: wiring(i) for i in group})
            else:
                for i in range(len(run.data.clients)):
                    start_process(f"client-{i}", party_main, (f"client-{i}", run_client, client(i)))
                    controls[f"client-{i}"].send(wiring(i))
        except BaseException:
            stop()
            raise
        return started

    def _start_engines(
        self,
        run: ConfigurationRun,
        spawn: Any,
        started: Started,
        controls: dict[str, Any],
        creds: RunCredentials,
        control_recv: Callable[[Any, str, Started], Any],
        parties: str | None,
        network: ConfigurationNetwork,
    ) -> tuple[list[tuple[str, int]], str | None]:
        """Engine endpoints for a mode whose engines hold the keys: remote ones from the suite, or local processes."""
        suite, spec = run.suite, run.suite.offload
        if not run.config.spec.needs_engines:
            return [], None
        if spec.engines:
            return [parse_address(a, "offload.engines entry") for a in spec.engines], spec.tls_dir
        placement = place(spec)
        tls_dir = spec.tls_dir
        if (spec.tls or run.config.transport == "tls") and not tls_dir:
            tls_dir = str(RunFolder(run.run_dir).certs)
            make_certificates(Path(tls_dir), hosts=suite.data.clients)
        endpoints = []
        for i in range(suite.data.clients):
            tls = engine_files(tls_dir, i)
            transcripts = None
            if suite.measure.transcripts:
                transcripts = str(RunFolder(run.run_dir).transcripts(run.config.label) / f"engine-{i}")
            engine_config = EngineConfig(
                host=network.setup.addresses.get(f"client-{i}", "127.0.0.1") if network.setup else "127.0.0.1",
                tls=tls,
                authkey=None if tls else creds.door(engine_door(i)),  # its host and the key authority only
                cores=placement.engine_cores,
                timeout_s=suite.measure.timeout_s,
                transcripts=transcripts,
                upload_tls=party_tls(parties, f"engine-{i}"),
            )
            parent, child = spawn.Pipe()
            args = (network.setup, f"engine-{i}", local_engine_main, engine_config, child)
            proc = spawn.Process(target=run_bound, args=args, name=f"engine-{i}", daemon=True)
            proc.start()
            network.register(proc.pid)
            started.parties[f"engine-{i}"], controls[f"engine-{i}"] = proc, parent
            endpoints.append(tuple(control_recv(parent, f"engine-{i}", started)))
        return endpoints, tls_dir


def _pool_exit(hosting: Hosting) -> Callable[[str, int], tuple[str, str]]:
    """A pool worker's death in words: which clients it hosted."""
    workers = hosting.workers()

    def describe(name: str, code: int) -> tuple[str, str]:
        group = workers.get(name)
        hosted = f" (hosting client-{group[0]} … client-{group[-1]})" if group else ""
        return f"{name}{hosted} exited with code {code}", "see the message above; completed rounds are kept"

    return describe


def _pool_totals(hosting: Hosting, started: Started, timeout_s: float) -> Callable[[Callable[[Record], Any]], None]:
    """After the last round: wait for the pool workers to end and write their ``pool_worker`` records."""

    def finish(write: Callable[[Record], Any]) -> None:
        workers = hosting.workers()
        for name in workers:  # they end as soon as the aggregator's "done" reaches their clients
            started.parties[name].join(timeout=min(timeout_s, 120.0))
        with contextlib.suppress(queue.Empty, OSError, ValueError):
            while True:
                rec = started.records.get(timeout=0.5)
                if isinstance(rec, PoolWorkerRecord):
                    write(rec)

    return finish


def engine_files(tls_dir: str | None, index: int) -> TLSFiles | None:
    """Engine ``index``'s certificate in a `hebench engine certs` folder: it serves host ``index`` only."""
    if not tls_dir:
        return None
    folder = Path(tls_dir)
    return TLSFiles(folder / f"engine-{index}.pem", folder / f"engine-{index}-key.pem", folder / "ca.pem")


def stop_parties(started: Started, engines: dict[str, Any], grace_s: float = 10.0) -> None:
    """End a configuration's parties: tell each local engine to stop (it would serve forever), then wait for
    every party to exit, terminating one still alive after ``grace_s`` (the others end on their own once
    the aggregator's last message reached them)."""
    for control in engines.values():
        with contextlib.suppress(OSError, ValueError):  # an engine that died already
            control.send(STOP)
    for proc in started.parties.values():
        proc.join(timeout=grace_s)
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=5)
    started.records.close()


def party_certificates(run: ConfigurationRun) -> str | None:
    """``transport: tls``: the folder of this configuration's party certificates, from a CA made afresh at each
    start (a resumed run gets new ones) whose private key is never written; None for authenticated TCP."""
    if run.config.transport != "tls":
        return None
    folder = RunFolder(run.run_dir).certs / f"parties-{safe_label(run.config.label)}"
    clients = len(run.data.clients)
    share_holders = helper_names(run.config)
    servers = ("aggregator", "key-authority", *share_holders)
    names = (*servers, *(f"{role}-{i}" for role in ("client", "engine") for i in range(clients)))
    make_party_certificates(folder, names, servers)
    return str(folder)


def host_cores(suite: Suite) -> tuple[int, ...] | None:
    """With engines on this machine in the suite, every mode's host-side parties share the same cores, so
    that offload is compared with raw and host-he on equal host hardware (the engine adds its own)."""
    if any(c.spec.needs_engines for c in suite.configurations) and not suite.offload.engines:
        return place(suite.offload).host_cores
    return None
