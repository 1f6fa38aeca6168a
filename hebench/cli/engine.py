"""``hebench engine``: run an offload engine (e.g. on a DPU) and make its TLS certificates."""

from __future__ import annotations

from pathlib import Path

import typer

from hebench.cli.common import console, err_console, handle_errors, split_list
from hebench.errors import ParameterError
from hebench.net.certs import CA_KEY, TLSFiles, common_name, make_certificates, served_host
from hebench.protections.offload.engine import EngineConfig, serve

app = typer.Typer(help="Offload engines: the party that holds the keys, as a SmartNIC/DPU would.", no_args_is_help=True)


@app.command("serve")
@handle_errors
def serve_(
    listen: str = typer.Option("127.0.0.1:7000", help="HOST:PORT to listen on"),
    tls_cert: Path | None = typer.Option(None, help="engine certificate (from `hebench engine certs`)"),
    tls_key: Path | None = typer.Option(None, help="engine private key"),
    tls_ca: Path | None = typer.Option(None, help="CA that signed the hosts' and key authority's certificates"),
    cores: str | None = typer.Option(None, help="pin the engine to these cores, e.g. 2,3"),
    authkey_file: Path | None = typer.Option(None, help="shared key file instead of TLS (trusted networks only)"),
    max_frame_mb: int = typer.Option(1024, min=1, help="largest message an authenticated peer may send, in MiB"),
) -> None:
    """Serve key deliveries and host sessions until interrupted."""
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        raise ParameterError(f"--listen '{listen}' is not HOST:PORT", "e.g. --listen 0.0.0.0:7000")
    tls_parts = (tls_cert, tls_key, tls_ca)
    if any(tls_parts) and not all(tls_parts):
        raise ParameterError("--tls-cert, --tls-key and --tls-ca go together", "pass all three (hebench engine certs)")
    tls = TLSFiles(tls_cert, tls_key, tls_ca) if all(tls_parts) else None  # type: ignore[arg-type]
    authkey = authkey_file.read_bytes().strip() if authkey_file else None
    if tls is None and authkey is None:
        raise ParameterError(
            "an engine needs mutual TLS or a shared key", "run `hebench engine certs DIR` and pass --tls-*"
        )
    core_list = tuple(int(c) for c in split_list(cores)) or None
    config = EngineConfig(
        host=host, port=int(port), tls=tls, authkey=authkey, cores=core_list, max_frame_bytes=max_frame_mb << 20
    )
    serves = ""
    if tls is not None:
        host_name = served_host(common_name(tls.cert))
        serves = (
            f", serves {host_name} only"
            if host_name
            else ", serves ANY host certificate of its CA (an engine.pem from an older `hebench engine certs`: "
            "re-issue the folder, then start engine i with engine-i.pem so it serves host i only)"
        )
    serve(
        config,
        on_error=lambda line: err_console.print(f"engine: {line}", markup=False, highlight=False),
        ready=lambda address: err_console.print(
            f"engine listening on {address[0]}:{address[1]} ({'mutual TLS' if tls else 'shared key'}{serves})"
            + (f", cores {list(core_list)}" if core_list else ""),
            markup=False,
            highlight=False,
        ),
    )


@app.command("certs")
@handle_errors
def certs(
    outdir: Path = typer.Argument(..., help="folder for ca.pem and the role certificates"),
    hosts: int = typer.Option(4, help="how many host certificates (host-0 … host-N-1)"),
    engine_host: list[str] = typer.Option(["127.0.0.1", "localhost"], help="names/IPs the engines are reached at"),
    days: int = typer.Option(30, help="validity"),
    keep_ca_key: bool = typer.Option(
        True, "--keep-ca-key/--no-ca-key", help="keep the CA's private key (ca-key.pem) to issue more certificates"
    ),
) -> None:
    """Create a CA and mutual-TLS certificates: engine i (serves host i only), the key authority and hosts."""
    files = make_certificates(outdir, hosts=hosts, server_hosts=tuple(engine_host), days=days, keep_ca_key=keep_ca_key)
    console.print(f"wrote {len(files)} certificates and ca.pem to {outdir}", markup=False, highlight=False)
    if hosts:
        first = files["engine-0"]
        console.print(
            f"engine 0: hebench engine serve --tls-cert {first.cert} --tls-key {first.key} --tls-ca {first.ca}"
            f"  (engine i: engine-i.pem, engine-i-key.pem; it serves host i only)",
            markup=False,
            highlight=False,
        )
    console.print(f"suite:  offload: {{engines: ['HOST:PORT', …], tls_dir: {outdir}}}", markup=False, highlight=False)
    if keep_ca_key:
        err_console.print(
            f"warning: the CA's private key is {outdir / CA_KEY}: whoever holds it can make certificates every "
            "engine of this CA trusts (a key authority or a host). Keep it off the engines and hosts, offline, "
            "or delete it (--no-ca-key does not write it); `hebench engine certs` makes a new CA each time.",
            markup=False,
            highlight=False,
        )
