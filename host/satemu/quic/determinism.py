# SPDX-License-Identifier: BSD-2-Clause
"""Repeatable aioquic: seeded randomness, a fixed server certificate, qlog in virtual time."""

# aioquic internals this module relies on (pinned by tests/host/test_quic_endpoints.py):
#   * QuicLoggerTrace.log_event appends a dict with a "time" key to self._events;
#     QuicLogger keeps its traces in self._traces.

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import os
import random
from typing import Any, Iterator

from aioquic import tls as aioquic_tls
from aioquic.quic import connection as aioquic_connection
from aioquic.quic import packet as aioquic_packet
from aioquic.quic.logger import QuicLogger, QuicLoggerTrace
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, x448, x25519
from cryptography.x509.oid import NameOID

__all__ = ["SERVER_NAME", "VirtualTimeLogger", "VirtualTimeTrace", "deterministic",
           "drawing_from", "server_certificate"]

SERVER_NAME = "satemu-server"


# ---------------------------------------------------------------------------------------------
# qlog in virtual time

class VirtualTimeTrace(QuicLoggerTrace):
    """A qlog trace stamped with the driver's virtual time (``now``) instead of time.time()."""

    def __init__(self, *, is_client: bool, odcid: bytes) -> None:
        super().__init__(is_client=is_client, odcid=odcid)
        self.now = 0.0

    def log_event(self, *, category: str, event: str, data: dict) -> None:
        super().log_event(category=category, event=event, data=data)
        self._events[-1]["time"] = self.encode_time(self.now)


class VirtualTimeLogger(QuicLogger):
    """An in-memory qlog logger whose traces are :class:`VirtualTimeTrace`."""

    def start_trace(self, is_client: bool, odcid: bytes) -> QuicLoggerTrace:
        trace = VirtualTimeTrace(is_client=is_client, odcid=odcid)
        self._traces.append(trace)
        return trace


# ---------------------------------------------------------------------------------------------
# the server's certificate

CERT_NOT_BEFORE = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
CERT_LIFETIME = datetime.timedelta(days=50 * 365)
_CERT_KEY_LABEL = b"satemu-server certificate key v1"


class DeterministicEcdsaKey(ec.EllipticCurvePrivateKey):
    """An EC private key whose ECDSA signatures are deterministic (RFC 6979).

    aioquic signs the TLS CertificateVerify with ``key.sign(data, ec.ECDSA(hash))``, which draws a
    random nonce; this wrapper turns that into deterministic signing so a server's handshake
    bytes repeat from run to run. Everything else is delegated to the wrapped key.
    """

    def __init__(self, key: ec.EllipticCurvePrivateKey) -> None:
        self._key = key

    def sign(self, data: bytes, signature_algorithm: Any) -> bytes:
        if isinstance(signature_algorithm, ec.ECDSA):
            signature_algorithm = ec.ECDSA(signature_algorithm.algorithm,
                                           deterministic_signing=True)
        return self._key.sign(data, signature_algorithm)

    def exchange(self, algorithm: ec.ECDH, peer_public_key: ec.EllipticCurvePublicKey) -> bytes:
        return self._key.exchange(algorithm, peer_public_key)

    def public_key(self) -> ec.EllipticCurvePublicKey:
        return self._key.public_key()

    def private_numbers(self) -> ec.EllipticCurvePrivateNumbers:
        return self._key.private_numbers()

    def private_bytes(self, encoding, format, encryption_algorithm) -> bytes:   # noqa: A002
        return self._key.private_bytes(encoding, format, encryption_algorithm)

    @property
    def curve(self) -> ec.EllipticCurve:
        return self._key.curve

    @property
    def key_size(self) -> int:
        return self._key.key_size

    def __copy__(self) -> "DeterministicEcdsaKey":
        return self

    def __deepcopy__(self, memo: dict) -> "DeterministicEcdsaKey":
        return self


@functools.lru_cache(maxsize=1)
def server_certificate() -> tuple[x509.Certificate, DeterministicEcdsaKey]:
    """The server's self-signed P-256 certificate and key: the same bytes on every run."""
    scalar = int.from_bytes(hashlib.sha256(_CERT_KEY_LABEL).digest(), "big") >> 1   # < P-256 n
    key = ec.derive_private_key(scalar, ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_NAME)])
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(0x5A7E40)
            .not_valid_before(CERT_NOT_BEFORE)
            .not_valid_after(CERT_NOT_BEFORE + CERT_LIFETIME)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(SERVER_NAME)]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256(), ecdsa_deterministic=True))
    return cert, DeterministicEcdsaKey(key)


# ---------------------------------------------------------------------------------------------
# deterministic randomness

class _ModuleProxy:
    """Stands in for a module inside aioquic: the given attributes overridden, the rest passed."""

    def __init__(self, module: Any, **overrides: Any) -> None:
        self._module = module
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


class _KeyFactory:
    def __init__(self, generate: Any) -> None:
        self.generate = generate


class _Source:
    """Where a deterministic block's random bytes come from: ``rng``, or another generator
    for a while (:func:`drawing_from`)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def randbytes(self, n: int) -> bytes:
        return self.rng.randbytes(n)


_blocks: list[_Source] = []         # the deterministic blocks in force, innermost last


@contextlib.contextmanager
def deterministic(seed: int) -> Iterator[random.Random]:
    """Make aioquic's connection set-up repeatable: every random byte it draws comes from ``seed``.

    Within the block, aioquic's modules (and only they) see a seeded ``os.urandom`` and seeded
    TLS key-share generation (X25519, X448 and the NIST curves); the server's signatures are
    deterministic already (:class:`DeterministicEcdsaKey`). Connections must be created, driven
    and finished inside the block, in the same order each run. Not thread-safe, not for
    production: the keys are predictable by design.
    """
    rng = random.Random(seed)
    src = _Source(rng)

    def ec_key(curve: ec.EllipticCurve, backend: Any = None) -> ec.EllipticCurvePrivateKey:
        scalar = (int.from_bytes(src.randbytes((curve.key_size + 7) // 8), "big")
                  % (1 << (curve.key_size - 1))) | 1              # 0 < scalar < curve order
        return ec.derive_private_key(scalar, curve)

    seeded_os = _ModuleProxy(os, urandom=src.randbytes)
    patches = [
        (aioquic_connection, "os", seeded_os),    # connection IDs, reset tokens, path challenges
        (aioquic_packet, "os", seeded_os),        # version negotiation's first byte
        (aioquic_tls, "os", seeded_os),           # client/server random, session tickets
        (aioquic_tls, "x25519", _ModuleProxy(x25519, X25519PrivateKey=_KeyFactory(
            lambda: x25519.X25519PrivateKey.from_private_bytes(src.randbytes(32))))),
        (aioquic_tls, "x448", _ModuleProxy(x448, X448PrivateKey=_KeyFactory(
            lambda: x448.X448PrivateKey.from_private_bytes(src.randbytes(56))))),
        (aioquic_tls, "ec", _ModuleProxy(ec, generate_private_key=ec_key)),
    ]
    saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
    try:
        for module, name, value in patches:
            setattr(module, name, value)
        _blocks.append(src)
        yield rng
    finally:
        _blocks.remove(src)
        for module, name, value in reversed(saved):
            setattr(module, name, value)


@contextlib.contextmanager
def drawing_from(rng: random.Random) -> Iterator[None]:
    """Inside a :func:`deterministic` block: aioquic's random bytes come from ``rng`` for the
    ``with`` block, so that each of several connections draws from its own seed whatever the
    others draw (a scenario's flows)."""
    if not _blocks:
        raise RuntimeError("drawing_from() outside a deterministic() block")
    src = _blocks[-1]
    saved, src.rng = src.rng, rng
    try:
        yield
    finally:
        src.rng = saved
