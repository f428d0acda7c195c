"""Certificates and keys for one dev cluster, made fresh at every start.

ECDSA P-256 throughout: a key takes well under a millisecond to generate where RSA-2048
takes tens of milliseconds on these two cores, and kube-apiserver accepts EC keys for
its serving certificate, for client certificates and for signing ServiceAccount tokens
(ES256). Nothing here is meant to be secure beyond 127.0.0.1 and a test run.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ADMIN_USER = "deployplane-admin"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
SCHEDULER_USER = "system:kube-scheduler"
KWOK_USER = "deployplane-kwok"
# The real node (realnode/): its kubelet is `system:node:<name>` in `system:nodes` (the
# Node authorizer's identity), kube-proxy is `system:kube-proxy` (bootstrap RBAC
# `system:node-proxier`), and the apiserver reaches the kubelet (logs, exec,
# port-forward) as `kube-apiserver-kubelet-client`, which the kubelet's client CA trusts.
REAL_NODE_NAME = "deployplane-node"
REAL_NODE_IP = "198.18.0.2"
NODE_USER = f"system:node:{REAL_NODE_NAME}"
NODES_GROUP = "system:nodes"
KUBE_PROXY_USER = "system:kube-proxy"
KUBELET_CLIENT_USER = "kube-apiserver-kubelet-client"
# The node's CoreDNS reads Services, EndpointSlices, Namespaces and Pods: a cluster
# admin here, like kwok (a dev cluster on 127.0.0.1, not a security boundary).
COREDNS_USER = "deployplane-coredns"
# The node's volume provisioner (realnode/storage.py) creates volumes, reads claims and
# nodes and runs helper pods: a cluster admin too.
LOCAL_PATH_USER = "deployplane-local-path"
# The admin, controller-manager and kwok identities are cluster admins: the
# controller-manager runs controllers that touch every kind, and kwok plays every
# kubelet and a volume provisioner. The scheduler is exactly `system:kube-scheduler`,
# whose bootstrap ClusterRoleBindings (system:kube-scheduler, system:volume-scheduler)
# give it what a real one has.
MASTERS_GROUP = "system:masters"
# Names the apiserver's serving certificate answers to: loopback plus the in-cluster
# names, so a kubeconfig written for either works.
SERVING_DNS = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
# 198.18.0.2: the real node's address, where its apiserver forwarder listens.
SERVING_IPS = ("127.0.0.1", "10.0.0.1", REAL_NODE_IP)
_VALIDITY = dt.timedelta(days=365)
_CLOCK_SKEW = dt.timedelta(hours=1)


@dataclass(frozen=True)
class Pem:
    """A certificate and its private key, PEM encoded."""

    cert: bytes
    key: bytes


@dataclass(frozen=True)
class PkiFiles:
    """Where `write_pki` put everything the processes and kubeconfigs need."""

    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    controller_manager_cert: Path
    controller_manager_key: Path
    scheduler_cert: Path
    scheduler_key: Path
    kwok_cert: Path
    kwok_key: Path
    service_account_key: Path
    service_account_pub: Path
    node_cert: Path
    node_key: Path
    kube_proxy_cert: Path
    kube_proxy_key: Path
    kubelet_client_cert: Path
    kubelet_client_key: Path
    kubelet_serving_cert: Path
    kubelet_serving_key: Path
    coredns_cert: Path
    coredns_key: Path
    local_path_cert: Path
    local_path_key: Path


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + _VALIDITY)
    )


class _Authority:
    def __init__(self) -> None:
        self.key = _new_key()
        self.name = _name("deployplane-dev-ca")
        self.cert = (
            _builder(self.name, self.name, self.key.public_key())
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

    def issue(
        self,
        common_name: str,
        organizations: Sequence[str] = (),
        *,
        dns_names: Sequence[str] = (),
        ip_addresses: Sequence[str] = (),
    ) -> Pem:
        key = _new_key()
        serving = bool(dns_names or ip_addresses)
        usage = [ExtendedKeyUsageOID.SERVER_AUTH] if serving else [ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (
            _builder(_name(common_name, organizations), self.name, key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
        )
        if serving:
            sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
            sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return Pem(cert=cert.public_bytes(serialization.Encoding.PEM), key=_key_pem(key))

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)


def _write(path: Path, data: bytes, *, secret: bool) -> Path:
    path.write_bytes(data)
    if secret:
        path.chmod(0o600)
    return path


def write_pki(directory: Path) -> PkiFiles:
    """Generate a CA, the serving and client certificates and the ServiceAccount key."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _Authority()
    serving = ca.issue("kube-apiserver", dns_names=SERVING_DNS, ip_addresses=SERVING_IPS)
    admin = ca.issue(ADMIN_USER, [MASTERS_GROUP])
    kcm = ca.issue(CONTROLLER_MANAGER_USER, [MASTERS_GROUP])
    scheduler = ca.issue(SCHEDULER_USER)
    kwok = ca.issue(KWOK_USER, [MASTERS_GROUP])
    node = ca.issue(NODE_USER, [NODES_GROUP])
    kube_proxy = ca.issue(KUBE_PROXY_USER)
    kubelet_client = ca.issue(KUBELET_CLIENT_USER)
    coredns = ca.issue(COREDNS_USER, [MASTERS_GROUP])
    local_path = ca.issue(LOCAL_PATH_USER, [MASTERS_GROUP])
    kubelet_serving = ca.issue(
        NODE_USER, [NODES_GROUP], dns_names=(REAL_NODE_NAME,), ip_addresses=(REAL_NODE_IP,)
    )
    sa_key = _new_key()
    sa_pub = sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    files = pki_files(directory)
    _write(files.ca_cert, ca.cert_pem, secret=False)
    for cert, key, pem in (
        (files.serving_cert, files.serving_key, serving),
        (files.admin_cert, files.admin_key, admin),
        (files.controller_manager_cert, files.controller_manager_key, kcm),
        (files.scheduler_cert, files.scheduler_key, scheduler),
        (files.kwok_cert, files.kwok_key, kwok),
        (files.node_cert, files.node_key, node),
        (files.kube_proxy_cert, files.kube_proxy_key, kube_proxy),
        (files.kubelet_client_cert, files.kubelet_client_key, kubelet_client),
        (files.kubelet_serving_cert, files.kubelet_serving_key, kubelet_serving),
        (files.coredns_cert, files.coredns_key, coredns),
        (files.local_path_cert, files.local_path_key, local_path),
    ):
        _write(cert, pem.cert, secret=False)
        _write(key, pem.key, secret=True)
    _write(files.service_account_key, _key_pem(sa_key), secret=True)
    _write(files.service_account_pub, sa_pub, secret=False)
    return files


def pki_files(directory: Path) -> PkiFiles:
    """Where `write_pki(directory)` puts each file (also for a cluster started earlier)."""
    d = directory

    def pair(name: str) -> tuple[Path, Path]:
        return d / f"{name}.crt", d / f"{name}.key"

    # In PkiFiles' field order: CA, then certificate and key per identity, SA keys, then
    # the real node's identities.
    return PkiFiles(
        d / "ca.crt",
        *pair("apiserver"),
        *pair("admin"),
        *pair("kcm"),
        *pair("scheduler"),
        *pair("kwok"),
        d / "sa.key",
        d / "sa.pub",
        *pair("node"),
        *pair("kube-proxy"),
        *pair("apiserver-kubelet-client"),
        *pair("kubelet"),
        *pair("coredns"),
        *pair("local-path"),
    )
