//! The RPC server's TLS (`--rpc-secure`): bytes in, bytes out, as the client side. The RPC server
//! moves a few hundred bytes per call, so this side uses rustls's buffered server connection over
//! in-memory buffers: its copies cost nothing here, and it handles the handshake, key updates and
//! close_notify without a state machine of ours. The download data path keeps the unbuffered client.
use super::{from_rustls, TlsError};
use rustls::{ServerConfig, ServerConnection};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// The server's certificate chain and key, loaded once.
#[derive(Clone)]
pub struct ServerTlsConfig {
    inner: Arc<ServerConfig>,
}

impl std::fmt::Debug for ServerTlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerTlsConfig")
    }
}

impl ServerTlsConfig {
    /// The certificate chain from `cert_file` and the unencrypted key from `key_file`, both PEM
    /// (`--rpc-certificate`, `--rpc-private-key`). The error names the file and the cause.
    pub fn load(cert_file: &Path, key_file: &Path) -> Result<ServerTlsConfig, TlsError> {
        let (certs, key) = super::identity(cert_file, key_file)?;
        let mut config = ServerConfig::builder_with_provider(crate::tls::crypto_provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| {
                TlsError::Config(format!(
                    "{} and {}: {e}",
                    cert_file.display(),
                    key_file.display()
                ))
            })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ServerTlsConfig {
            inner: Arc::new(config),
        })
    }
}

impl ServerTlsConfig {
    /// A server of the simulation (`engine::simulation`): the chain and key given, one protocol
    /// version (1.3, or 1.2), and ChaCha20-Poly1305 or AES-GCM suites only.
    #[cfg(test)]
    pub fn for_simulation(
        chain: &[Vec<u8>],
        pkcs8_key: &[u8],
        tls13: bool,
        chacha: bool,
    ) -> ServerTlsConfig {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs = chain
            .iter()
            .map(|c| CertificateDer::from(c.clone()))
            .collect();
        let key = PrivateKeyDer::Pkcs8(pkcs8_key.to_vec().into());
        let mut provider = rustls::crypto::ring::default_provider();
        provider
            .cipher_suites
            .retain(|s| format!("{:?}", s.suite()).contains("CHACHA20") == chacha);
        let version: &'static rustls::SupportedProtocolVersion = if tls13 {
            &rustls::version::TLS13
        } else {
            &rustls::version::TLS12
        };
        let config = ServerConfig::builder_with_provider(std::sync::Arc::new(provider))
            .with_protocol_versions(&[version])
            .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
            .expect("a simulated server's TLS configuration");
        ServerTlsConfig {
            inner: Arc::new(config),
        }
    }
}

/// One accepted connection's TLS.
pub struct ServerSession {
    conn: ServerConnection,
}

impl ServerSession {
    pub fn new(config: &ServerTlsConfig) -> Result<ServerSession, TlsError> {
        let mut conn = ServerConnection::new(config.inner.clone()).map_err(from_rustls)?;
        // The caller bounds what it queues; rustls must not refuse part of an answer.
        conn.set_buffer_limit(None);
        Ok(ServerSession { conn })
    }

    /// Takes ciphertext from the peer: the plaintext it carries is appended to `plain`, the records
    /// to send back (handshake, alerts) to `out`. Returns whether the peer closed the session.
    /// On a protocol error, `out` holds the alert to send before closing.
    pub fn receive(
        &mut self,
        mut cipher: &[u8],
        plain: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> Result<bool, TlsError> {
        let mut closed = false;
        while !cipher.is_empty() {
            match self.conn.read_tls(&mut cipher) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(TlsError::Protocol(e.to_string())),
            }
            if let Err(e) = self.conn.process_new_packets() {
                self.flush(out);
                return Err(from_rustls(e));
            }
            let mut chunk = [0u8; 4096];
            loop {
                match self.conn.reader().read(&mut chunk) {
                    Ok(0) => {
                        closed = true;
                        break;
                    }
                    Ok(n) => plain.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    // The peer went away without close_notify: as good as closed.
                    Err(_) => {
                        closed = true;
                        break;
                    }
                }
            }
        }
        self.flush(out);
        Ok(closed)
    }

    /// Encrypts `plain` into records appended to `out` (held by rustls until the handshake is
    /// done, then sent with the records that finish it).
    pub fn seal(&mut self, plain: &[u8], out: &mut Vec<u8>) {
        if !plain.is_empty() {
            // Unlimited buffers: the write takes everything.
            let _ = std::io::Write::write_all(&mut self.conn.writer(), plain);
        }
        self.flush(out);
    }

    /// Appends close_notify to `out`.
    pub fn close(&mut self, out: &mut Vec<u8>) {
        self.conn.send_close_notify();
        self.flush(out);
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        while self.conn.wants_write() {
            if self.conn.write_tls(out).is_err() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    use std::io::Write;

    fn pki(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, String) {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let cert = dir.join("cert.pem");
        let key = dir.join("key.pem");
        std::fs::write(&cert, ck.cert.pem()).unwrap();
        std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
        (cert, key, ck.cert.pem())
    }

    #[test]
    fn a_rustls_client_talks_to_the_session_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key, pem) = pki(dir.path());
        let config = ServerTlsConfig::load(&cert, &key).unwrap();
        let mut server = ServerSession::new(&config).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(pem.as_bytes()).unwrap())
            .unwrap();
        let client_config =
            rustls::ClientConfig::builder_with_provider(crate::tls::crypto_provider())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
        let mut client =
            rustls::ClientConnection::new(Arc::new(client_config), "localhost".try_into().unwrap())
                .unwrap();
        let request = vec![b'q'; 50_000];
        client.writer().write_all(&request).unwrap();
        let (mut got, mut answer) = (Vec::new(), Vec::new());
        let mut answered = false;
        for _ in 0..100 {
            let mut c2s = Vec::new();
            while client.wants_write() {
                client.write_tls(&mut c2s).unwrap();
            }
            let mut s2c = Vec::new();
            // Fed in small pieces, as reads arrive.
            for piece in c2s.chunks(1000) {
                assert!(!server.receive(piece, &mut got, &mut s2c).unwrap());
            }
            if got.len() == request.len() && !answered {
                server.seal(b"answer", &mut s2c);
                server.close(&mut s2c);
                answered = true;
            }
            let mut rd = &s2c[..];
            while !rd.is_empty() {
                client.read_tls(&mut rd).unwrap();
                client.process_new_packets().unwrap();
            }
            let mut buf = [0u8; 100];
            while let Ok(n) = client.reader().read(&mut buf) {
                if n == 0 {
                    break;
                }
                answer.extend_from_slice(&buf[..n]);
            }
            if answer == b"answer" {
                break;
            }
        }
        assert_eq!(got, request);
        assert_eq!(answer, b"answer");
    }

    #[test]
    fn plain_http_is_a_protocol_error_with_an_alert() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key, _) = pki(dir.path());
        let config = ServerTlsConfig::load(&cert, &key).unwrap();
        let mut server = ServerSession::new(&config).unwrap();
        let (mut plain, mut out) = (Vec::new(), Vec::new());
        let err = server
            .receive(
                b"POST /jsonrpc HTTP/1.1\r\nHost: x\r\n\r\n",
                &mut plain,
                &mut out,
            )
            .unwrap_err();
        assert!(matches!(err, TlsError::Protocol(_)), "{err:?}");
        assert!(plain.is_empty());
    }

    #[test]
    fn files_without_pem_are_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key, _) = pki(dir.path());
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "garbage\n").unwrap();
        let e = ServerTlsConfig::load(&junk, &key).unwrap_err().to_string();
        assert!(e.contains("junk.pem"), "{e}");
        let e = ServerTlsConfig::load(&cert, &junk).unwrap_err().to_string();
        assert!(e.contains("junk.pem") && e.contains("private key"), "{e}");
        // A key that is not the certificate's.
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        let (_, other_key, _) = pki(&other);
        assert!(ServerTlsConfig::load(&cert, &other_key).is_err());
        assert!(ServerTlsConfig::load(Path::new("/nonexistent.pem"), &key).is_err());
    }
}
