"""How parties reach a Flower run's hub: TLS with the hub's certificate, then a mutual credential check.

TLS keeps key sets and records confidential on the network (the network is
observed); the credential challenge runs both ways inside it, so a peer
without the door's credential gets nothing and a party never takes keys from
a hub that cannot prove it holds the same credential (a SuperLink that
rewrote the run config's hub address cannot stand in for the hub). Without a
hub certificate the doors may only listen on loopback.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from pathlib import Path

from hebench.errors import ParameterError, PartyError
from hebench.net.certs import TLSFiles
from hebench.net.limits import HANDSHAKE_S
from hebench.net.stream import (
    FramedSocket,
    answer,
    certificate_only_context,
    challenge,
    listen,
    verifying_context,
)
from hebench.net.transport import Channel

HUB_ROLE = "hub"  # its certificate's role in a `make_certificates` folder: hub.pem, hub-key.pem, ca.pem


def hub_tls(folder: str | None) -> TLSFiles | None:
    if not folder:
        return None
    base = Path(folder)
    return TLSFiles(base / f"{HUB_ROLE}.pem", base / f"{HUB_ROLE}-key.pem", base / "ca.pem")


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def open_door(host: str, port: int, tls: TLSFiles | None) -> socket.socket:
    """A listening socket for one door; refuses to serve keys in the clear beyond this machine."""
    if tls is None and not is_loopback(host):
        raise ParameterError(
            f"the hub would listen on {host} without TLS, sending key sets in the clear across the network",
            "give the federation a hub certificate: `hebench flower certs DIR --hub-host HOST`, hub_tls_dir in "
            "federation.json",
        )
    return listen(host, port)


def admit(raw: socket.socket, tls: ssl.SSLContext | None, credential: bytes, peer: str, timeout_s: float) -> Channel:
    """Hub side of one connection: TLS, then both sides prove the credential."""
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    raw.settimeout(HANDSHAKE_S)
    try:  # small frames only, and a deadline, until the peer has proved the credential
        framed = FramedSocket(tls.wrap_socket(raw, server_side=True) if tls else raw, deadline_s=HANDSHAKE_S)
        challenge(framed, credential)
        answer(framed, credential, peer)
    except (ssl.SSLError, OSError, EOFError, PartyError) as err:
        raw.close()
        raise PartyError(f"refused {peer}: {err}", "the peer needs this federation's credential and hub CA") from None
    framed.trust()
    return Channel(framed, peer, timeout_s)  # type: ignore[arg-type]


def server_context(tls: TLSFiles | None) -> ssl.SSLContext | None:
    return certificate_only_context(tls) if tls else None


def knock(address: tuple[str, int], ca_pem: str | None, credential: bytes, timeout_s: float) -> Channel:
    """Party side: connect, check the hub's certificate against ``ca_pem``, prove and check the credential."""
    peer = "the hebench hub"
    if ca_pem is None and not is_loopback(address[0]):
        raise ParameterError(
            f"the hub at {address[0]} has no certificate to check: keys would cross the network in the clear",
            "set hebench-hub-ca in the SuperNode's node config (the federation's hub-tls/ca.pem)",
        )
    try:
        raw = socket.create_connection(address, timeout=30)
    except OSError as err:
        raise PartyError(
            f"cannot reach {peer} at {address[0]}:{address[1]}: {err}",
            "the hub runs beside `hebench run --engine flower`; SuperNodes must reach its host (hub_host)",
        ) from None
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock = verifying_context(ca_pem).wrap_socket(raw, server_hostname=address[0]) if ca_pem else raw
        framed = FramedSocket(sock, deadline_s=30)
        answer(framed, credential, peer)
        challenge(framed, credential)
    except (ssl.SSLError, OSError, EOFError) as err:
        raw.close()
        raise PartyError(
            f"{peer} at {address[0]}:{address[1]} refused this party or failed to prove itself: {err}",
            "use the federation's credential file and hub CA (hebench-credential, hebench-hub-ca in node config)",
        ) from None
    except PartyError:
        raw.close()
        raise
    framed.trust()
    return Channel(framed, peer, timeout_s)  # type: ignore[arg-type]
