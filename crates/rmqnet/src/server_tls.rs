//! TLS for the shard's public port: the certificate chain and key the broker was started
//! with (`--tls-cert`, `--tls-key`, PEM), offering HTTP/2 only, as grpcio's server did.
//! The Python server behind the data plane listens on loopback in plain text: TLS ends here.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;

/// The server's TLS settings from PEM bytes; the error says which part is wrong.
pub fn server_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<ServerConfig>, String> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("the TLS certificate is not PEM: {error}"))?;
    if chain.is_empty() {
        return Err("the TLS certificate file holds no certificate".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|error| format!("the TLS key is not a PEM private key: {error}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("cannot set up TLS: {error}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|error| format!("the TLS key does not fit the certificate: {error}"))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_pem() {
        let error = server_config(b"not pem", b"not pem").unwrap_err();
        assert!(error.contains("holds no certificate"), "{error}");
    }
}
