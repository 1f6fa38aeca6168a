"""``hebench engine certs``: a CA and certificates for mutual TLS, made with ``cryptography``.

Roles travel in the certificate's common name, and a certificate serves one
side of a connection only (server or client usage, never both): engine ``i``
(``hebench-engine-i``) takes key deliveries only from ``hebench-key-authority``
and serves only host ``i`` (``hebench-host-i``); a host or the key authority
checks that the engine it reached is the one it meant. A run's own CA signs its
certificates and is then forgotten: its private key is never written (a later
start makes a new CA), so nobody who reads the run folder can mint more.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

KEY_AUTHORITY_CN = "hebench-key-authority"
HOST_CN_PREFIX = "hebench-host"
ENGINE_CN = "hebench-engine"  # engine ``i`` is ``hebench-engine-i``; a bare ``hebench-engine`` is from an older folder
CA_KEY = "ca-key.pem"


@dataclass(frozen=True)
class TLSFiles:
    """A party's TLS identity: its (client) certificate and key, the CA it trusts, and, for a party with doors,
    the server certificate it listens with."""

    cert: Path
    key: Path
    ca: Path
    server_cert: Path | None = None
    server_key: Path | None = None

    def serving(self) -> TLSFiles:
        """The files a listener loads: the server certificate where there is one."""
        if self.server_cert is None or self.server_key is None:
            return self
        return TLSFiles(self.server_cert, self.server_key, self.ca)


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "hebench"), x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def _issue(cn: str, ca_key, ca_name: x509.Name, *, server: bool, days: int, hosts: list[str]):
    """A certificate for one side only: ``server`` (serverAuth, named ``hosts``) or client (clientAuth)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
    )
    if server:
        names: list[x509.GeneralName] = []
        for h in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                names.append(x509.DNSName(h))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def _make_ca(outdir: Path, days: int, keep_key: bool) -> tuple[ec.EllipticCurvePrivateKey, x509.Name, Path]:
    """A fresh CA in ``outdir`` (ca.pem; ca-key.pem only with ``keep_key``, else any old one is removed): its
    key, name and certificate path."""
    outdir.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("hebench test CA")
    now = dt.datetime.now(dt.timezone.utc)
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path = outdir / "ca.pem"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    if keep_key:
        _write_key(ca_key, outdir / CA_KEY)
    else:
        (outdir / CA_KEY).unlink(missing_ok=True)  # an older hebench kept it here
    return ca_key, ca_name, ca_path


def _write_pair(outdir: Path, name: str, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> tuple[Path, Path]:
    cert_path, key_path = outdir / f"{name}.pem", outdir / f"{name}-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, key_path)
    return cert_path, key_path


def common_name(cert: Path) -> str | None:
    """The subject common name of a PEM certificate file."""
    subject = x509.load_pem_x509_certificate(cert.read_bytes()).subject
    names = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else None


def engine_cn(index: int) -> str:
    return f"{ENGINE_CN}-{index}"


def host_cn(index: int) -> str:
    return f"{HOST_CN_PREFIX}-{index}"


def served_host(engine_common_name: str | None) -> str | None:
    """The one host an engine certificate serves (``hebench-engine-3`` -> ``hebench-host-3``); None for an
    engine certificate from an older folder, which names no host."""
    prefix = f"{ENGINE_CN}-"
    if engine_common_name and engine_common_name.startswith(prefix) and engine_common_name[len(prefix) :].isdigit():
        return host_cn(int(engine_common_name[len(prefix) :]))
    return None


PARTY_CN_PREFIX = "hebench-party"


def party_cn(party: str) -> str:
    return f"{PARTY_CN_PREFIX}-{party}"


def party_of(common_name: str | None) -> str | None:
    """The party a run's certificate names (``hebench-party-client-3`` -> ``client-3``); None for any other."""
    prefix = f"{PARTY_CN_PREFIX}-"
    if common_name and common_name.startswith(prefix) and len(common_name) > len(prefix):
        return common_name[len(prefix) :]
    return None


def make_party_certificates(
    outdir: Path,
    parties: tuple[str, ...],
    servers: tuple[str, ...] = ("aggregator", "key-authority"),
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
    days: int = 1,
) -> dict[str, TLSFiles]:
    """A fresh CA and, for a run's mutual-TLS channels (``transport: tls``), a client certificate per party
    (``aggregator``, ``client-0``, …: ``<party>.pem``) and a server certificate for each party in ``servers``
    (its doors: ``<party>-server.pem``), both named ``hebench-party-<party>``. The CA's key is not kept."""
    ca_key, ca_name, ca_path = _make_ca(outdir, days, keep_key=False)
    out = {}
    for party in dict.fromkeys((*parties, *servers)):
        cn = party_cn(party)
        cert, key = _write_pair(outdir, party, *_issue(cn, ca_key, ca_name, server=False, days=days, hosts=[]))
        server_cert = server_key = None
        if party in servers:
            issued = _issue(cn, ca_key, ca_name, server=True, days=days, hosts=list(hosts))
            server_cert, server_key = _write_pair(outdir, f"{party}-server", *issued)
        out[party] = TLSFiles(cert, key, ca_path, server_cert, server_key)
    return out


def party_tls(folder: str | Path | None, party: str) -> TLSFiles | None:
    """``party``'s certificates in a :func:`make_party_certificates` folder (None: no TLS)."""
    if folder is None:
        return None
    folder = Path(folder)
    server = folder / f"{party}-server.pem"
    return TLSFiles(
        folder / f"{party}.pem",
        folder / f"{party}-key.pem",
        folder / "ca.pem",
        server if server.exists() else None,
        folder / f"{party}-server-key.pem" if server.exists() else None,
    )


def make_certificates(
    outdir: Path,
    hosts: int = 4,
    server_hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
    days: int = 30,
    server_role: str = "engine",
    keep_ca_key: bool = False,
) -> dict[str, TLSFiles]:
    """Write ca.pem and (cert, key) pairs for the server (``server_role``: one engine per host, ``engine-i``
    serving host ``i``; or a Flower SuperLink or a run's hub), the key authority (engines only) and ``hosts``
    hosts. The CA's key is written (ca-key.pem) only with ``keep_ca_key``."""
    ca_key, ca_name, ca_path = _make_ca(outdir, days, keep_key=keep_ca_key)
    if server_role == "engine":
        roles = {f"engine-{i}": (engine_cn(i), True) for i in range(hosts)}
        roles["key-authority"] = (KEY_AUTHORITY_CN, False)
    else:
        roles = {server_role: (f"hebench-{server_role}", True)}
    roles.update({f"host-{i}": (host_cn(i), False) for i in range(hosts)})
    out = {}
    for role, (cn, server) in roles.items():
        issued = _issue(cn, ca_key, ca_name, server=server, days=days, hosts=list(server_hosts))
        out[role] = TLSFiles(*_write_pair(outdir, role, *issued), ca_path)
    return out
