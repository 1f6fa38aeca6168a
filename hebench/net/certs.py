"""``hebench engine certs``: a CA and certificates for mutual TLS, made with ``cryptography``.

Roles travel in the certificate's common name: the engine authorises key
deliveries only from ``hebench-key-authority`` and sessions only from
``hebench-host-*`` peers signed by the same CA.
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
ENGINE_CN = "hebench-engine"


@dataclass(frozen=True)
class TLSFiles:
    cert: Path
    key: Path
    ca: Path


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "hebench"), x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def _issue(cn: str, ca_key, ca_name: x509.Name, *, server: bool, days: int, hosts: list[str], client: bool = False):
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
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                if server and client
                else [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
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


def _make_ca(outdir: Path, days: int) -> tuple[ec.EllipticCurvePrivateKey, x509.Name, Path]:
    """A fresh CA in ``outdir`` (ca.pem, ca-key.pem): its key, name and certificate path."""
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
    _write_key(ca_key, outdir / "ca-key.pem")
    return ca_key, ca_name, ca_path


PARTY_CN_PREFIX = "hebench-party"


def make_party_certificates(
    outdir: Path, parties: tuple[str, ...], hosts: tuple[str, ...] = ("127.0.0.1", "localhost"), days: int = 1
) -> dict[str, TLSFiles]:
    """A CA and one certificate per party (``aggregator``, ``key-authority``, ``client-0``, …) for a run's
    mutual-TLS channels (``transport: tls``): each may serve (its doors) and dial (its peers' doors)."""
    ca_key, ca_name, ca_path = _make_ca(outdir, days)
    out = {}
    for party in parties:
        key, cert = _issue(
            f"{PARTY_CN_PREFIX}-{party}", ca_key, ca_name, server=True, client=True, days=days, hosts=list(hosts)
        )
        cert_path, key_path = outdir / f"{party}.pem", outdir / f"{party}-key.pem"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, key_path)
        out[party] = TLSFiles(cert_path, key_path, ca_path)
    return out


def party_tls(folder: str | Path | None, party: str) -> TLSFiles | None:
    """``party``'s certificate in a :func:`make_party_certificates` folder (None: no TLS)."""
    if folder is None:
        return None
    folder = Path(folder)
    return TLSFiles(folder / f"{party}.pem", folder / f"{party}-key.pem", folder / "ca.pem")


def make_certificates(
    outdir: Path,
    hosts: int = 4,
    server_hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
    days: int = 30,
    server_role: str = "engine",
) -> dict[str, TLSFiles]:
    """Write ca.pem and (cert, key) pairs for the server (``server_role``: the engine, a Flower SuperLink or a
    run's hub), the key authority (engines only) and ``hosts`` hosts."""
    ca_key, ca_name, ca_path = _make_ca(outdir, days)
    roles = {server_role: (ENGINE_CN if server_role == "engine" else f"hebench-{server_role}", True)}
    if server_role == "engine":
        roles["key-authority"] = (KEY_AUTHORITY_CN, False)
    roles.update({f"host-{i}": (f"{HOST_CN_PREFIX}-{i}", False) for i in range(hosts)})
    out = {}
    for role, (cn, server) in roles.items():
        key, cert = _issue(cn, ca_key, ca_name, server=server, days=days, hosts=list(server_hosts))
        cert_path, key_path = outdir / f"{role}.pem", outdir / f"{role}-key.pem"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, key_path)
        out[role] = TLSFiles(cert_path, key_path, ca_path)
    return out
