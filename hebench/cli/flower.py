"""``hebench flower``: a local Flower federation (SuperLink + SuperNodes) for hebench runs."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from hebench.cli.common import console, err_console, handle_errors
from hebench.cli.signals import Stopped, stop_signals_raise

app = typer.Typer(help="Run hebench on Flower's deployment engine.", no_args_is_help=True)


@app.command("up")
@handle_errors
def up(
    folder: Path = typer.Argument(Path("flower-federation"), help="folder for federation.json, certificates, logs"),
    nodes: int = typer.Option(3, min=1, help="SuperNodes (one per suite client: partition i of N)"),
    tls: bool = typer.Option(True, help="TLS between SuperNodes, the SuperLink and `flwr`"),
    auth: bool = typer.Option(False, help="SuperNode authentication: only registered node keys may connect"),
    engines: bool = typer.Option(
        False, help="an offload engine (mutual TLS) beside each SuperNode, for offload suites"
    ),
) -> None:
    """Start a SuperLink and N SuperNodes on loopback and keep them up until Ctrl-C (or SIGTERM, SIGHUP)."""
    from hebench.runtime.flower import require_flower
    from hebench.runtime.flower.federation import ends_federation, start_local_federation

    require_flower()
    with stop_signals_raise():  # however it is stopped, every process it started is stopped with it
        try:
            local = start_local_federation(folder, nodes, tls=tls, auth=auth, engines=engines)
        except Stopped as stopped:  # what had started is stopped already
            err_console.print(f"stopped ({stopped.signal_name}) before the federation was up", highlight=False)
            return
        fed = local.federation
        console.print(
            f"Flower federation up: SuperLink {fed.superlink} ({'TLS' if tls else 'insecure'}"
            f"{', node authentication' if auth else ''}), {nodes} SuperNodes"
            + (f", {nodes} offload engines" if engines else "")
        )
        console.print(f"run a suite on it:  hebench run SUITE --engine flower --federation {folder}")
        if auth:
            console.print("registered node keys: " + ", ".join(f"{folder}/node-{i}.pub" for i in range(nodes)))
        console.print(f"logs: {folder}/logs   stop: Ctrl-C (or SIGTERM)")
        try:
            noted: set[str] = set()  # SuperNodes (or engines) that exited: their clients are dropouts, the rest go on
            while not any(ends_federation(name) for name in local.exited()):
                for name in sorted(set(local.exited()) - noted):
                    err_console.print(
                        f"note: {name} exited (its client is a dropout); see {folder}/logs", highlight=False
                    )
                    noted.add(name)
                time.sleep(1)
            dead = [name for name in local.exited() if ends_federation(name)]
            err_console.print(f"[bold red]error:[/] {', '.join(dead)} exited; see {folder}/logs", highlight=False)
        except Stopped as stopped:
            err_console.print(f"{stopped.signal_name}: stopping the federation's processes", highlight=False)
        finally:
            local.stop()


@app.command("certs")
@handle_errors
def certs(
    outdir: Path = typer.Argument(..., help="folder for ca.pem, hub.pem and hub-key.pem (hub_tls_dir)"),
    hub_host: list[str] = typer.Option(..., help="names/IPs SuperNodes and the ServerApp reach the hub at"),
    days: int = typer.Option(30, help="validity"),
) -> None:
    """Create the hub's TLS certificate for a federation across hosts (hub_tls_dir in federation.json).

    Give SuperNodes the CA (node config hebench-hub-ca=OUTDIR/ca.pem); the key stays with `hebench run`.
    """
    from hebench.net.certs import make_certificates
    from hebench.runtime.flower.hub_wire import HUB_ROLE

    files = make_certificates(outdir, hosts=0, server_hosts=tuple(hub_host), days=days, server_role=HUB_ROLE)
    console.print(f"hub certificate {files[HUB_ROLE].cert} for {', '.join(hub_host)}; CA {files[HUB_ROLE].ca}")
