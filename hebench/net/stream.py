"""Framed byte streams over TCP, optionally mutual TLS, for engine connections.

``FramedSocket`` offers the ``send_bytes``/``recv_bytes``/``poll`` methods of a
:class:`multiprocessing.connection.Connection`, so the counting
:class:`hebench.net.transport.Channel` works over it unchanged. Without TLS a key
authenticates both ends (HMAC challenge-response, each side proving the key to
the other): one shared key, or (a listener given :class:`~hebench.net.door_keys.DoorKeys`)
the key of the party the dialler names first, which the socket then carries as
``party``. With TLS the dialler checks that the listener's certificate names the
party it meant to reach.

Until a peer has authenticated, frames are bounded by
:data:`~hebench.net.limits.PREAUTH_MAX_FRAME` and the whole handshake by a
deadline; :meth:`FramedSocket.trust` then lifts both (frames up to
:func:`~hebench.net.limits.max_frame_bytes`). A length above the bound is
refused before anything is allocated for it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import select
import socket
import ssl
import struct
import time

from hebench.errors import PartyError
from hebench.net.certs import TLSFiles
from hebench.net.door_keys import DoorKeys, claim, claimed
from hebench.net.limits import HANDSHAKE_S, PREAUTH_MAX_FRAME, SETUP_RETRY_S, FrameTooLargeError, max_frame_bytes
from hebench.net.retry import DROPPED, Dropped, with_backoff

_HEADER = struct.Struct(">Q")


class FramedSocket:
    """Length-prefixed frames over one socket, bounded in size (and, before authentication, in time)."""

    def __init__(
        self, sock: socket.socket, max_frame: int = PREAUTH_MAX_FRAME, deadline_s: float | None = None
    ) -> None:
        self.sock = sock
        self.max_frame = max_frame
        self.deadline = None if deadline_s is None else time.monotonic() + deadline_s
        self.party: str | None = None  # who the peer proved to be (a door that admits by party), else None

    def trust(self, max_frame: int | None = None) -> None:
        """The peer has authenticated: frames up to ``max_frame`` (default :func:`max_frame_bytes`), no deadline."""
        self.max_frame = max_frame or max_frame_bytes()
        self.deadline = None
        self.sock.settimeout(None)

    def _arm(self) -> None:
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the peer did not finish the handshake in time")
            self.sock.settimeout(remaining)

    def send_bytes(self, data: bytes) -> None:
        self._arm()
        self.sock.sendall(_HEADER.pack(len(data)))
        self.sock.sendall(data)

    def _exactly(self, n: int) -> bytes:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            self._arm()
            k = self.sock.recv_into(view[got:], min(n - got, 1 << 22))
            if k == 0:
                raise EOFError("connection closed")
            got += k
        return bytes(buf)

    def recv_bytes(self, maxlength: int | None = None) -> bytes:
        """One frame; raises :class:`FrameTooLargeError` (an ``OSError``) for a length above the bound."""
        (n,) = _HEADER.unpack(self._exactly(_HEADER.size))
        limit = self.max_frame if maxlength is None else min(maxlength, self.max_frame)
        if n > limit:
            raise FrameTooLargeError(n, limit)
        return self._exactly(n)

    def poll(self, timeout: float | None) -> bool:
        if self.deadline is not None:
            remaining = max(0.0, self.deadline - time.monotonic())
            timeout = remaining if timeout is None else min(timeout, remaining)
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


ACCEPTED, REJECTED = b"ok", b"no"


def challenge(framed: FramedSocket, authkey: bytes) -> None:
    """Make the peer prove it holds ``authkey`` (HMAC over a fresh nonce); a wrong proof hears "no"."""
    nonce = os.urandom(32)
    framed.send_bytes(nonce)
    if not framed.poll(HANDSHAKE_S):
        raise PartyError("peer did not answer the challenge in time", "a peer must authenticate right after connecting")
    if not hmac.compare_digest(framed.recv_bytes(), hmac.digest(authkey, nonce, hashlib.sha256)):
        try:
            framed.send_bytes(REJECTED)  # so the peer knows it is refused, not dropped (it will not dial again)
        except OSError:
            pass
        raise PartyError("peer failed authentication", "use the same shared key (or TLS certificates) on both ends")
    framed.send_bytes(ACCEPTED)


def answer(framed: FramedSocket, authkey: bytes, peer: str = "the engine") -> None:
    """Prove to the peer that this side holds ``authkey``."""
    nonce = framed.recv_bytes()
    framed.send_bytes(hmac.digest(authkey, nonce, hashlib.sha256))
    verdict = framed.recv_bytes()
    if verdict == REJECTED:
        raise PartyError(f"{peer} refused this party's proof of the key", "use the same shared key on both ends")
    if verdict != ACCEPTED:
        raise PartyError(f"authentication with {peer} failed", "check the shared key")


def check_server_name(framed: FramedSocket, expected: tuple[str, ...], peer: str) -> None:
    """The listener's certificate must name one of ``expected``: a certificate of another party of the same
    CA, reached at a wrong or hijacked address, cannot stand in for ``peer``."""
    name = framed.peer_common_name()
    if name not in expected:
        raise PartyError(
            f"{peer} presented a certificate for '{name}', not '{expected[0]}'",
            "check the address: another party (or an impostor) listens there",
        )


def dial(
    address: tuple[str, int],
    *,
    tls: TLSFiles | None,
    authkey: bytes | None,
    peer: str,
    timeout_s: float = 30.0,
    server_names: tuple[str, ...] = (),
    retry_s: float = SETUP_RETRY_S,
    party: str | None = None,
) -> FramedSocket:
    """Connect to an engine (or any FramedSocket server) and authenticate, within ``timeout_s`` per attempt.

    With ``tls`` the server's certificate must name one of ``server_names`` (when given); without, both
    sides prove ``authkey`` (``party``'s own key at a listener that admits by party: it is named first). A
    listener that drops the connection before authentication finishes (a busy door) is dialled again with
    back-off until ``retry_s`` has passed.
    """
    return with_backoff(lambda: dial_once(address, tls, authkey, peer, timeout_s, server_names, party), retry_s)


def dial_once(
    address: tuple[str, int],
    tls: TLSFiles | None,
    authkey: bytes | None,
    peer: str,
    timeout_s: float,
    server_names: tuple[str, ...],
    party: str | None = None,
) -> FramedSocket:
    """One attempt of :func:`dial`: raises :class:`~hebench.net.retry.Dropped` if the listener dropped it."""
    try:
        raw = socket.create_connection(address, timeout=timeout_s)
    except OSError as err:
        raise PartyError(
            f"cannot reach {peer} at {address[0]}:{address[1]}: {err}",
            "start it (`hebench engine serve --listen HOST:PORT`) or fix the address in the suite",
        ) from None
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock = client_context(tls).wrap_socket(raw, server_hostname=address[0]) if tls else raw
        framed = FramedSocket(sock, deadline_s=timeout_s)
        if tls is not None and server_names:
            check_server_name(framed, server_names, peer)
        if authkey is not None and tls is None:
            if party is not None:
                framed.send_bytes(claim(party))
            answer(framed, authkey, peer)
            challenge(framed, authkey)
        framed.trust()
    except (ssl.SSLError, OSError, EOFError) as err:
        raw.close()
        failure = PartyError(
            f"TLS handshake with {peer} at {address[0]}:{address[1]} failed: {err}"
            if tls
            else f"{peer} at {address[0]}:{address[1]} did not authenticate: {err or 'closed'}",
            "use certificates from the same `hebench engine certs` CA on both ends"
            if tls
            else "is that party running, with this run's key?",
        )
        if isinstance(err, DROPPED):
            raise Dropped(failure) from None
        raise failure from None
    except PartyError:
        raw.close()
        raise
    return framed


def accept_raw(listener: socket.socket) -> socket.socket:
    """The next TCP connection, not yet authenticated (hand it to :func:`admit`, ideally off the accept loop)."""
    raw, _ = listener.accept()
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return raw


def admit(
    raw: socket.socket,
    *,
    tls: ssl.SSLContext | None,
    authkey: bytes | DoorKeys | None,
    handshake_s: float = HANDSHAKE_S,
    max_frame: int | None = None,
) -> FramedSocket:
    """Server side of one connection: TLS, or the key challenge both ways, within ``handshake_s``.

    With :class:`DoorKeys` (no TLS) the peer names its party first and proves that party's key; the socket
    carries it as ``party``. Raises PartyError (for that peer only) when it fails to authenticate, sends a
    frame above the pre-authentication bound, or is too slow; the socket is closed then.
    """
    raw.settimeout(handshake_s)
    try:
        sock = tls.wrap_socket(raw, server_side=True) if tls else raw
        framed = FramedSocket(sock, deadline_s=handshake_s)
        if isinstance(authkey, DoorKeys) and tls is None:
            party = claimed(framed.recv_bytes())
            key = authkey.challenge_key(party)
            try:
                challenge(framed, key)
            except PartyError:
                raise authkey.refusal(party) from None
            answer(framed, key, "the peer")
            framed.party = party
        elif authkey is not None and tls is None:
            challenge(framed, authkey)
            answer(framed, authkey, "the peer")
        framed.trust(max_frame)
    except (ssl.SSLError, OSError, EOFError, PartyError) as err:
        raw.close()
        raise PartyError(
            f"refused a peer: {err}", "the peer needs a certificate from this engine's CA (or its shared key)"
        ) from None
    return framed


def accept(listener: socket.socket, *, tls: ssl.SSLContext | None, authkey: bytes | DoorKeys | None) -> FramedSocket:
    """Accept and admit one connection on the calling thread (see :func:`admit`)."""
    return admit(accept_raw(listener), tls=tls, authkey=authkey)


def listen(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)  # every host of a run may dial at once
    return sock
