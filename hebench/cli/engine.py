"""``hebench engine``: run an offload engine (e.g. on a DPU) and make its TLS certificates."""

from __future__ import annotations

from pathlib import Path

import typer

from hebench.cli.common import console, err_console, handle_errors, split_list
from hebench.errors import ParameterError
from hebench.net.certs import TLSFiles, make_certificates
from hebench.offload.engine import EngineConfig, serve

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
    serve(
        config,
        on_error=lambda line: err_console.print(f"engine: {line}", markup=False, highlight=False),
        ready=lambda address: err_console.print(
            f"engine listening on {address[0]}:{address[1]} ({'mutual TLS' if tls else 'shared key'})"
            + (f", cores {list(core_list)}" if core_list else "")
        ),
    )


@app.command("certs")
@handle_errors
def certs(
    outdir: Path = typer.Argument(..., help="folder for ca.pem and the role certificates"),
    hosts: int = typer.Option(4, help="how many host certificates (host-0 … host-N-1)"),
    engine_host: list[str] = typer.Option(["127.0.0.1", "localhost"], help="names/IPs the engine is reached at"),
    days: int = typer.Option(30, help="validity"),
) -> None:
    """Create a CA and mutual-TLS certificates for engine, key authority and hosts."""
    files = make_certificates(outdir, hosts=hosts, server_hosts=tuple(engine_host), days=days)
    console.print(f"wrote {len(files)} certificates and ca.pem to {outdir}")
    console.print(
        f"engine: hebench engine serve --tls-cert {files['engine'].cert} --tls-key {files['engine'].key} "
        f"--tls-ca {files['engine'].ca}"
    )
    console.print(f"suite:  offload: {{engines: ['HOST:PORT', …], tls_dir: {outdir}}}")
