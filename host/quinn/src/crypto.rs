// SPDX-License-Identifier: BSD-2-Clause
//! TLS for one endpoint, repeatable: a rustls provider whose every random byte comes from the
//! endpoint's seed, a P-256 signing key with RFC 6979 (deterministic) ECDSA, and a client-side
//! verifier that trusts exactly one certificate.
//!
//! The provider is *ring*'s default one with two fields replaced: `secure_random` (client and
//! server random) by a seeded ChaCha20 generator, and `kx_groups` by an X25519 group whose private
//! keys come from another seeded generator. rustls wants both as `&'static`: each endpoint leaks
//! its own small boxes, so no generator is shared between endpoints.

use std::fmt;
use std::sync::{Arc, Mutex};

use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::DecodePrivateKey;
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rand_chacha::rand_core::RngCore;
use rand_chacha::ChaCha20Rng;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{
    verify_tls13_signature, ActiveKeyExchange, CryptoProvider, GetRandomFailed, SecureRandom,
    SharedSecret, SupportedKxGroup, WebPkiSupportedAlgorithms,
};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::NoServerSessionStorage;
use rustls::sign::{CertifiedKey, SigningKey, SingleCertAndKey};
use rustls::{
    CertificateError, DigitallySignedStruct, Error, NamedGroup, PeerMisbehaved, SignatureAlgorithm,
    SignatureScheme,
};

use crate::seeded::Seeds;

/// The connection's TLS secrets as SSLKEYLOGFILE lines (`LABEL client_random secret`, in hex),
/// kept for a capture's Decryption Secrets Block.
#[derive(Debug, Default)]
pub struct KeyLogLines(Mutex<Vec<u8>>);

impl KeyLogLines {
    /// Every line logged so far.
    pub fn lines(&self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl rustls::KeyLog for KeyLogLines {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        use std::fmt::Write as _;
        let mut line = String::with_capacity(label.len() + 2 * (client_random.len() + secret.len()) + 3);
        line.push_str(label);
        for part in [client_random, secret] {
            line.push(' ');
            for b in part {
                let _ = write!(line, "{b:02x}");
            }
        }
        line.push('\n');
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(line.as_bytes());
    }
}

/// A `SecureRandom` drawing from a seeded ChaCha20 generator.
struct SeededRandom(Mutex<ChaCha20Rng>);

impl fmt::Debug for SeededRandom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SeededRandom")
    }
}

impl SecureRandom for SeededRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), GetRandomFailed> {
        self.0.lock().map_err(|_| GetRandomFailed)?.fill_bytes(buf);
        Ok(())
    }
}

/// X25519 with private keys drawn from a seeded generator.
struct SeededX25519(Mutex<ChaCha20Rng>);

impl fmt::Debug for SeededX25519 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SeededX25519")
    }
}

impl SupportedKxGroup for SeededX25519 {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, Error> {
        let mut secret = [0u8; 32];
        self.0
            .lock()
            .map_err(|_| Error::FailedToGetRandomBytes)?
            .fill_bytes(&mut secret);
        let secret = x25519_dalek::StaticSecret::from(secret);
        let public = x25519_dalek::PublicKey::from(&secret);
        Ok(Box::new(X25519Exchange {
            secret,
            public: public.to_bytes(),
        }))
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

struct X25519Exchange {
    secret: x25519_dalek::StaticSecret,
    public: [u8; 32],
}

impl ActiveKeyExchange for X25519Exchange {
    fn complete(self: Box<Self>, peer_pub_key: &[u8]) -> Result<SharedSecret, Error> {
        let peer: [u8; 32] = peer_pub_key
            .try_into()
            .map_err(|_| Error::from(PeerMisbehaved::InvalidKeyShare))?;
        let shared = self
            .secret
            .diffie_hellman(&x25519_dalek::PublicKey::from(peer));
        if !shared.was_contributory() {
            return Err(PeerMisbehaved::InvalidKeyShare.into());
        }
        Ok(SharedSecret::from(&shared.as_bytes()[..]))
    }

    fn pub_key(&self) -> &[u8] {
        &self.public
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

/// *ring*'s provider with the endpoint's seeded generators in place of the system's.
fn seeded_provider(seeds: &Seeds) -> Arc<CryptoProvider> {
    let random: &'static SeededRandom =
        Box::leak(Box::new(SeededRandom(Mutex::new(seeds.rng("tls random")))));
    let x25519: &'static SeededX25519 =
        Box::leak(Box::new(SeededX25519(Mutex::new(seeds.rng("tls x25519")))));
    let mut provider = rustls::crypto::ring::default_provider();
    provider.secure_random = random;
    provider.kx_groups = vec![x25519];
    Arc::new(provider)
}

// ---------------------------------------------------------------------------------------------
// the server's key: ECDSA P-256 with SHA-256, deterministic nonces (RFC 6979)

#[derive(Clone)]
struct DeterministicP256(p256::ecdsa::SigningKey);

impl fmt::Debug for DeterministicP256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DeterministicP256")
    }
}

impl SigningKey for DeterministicP256 {
    fn choose_scheme(&self, offered: &[SignatureScheme]) -> Option<Box<dyn rustls::sign::Signer>> {
        offered
            .contains(&SignatureScheme::ECDSA_NISTP256_SHA256)
            .then(|| Box::new(self.clone()) as Box<dyn rustls::sign::Signer>)
    }

    fn algorithm(&self) -> SignatureAlgorithm {
        SignatureAlgorithm::ECDSA
    }
}

impl rustls::sign::Signer for DeterministicP256 {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, Error> {
        let signature: p256::ecdsa::Signature = self.0.sign(message); // SHA-256, RFC 6979
        Ok(signature.to_der().as_bytes().to_vec())
    }

    fn scheme(&self) -> SignatureScheme {
        SignatureScheme::ECDSA_NISTP256_SHA256
    }
}

// ---------------------------------------------------------------------------------------------
// the client's trust: exactly one certificate

struct PinnedCertificate {
    der: Vec<u8>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl fmt::Debug for PinnedCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PinnedCertificate")
    }
}

impl ServerCertVerifier for PinnedCertificate {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        // The pinned DER is the whole trust: no chain, no name or validity-period check.
        if end_entity.as_ref() == self.der.as_slice() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(Error::InvalidCertificate(CertificateError::UnknownIssuer))
        }
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        Err(Error::General("TLS 1.2 is not offered".into())) // QUIC is TLS 1.3 only
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

// ---------------------------------------------------------------------------------------------
// the QUIC TLS configurations

/// The client's TLS: ALPN `alpn`, trusting only `cert_der`, no resumption, no 0-RTT.
pub fn client_config(
    seeds: &Seeds,
    cert_der: &[u8],
    alpn: &[u8],
    key_log: Arc<KeyLogLines>,
) -> Result<QuicClientConfig, String> {
    let provider = seeded_provider(seeds);
    let verifier = PinnedCertificate {
        der: cert_der.to_vec(),
        algorithms: provider.signature_verification_algorithms,
    };
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS client configuration: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    config.resumption = Resumption::disabled();
    config.enable_early_data = false;
    config.key_log = key_log;
    QuicClientConfig::try_from(config).map_err(|e| format!("TLS client configuration: {e}"))
}

/// The server's TLS: certificate `cert_der` with the P-256 key `key_der` (PKCS#8 DER), ALPN
/// `alpn`, no session tickets, no 0-RTT.
pub fn server_config(
    seeds: &Seeds,
    cert_der: &[u8],
    key_der: &[u8],
    alpn: &[u8],
    key_log: Arc<KeyLogLines>,
) -> Result<QuicServerConfig, String> {
    let key = p256::ecdsa::SigningKey::from_pkcs8_der(key_der)
        .map_err(|e| format!("server key is not a PKCS#8 DER P-256 private key ({e})"))?;
    let signing: Arc<dyn SigningKey> = Arc::new(DeterministicP256(key));
    let certified = CertifiedKey::new(vec![CertificateDer::from(cert_der.to_vec())], signing);
    let mut config = rustls::ServerConfig::builder_with_provider(seeded_provider(seeds))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS server configuration: {e}"))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    config.alpn_protocols = vec![alpn.to_vec()];
    config.send_tls13_tickets = 0;
    config.max_early_data_size = 0;
    config.session_storage = Arc::new(NoServerSessionStorage {});
    config.key_log = key_log;
    QuicServerConfig::try_from(config).map_err(|e| format!("TLS server configuration: {e}"))
}
