"""Framed byte streams over TCP, optionally mutual TLS, for engine connections.

``FramedSocket`` offers the ``send_bytes``/``recv_bytes``/``poll`` methods of a
:class:`multiprocessing.connection.Connection`, so the counting
:class:`hebench.net.transport.Channel` works over it unchanged. Without TLS a
shared key authenticates both ends (HMAC challenge-response).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import select
import socket
import ssl
import struct

from hebench.errors import PartyError
from hebench.net.certs import TLSFiles

_HEADER = struct.Struct(">Q")


class FramedSocket:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(_HEADER.pack(len(data)))
        self.sock.sendall(data)

    def _exactly(self, n: int) -> bytes:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = self.sock.recv_into(view[got:], min(n - got, 1 << 22))
            if k == 0:
                raise EOFError("connection closed")
            got += k
        return bytes(buf)

    def recv_bytes(self) -> bytes:
        (n,) = _HEADER.unpack(self._exactly(_HEADER.size))
        return self._exactly(n)

    def poll(self, timeout: float | None) -> bool:
        if isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
            return True
        ready, _, _ = select.select([self.sock], [], [], timeout)
        return bool(ready)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def peer_common_name(self) -> str | None:
        if not isinstance(self.sock, ssl.SSLSocket):
            return None
        cert = self.sock.getpeercert() or {}
        for rdn in cert.get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    return value
        return None


def server_context(tls: TLSFiles) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(tls.ca))
    ctx.load_cert_chain(str(tls.cert), str(tls.key))
    ctx.verify_mode = ssl.CERT_REQUIRED  # mutual TLS: no valid client certificate, no session
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def client_context(tls: TLSFiles) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(tls.ca))
    ctx.load_cert_chain(str(tls.cert), str(tls.key))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def verifying_context(ca_pem: str) -> ssl.SSLContext:
    """Client side of a server-authenticated TLS channel: the server must present a certificate from ``ca_pem``."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=ca_pem)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def certificate_only_context(tls: TLSFiles) -> ssl.SSLContext:
    """Server side of a server-authenticated TLS channel (peers prove themselves with a shared key instead)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(tls.cert), str(tls.key))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def challenge(framed: FramedSocket, authkey: bytes) -> None:
    """Make the peer prove it holds ``authkey`` (HMAC over a fresh nonce)."""
    nonce = os.urandom(32)
    framed.send_bytes(nonce)
    if not framed.poll(10) or not hmac.compare_digest(framed.recv_bytes(), hmac.digest(authkey, nonce, hashlib.sha256)):
        raise PartyError("peer failed authentication", "use the same shared key (or TLS certificates) on both ends")
    framed.send_bytes(b"ok")


def answer(framed: FramedSocket, authkey: bytes, peer: str = "the engine") -> None:
    """Prove to the peer that this side holds ``authkey``."""
    nonce = framed.recv_bytes()
    framed.send_bytes(hmac.digest(authkey, nonce, hashlib.sha256))
    if framed.recv_bytes() != b"ok":
        raise PartyError(f"authentication with {peer} failed", "check the shared key")


def dial(
    address: tuple[str, int], *, tls: TLSFiles | None, authkey: bytes | None, peer: str, timeout_s: float = 30.0
) -> FramedSocket:
    """Connect to an engine (or any FramedSocket server) and authenticate."""
    try:
        raw = socket.create_connection(address, timeout=timeout_s)
    except OSError as err:
        raise PartyError(
            f"cannot reach {peer} at {address[0]}:{address[1]}: {err}",
            "start it (`hebench engine serve --listen HOST:PORT`) or fix the address in the suite",
        ) from None
    raw.settimeout(None)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock = client_context(tls).wrap_socket(raw, server_hostname=address[0]) if tls else raw
        framed = FramedSocket(sock)
        if authkey is not None and tls is None:
            answer(framed, authkey)
    except (ssl.SSLError, OSError, EOFError) as err:
        raw.close()
        raise PartyError(
            f"TLS handshake with {peer} at {address[0]}:{address[1]} failed: {err}",
            "use certificates from the same `hebench engine certs` CA on both ends",
        ) from None
    return framed


def accept(listener: socket.socket, *, tls: ssl.SSLContext | None, authkey: bytes | None) -> FramedSocket:
    """Accept one connection; raises PartyError (for that peer only) when it fails to authenticate."""
    raw, _ = listener.accept()
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock = tls.wrap_socket(raw, server_side=True) if tls else raw
        framed = FramedSocket(sock)
        if authkey is not None and tls is None:
            challenge(framed, authkey)
    except (ssl.SSLError, OSError, EOFError) as err:
        raw.close()
        raise PartyError(f"refused a peer: {err}", "the peer needs a certificate from this engine's CA") from None
    return framed


def listen(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)  # every host of a run may dial at once
    return sock
