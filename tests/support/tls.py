"""A private CA for tests, and certificates it signs: what an operator's own CA gives a site
(tests/support/real_wordpress.py's https site; the outbound client's certificate checks).

    ca = PrivateCA(tmp_path)                        # ca.ca_file: the CA's certificate, PEM
    certificate, key = ca.issue("127.0.0.1")        # files for a server at 127.0.0.1
    with TLSStubServer(ca.issue("127.0.0.1")) as server:
        server.route("GET", "/", ...)               # a StubServer over https
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.support.servers import StubServer


class PrivateCA:
    """A CA of its own in `directory`: `ca_file` is its certificate (PEM)."""

    def __init__(self, directory: Path, name: str = "Content Platform test CA") -> None:
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(self.name)
            .issuer_name(self.name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )
        self.ca_file = directory / "ca.pem"
        self.ca_file.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))

    def issue(self, host: str, *, expired: bool = False) -> tuple[Path, Path]:
        """A server certificate for `host` (a name or an IP address) and its key, as files."""
        key = ec.generate_private_key(ec.SECP256R1())
        try:
            alternative: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            alternative = x509.DNSName(host)
        now = datetime.datetime.now(datetime.UTC)
        start = now - datetime.timedelta(days=3 if expired else 0, hours=1)
        end = now - datetime.timedelta(days=1) if expired else now + datetime.timedelta(days=1)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
            .issuer_name(self.name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([alternative]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        stem = f"{host}{'-expired' if expired else ''}"
        certificate_file = self.directory / f"{stem}.pem"
        key_file = self.directory / f"{stem}.key"
        certificate_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        key_file.chmod(0o600)
        return certificate_file, key_file


class TLSStubServer(StubServer):
    """A StubServer that speaks https with `identity` (certificate and key files)."""

    def __init__(self, identity: tuple[Path, Path]) -> None:
        super().__init__()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*identity)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = self.url.replace("http://", "https://", 1)
