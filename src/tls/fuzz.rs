//! The record layer under a fuzzer (`fuzzing::tls_records`, target `tls_records`): a real
//! handshake in memory between a client session and a rustls server with a fixed certificate,
//! then the server's keys taken over by a forger, and the input read as what the network does to
//! the server's records. Whatever it does, the client hands out as data only a prefix of the
//! application data the server really sealed: nothing unauthenticated, nothing out of order.
use super::record::Forger;
use super::{PlainSink, TlsConfig, TlsSession};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::Read;
use std::sync::Arc;

/// A self-signed certificate for `localhost` and its key (ECDSA P-256), made for this harness
/// only: the client does not check it (`--check-certificate=false`), the handshake's signature is.
const CERT: &str = "-----BEGIN CERTIFICATE-----\n\
MIIBljCCATugAwIBAgIUUIpv3kkkUYFpp2bScVTL7g2wpq0wCgYIKoZIzj0EAwIw\n\
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwNjEwNDEzM1oYDzIxMjYxMTEy\n\
MTA0MTMzWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n\
PQMBBwNCAASENvyxZ2E98lUAhdKYxeAXXtJX/KSugChzueVxpdzvuFbMCl8Eh3zL\n\
XLA+gGjfivCoMih7csH5GqmHS9dbzjZpo2kwZzAdBgNVHQ4EFgQUCyIEOWQ4qrr6\n\
F3nUtJAu6JlTNNEwHwYDVR0jBBgwFoAUCyIEOWQ4qrr6F3nUtJAu6JlTNNEwDwYD\n\
VR0TAQH/BAUwAwEB/zAUBgNVHREEDTALgglsb2NhbGhvc3QwCgYIKoZIzj0EAwID\n\
SQAwRgIhANGSWsG/AWMs/zPU1Ebt91JGbQek/oNQiL54tB6ArvkQAiEA8gSSygJ/\n\
OUxAoAdItnsgfSc/PMtP7LdgEUAdV4PbZY0=\n\
-----END CERTIFICATE-----";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\n\
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgJq9YAqpnQAilTiCh\n\
4LEVRqFs5YTajDPmyVJZYHc1SYChRANCAASENvyxZ2E98lUAhdKYxeAXXtJX/KSu\n\
gChzueVxpdzvuFbMCl8Eh3zLXLA+gGjfivCoMih7csH5GqmHS9dbzjZp\n\
-----END PRIVATE KEY-----";

struct Collect(Vec<u8>);

impl PlainSink for Collect {
    fn room(&self) -> usize {
        usize::MAX
    }
    fn put(&mut self, data: &[u8]) {
        self.0.extend_from_slice(data);
    }
}

/// The server for suite `pick` (TLS 1.3 or 1.2, AES-GCM or ChaCha20), keys extractable.
fn server(pick: u8) -> Option<Arc<rustls::ServerConfig>> {
    let cert = CertificateDer::from_pem_slice(CERT.as_bytes()).ok()?;
    let key = PrivateKeyDer::from_pem_slice(KEY.as_bytes()).ok()?;
    let tls13 = pick & 1 == 0;
    let chacha = pick & 2 != 0;
    let mut provider = rustls::crypto::ring::default_provider();
    provider
        .cipher_suites
        .retain(|s| format!("{:?}", s.suite()).contains("CHACHA20") == chacha);
    let version: &'static rustls::SupportedProtocolVersion = match tls13 {
        true => &rustls::version::TLS13,
        false => &rustls::version::TLS12,
    };
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[version])
        .ok()?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .ok()?;
    config.enable_secret_extraction = true;
    Some(Arc::new(config))
}

/// Runs `input` (see the module's words); panics if the client hands out a byte it should not.
/// Returns how many bytes it handed out.
pub fn record_layer(input: &[u8]) -> usize {
    let Some((&pick, ops)) = input.split_first() else {
        return 0;
    };
    let (Some(config), Ok(client_config)) = (server(pick), TlsConfig::new(None, false)) else {
        panic!("the harness's TLS configuration");
    };
    let host = url::Host::Domain("localhost");
    let (Ok(mut client), Ok(mut srv)) = (
        TlsSession::new(&client_config, &host),
        rustls::ServerConnection::new(config),
    ) else {
        panic!("the harness's sessions");
    };
    // The handshake, and a request that hands the client's keys over to the record layer.
    let mut request = b"GET / HTTP/1.1\r\n\r\n".to_vec();
    let (mut incoming, mut out, mut sink) = (Vec::new(), Vec::new(), Collect(Vec::new()));
    for _ in 0..64 {
        let Ok(step) = client.process(&mut incoming, &mut out, &mut request, &mut sink) else {
            panic!("the harness's handshake failed");
        };
        incoming.drain(..step.consumed);
        let mut rd = &out[..];
        while !rd.is_empty() {
            if srv.read_tls(&mut rd).is_err() || srv.process_new_packets().is_err() {
                panic!("the harness's server refused the client");
            }
        }
        out.clear();
        let mut got = Vec::new();
        let _ = srv.reader().read_to_end(&mut got);
        while srv.wants_write() {
            let _ = srv.write_tls(&mut incoming);
        }
        if client.in_place_ready() && request.is_empty() && !got.is_empty() {
            break;
        }
    }
    assert!(
        client.in_place_ready(),
        "the harness's handshake did not end"
    );
    let tls13 = srv.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3);
    let Ok(secrets) = srv.dangerous_extract_secrets() else {
        panic!("the harness's server keys");
    };
    let mut forger = Forger::new(tls13, secrets.tx);
    // What the network delivers, and the application data the server really sealed.
    let (mut wire, mut sealed) = (std::mem::take(&mut incoming), Vec::new());
    let mut ops = ops.iter().copied();
    let mut next = |n: usize| -> Vec<u8> { ops.by_ref().take(n).collect() };
    let mut piece = 1usize;
    loop {
        let op = next(1);
        let Some(&op) = op.first() else { break };
        let len = next(1).first().map_or(0, |&n| usize::from(n) * 67);
        match op % 6 {
            0 => {
                let data = next(len);
                wire.extend(forger.record(23, &data, 0));
                sealed.extend_from_slice(&data);
            }
            1 => {
                let kind = next(1).first().copied().unwrap_or(22);
                let data = next(len / 67);
                let padding = next(1).first().map_or(0, |&p| usize::from(p));
                wire.extend(forger.record(kind, &data, padding));
                // Really sealed application data, the client may hand out (or refuse the
                // record, too long, and take nothing after it). On TLS 1.3 the type is the last
                // byte of the inner plaintext that is not zero: a "type" of 0 after data makes
                // its last non-zero byte the type, and the bytes before it the content.
                let mut inner = data.clone();
                inner.push(kind);
                let content = match tls13 {
                    true => inner
                        .iter()
                        .rposition(|&b| b != 0)
                        .filter(|&end| inner[end] == 23)
                        .map(|end| &inner[..end]),
                    false => (kind == 23).then_some(&data[..]),
                };
                if let Some(content) = content {
                    sealed.extend_from_slice(content);
                }
            }
            2 => wire.extend(next(len / 67)),
            3 => {
                let at = next(2);
                let flip = next(1).first().map_or(1, |&x| x | 1);
                if let (Some(&a), Some(&b), false) = (at.first(), at.get(1), wire.is_empty()) {
                    let i = usize::from(u16::from_be_bytes([a, b])) % wire.len();
                    wire[i] ^= flip;
                }
            }
            4 => {
                // A record cut out of the stream (the last whole one).
                let keep = wire.len().saturating_sub(len.max(1));
                wire.truncate(keep);
            }
            _ => piece = 1 + next(1).first().map_or(0, |&p| usize::from(p) * 131),
        }
    }
    // Fed in pieces, each call seeing what the last left.
    let mut buf = Vec::new();
    let mut fed = 0;
    let mut delivered = Collect(Vec::new());
    loop {
        let end = (fed + piece).min(wire.len());
        buf.extend_from_slice(&wire[fed..end]);
        fed = end;
        match client.process(&mut buf, &mut out, &mut Vec::new(), &mut delivered) {
            Ok(step) => {
                buf.drain(..step.consumed);
                if step.peer_closed {
                    break;
                }
            }
            Err(_) => break,
        }
        if fed == wire.len() {
            break;
        }
    }
    assert!(
        sealed.starts_with(&delivered.0),
        "{} bytes handed out that the server did not seal in that order",
        delivered.0.len()
    );
    delivered.0.len()
}

#[cfg(test)]
mod tests {
    use super::record_layer;

    /// Application data sealed as it should be is all handed out, on every suite, fed whole or
    /// byte by byte: the harness is not vacuous.
    #[test]
    fn sealed_data_is_handed_out_whole() {
        for pick in 0..4u8 {
            for piece in [None, Some(0u8)] {
                let mut input = vec![pick];
                if let Some(p) = piece {
                    input.extend([5, 0, p]);
                }
                // Two records of 67 and 134 bytes.
                input.extend([0, 1]);
                input.extend(std::iter::repeat_n(7u8, 67));
                input.extend([0, 2]);
                input.extend(std::iter::repeat_n(9u8, 134));
                assert_eq!(record_layer(&input), 201, "suite {pick} piece {piece:?}");
            }
        }
    }
}
