//! TLS for the producer's connections: a connector that tonic dials through, with rustls
//! (ring) and the server's certificate checked as grpcio checks it.
//!
//! Not tonic's own TLS: webpki refuses an end-entity certificate marked as a CA, and the
//! self-signed certificate `openssl req -x509` makes (what a broker's operator is likely
//! to hand the client as its root) is one. grpcio (BoringSSL) accepts it, so a client
//! that trusted it before must still reach the broker. Here a server that presents
//! exactly a certificate it was given to trust is accepted once its name matches; every
//! other chain goes through webpki as usual.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Uri;
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_name, WebPkiServerVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How to reach the shards over TLS.
#[derive(Clone, Debug, Default)]
pub struct Tls {
    /// PEM roots to trust; None: the system's.
    pub root_cert: Option<Vec<u8>>,
    /// The name the shards' certificates must carry, when not the endpoint's host.
    pub server_name: Option<String>,
}

/// Dials a shard and runs the TLS handshake, offering HTTP/2 only.
#[derive(Clone)]
pub struct Connector {
    config: Arc<ClientConfig>,
    server_name: Option<String>,
}

impl Connector {
    pub fn new(tls: &Tls) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        let pinned = match &tls.root_cert {
            Some(pem) => {
                let certs = rustls_pemfile_certs(pem)?;
                roots.add_parsable_certificates(certs.iter().cloned());
                certs
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(found.certs);
                Vec::new()
            }
        };
        if roots.is_empty() {
            return Err("no TLS root certificate to trust".into());
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|error| format!("cannot check TLS certificates: {error}"))?;
        let verifier = Arc::new(PinnedOrWebPki {
            pinned,
            webpki,
            provider: provider.clone(),
        });
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| format!("cannot set up TLS: {error}"))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Connector {
            config: Arc::new(config),
            server_name: tls.server_name.clone(),
        })
    }
}

/// The certificates of a PEM file.
fn rustls_pemfile_certs(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("the TLS root certificate is not PEM: {error}"))
}

impl tower_service::Service<Uri> for Connector {
    type Response = TokioIo<TlsStream<TcpStream>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connector = TlsConnector::from(Arc::clone(&self.config));
        let name = self.server_name.clone();
        Box::pin(async move {
            let host = uri.host().ok_or("the endpoint has no host")?;
            let host = host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let port = uri.port_u16().ok_or("the endpoint has no port")?;
            let tcp = TcpStream::connect((host.as_str(), port)).await?;
            tcp.set_nodelay(true)?;
            let name = ServerName::try_from(name.unwrap_or(host))?;
            let stream = connector.connect(name, tcp).await?;
            if stream.get_ref().1.alpn_protocol() != Some(b"h2") {
                return Err("the shard did not agree to HTTP/2 over TLS".into());
            }
            Ok(TokioIo::new(stream))
        })
    }
}

/// webpki, except that a certificate given as a root and presented as is by the server
/// is accepted when its name matches (see the module comment).
#[derive(Debug)]
struct PinnedOrWebPki {
    pinned: Vec<CertificateDer<'static>>,
    webpki: Arc<WebPkiServerVerifier>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedOrWebPki {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.pinned.iter().any(|pinned| pinned == end_entity) {
            verify_server_name(&ParsedCertificate::try_from(end_entity)?, server_name)?;
            return Ok(ServerCertVerified::assertion());
        }
        self.webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
