//! TLS as bytes in, bytes out: a thin adapter over rustls 0.23's unbuffered client. The caller owns
//! every buffer and all I/O; this module only turns ciphertext into plaintext for a sink and says what
//! has to be sent. No rustls type crosses this interface, so the TLS library can be swapped.
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::UnbufferedClientConnection;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::unbuffered::{ConnectionState, EncodeError, EncryptError};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

pub(crate) mod fuzz;
mod record;
pub mod server;

/// Smallest ciphertext buffer that always holds a whole record plus a coalesced handshake message.
pub const MIN_INCOMING: usize = 72 * 1024;

/// The most [`TlsSession::plain_bound`] gives for any record the session accepts.
pub const PLAIN_BOUND_MAX: usize = record::LONGEST_BODY;

/// Where the default trust store comes from on Debian-like systems, first found wins.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// A TLS failure, in words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsError {
    /// The trust store could not be built (`--ca-certificate` unreadable or empty).
    Config(String),
    /// The server's certificate was rejected.
    Certificate(String),
    /// Any other TLS protocol failure.
    Protocol(String),
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Config(m) => write!(f, "TLS setup failed: {m}"),
            TlsError::Certificate(m) => write!(
                f,
                "SSL/TLS handshake failure: {m} (use --ca-certificate=FILE to trust another authority)"
            ),
            TlsError::Protocol(m) => write!(f, "SSL/TLS handshake failure: {m}"),
        }
    }
}

impl std::error::Error for TlsError {}

fn from_rustls(e: rustls::Error) -> TlsError {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(c) => TlsError::Certificate(
            match c {
                C::NotValidForName | C::NotValidForNameContext { .. } => {
                    "its certificate is for another name".to_string()
                }
                C::UnknownIssuer => {
                    "its certificate is not signed by a trusted authority (self-signed, or issued by an authority this machine does not know)".to_string()
                }
                C::Expired | C::ExpiredContext { .. } => "its certificate has expired".to_string(),
                C::NotValidYet | C::NotValidYetContext { .. } => {
                    "its certificate is not valid yet (check this machine's clock)".to_string()
                }
                C::Revoked => "its certificate has been revoked".to_string(),
                other => format!("its certificate was rejected: {other:?}"),
            },
        ),
        rustls::Error::AlertReceived(rustls::AlertDescription::CertificateRequired) => {
            TlsError::Protocol(
                "the server requires a client certificate (--certificate and --private-key)"
                    .to_string(),
            )
        }
        other => TlsError::Protocol(other.to_string()),
    }
}

impl TlsError {
    /// The message for a handshake with `host` that failed so.
    pub fn with_host(&self, host: &str) -> String {
        match self {
            TlsError::Certificate(why) => format!(
                "SSL/TLS handshake failure: {host}: {why} (--ca-certificate=FILE trusts another authority)"
            ),
            TlsError::Protocol(why) => format!("SSL/TLS handshake failure: {host}: {why}"),
            TlsError::Config(_) => self.to_string(),
        }
    }

    /// The message for a failure after the handshake with `host` (a record that does not open, a
    /// fatal alert), in aria2c's words for a failed receive.
    pub fn after_handshake(&self, host: &str) -> String {
        match self {
            TlsError::Protocol(why) | TlsError::Certificate(why) => {
                format!("Failed to receive data from {host}, cause: {why}")
            }
            TlsError::Config(_) => self.to_string(),
        }
    }
}

/// Shared client settings: trust anchors and verification policy. Built once per process.
#[derive(Clone)]
pub struct TlsConfig {
    inner: Arc<ClientConfig>,
}

impl TlsConfig {
    /// `ca_file` replaces the system trust store (as `--ca-certificate` does); `verify == false`
    /// accepts any certificate (`--check-certificate=false`).
    pub fn new(ca_file: Option<&Path>, verify: bool) -> Result<TlsConfig, TlsError> {
        TlsConfig::with(&TlsOptions {
            ca_file,
            verify,
            ..TlsOptions::default()
        })
    }

    /// The client settings from every TLS option.
    pub fn with(o: &TlsOptions) -> Result<TlsConfig, TlsError> {
        let provider = crypto_provider();
        let versions: &[&'static rustls::SupportedProtocolVersion] = if o.tls13_only {
            &[&rustls::version::TLS13]
        } else {
            &[&rustls::version::TLS13, &rustls::version::TLS12]
        };
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let builder = if o.verify {
            match o.ca_file {
                Some(path) => {
                    let (roots, pinned) = roots_from_file(path)?;
                    let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
                        Arc::new(roots),
                        provider.clone(),
                    )
                    .build()
                    .map_err(|e| TlsError::Config(format!("{}: {e}", path.display())))?;
                    builder
                        .dangerous()
                        .with_custom_certificate_verifier(Arc::new(TrustFile { inner, pinned }))
                }
                None => builder.with_root_certificates(system_roots()),
            }
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
        };
        let mut config = match o.certificate {
            None => builder.with_no_client_auth(),
            Some(cert_file) => {
                let (certs, key) = identity(cert_file, o.private_key.unwrap_or(cert_file))?;
                builder
                    .with_client_auth_cert(certs, key)
                    .map_err(|e| TlsError::Config(format!("{}: {e}", cert_file.display())))?
            }
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        // Once the handshake is done, records are opened in place by `record` with the keys
        // rustls hands over.
        config.enable_secret_extraction = true;
        Ok(TlsConfig {
            inner: Arc::new(config),
        })
    }
}

/// The cryptography every TLS connection of ringdl's uses, client and RPC server alike: rustls's
/// ring provider (bench/RESULTS.md has why: its AES-GCM path and its start-up cost).
pub fn crypto_provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Everything the TLS options say.
#[derive(Debug, Default, Clone, Copy)]
pub struct TlsOptions<'a> {
    /// `--ca-certificate`.
    pub ca_file: Option<&'a Path>,
    /// `--check-certificate`.
    pub verify: bool,
    /// `--certificate`: the client certificate (PEM), with its chain.
    pub certificate: Option<&'a Path>,
    /// `--private-key` (PEM); the certificate's file when not given.
    pub private_key: Option<&'a Path>,
    /// `--min-tls-version=TLSv1.3`.
    pub tls13_only: bool,
}

/// A certificate chain and its key, from PEM files (a client's `--certificate`, the RPC server's
/// `--rpc-certificate`).
fn identity(
    cert_file: &Path,
    key_file: &Path,
) -> Result<
    (
        Vec<CertificateDer<'static>>,
        rustls::pki_types::PrivateKeyDer<'static>,
    ),
    TlsError,
> {
    use rustls::pki_types::pem::PemObject;
    let certs = CertificateDer::pem_file_iter(cert_file)
        .map_err(|e| TlsError::Config(format!("cannot read {}: {e}", cert_file.display())))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Config(format!("{}: {e}", cert_file.display())))?;
    if certs.is_empty() {
        return Err(TlsError::Config(format!(
            "no certificate found in {} (ringdl reads PEM files)",
            cert_file.display()
        )));
    }
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(key_file).map_err(|e| {
        TlsError::Config(format!(
            "no private key read from {} (PEM): {e}",
            key_file.display()
        ))
    })?;
    Ok((certs, key))
}

/// The trust anchors of a `--ca-certificate` file, and its certificates as they are (a server
/// presenting one of them exactly is trusted, see [`TrustFile`]).
fn roots_from_file(path: &Path) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), TlsError> {
    let mut roots = RootCertStore::empty();
    let mut pinned = Vec::new();
    let iter = CertificateDer::pem_file_iter(path)
        .map_err(|e| TlsError::Config(format!("cannot read {}: {e}", path.display())))?;
    for cert in iter {
        let cert = cert.map_err(|e| TlsError::Config(format!("{}: {e}", path.display())))?;
        roots
            .add(cert.clone())
            .map_err(|e| TlsError::Config(format!("{}: {e}", path.display())))?;
        pinned.push(cert);
    }
    if roots.is_empty() {
        return Err(TlsError::Config(format!(
            "no certificate found in {}",
            path.display()
        )));
    }
    Ok((roots, pinned))
}

/// `--ca-certificate=FILE`: the file's certificates are trust anchors, and a server presenting one
/// of them exactly is trusted as itself, as aria2c (GnuTLS) trusts it: a self-signed certificate
/// that says it is a CA (what `openssl req -x509` makes by default, refused by webpki as an end
/// entity), or a server's own certificate pinned instead of its CA (no issuer in the file). Only
/// those two refusals are overruled, after webpki has checked the certificate's dates, and the
/// name must still match; the handshake's signature is checked with its key as always.
#[derive(Debug)]
struct TrustFile {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl TrustFile {
    /// Whether webpki's refusal of a pinned certificate is one that pinning answers.
    fn pin_answers(e: &rustls::Error) -> bool {
        use rustls::CertificateError;
        match e {
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => true,
            rustls::Error::InvalidCertificate(CertificateError::Other(other)) => {
                format!("{other:?}").contains("CaUsedAsEndEntity")
            }
            _ => false,
        }
    }
}

impl ServerCertVerifier for TrustFile {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(e)
                if Self::pin_answers(&e)
                    && self
                        .pinned
                        .iter()
                        .any(|p| p.as_ref() == end_entity.as_ref()) =>
            {
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&parsed, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The system CA bundle ringdl trusts by default, if the machine has one.
pub fn system_bundle_path() -> Option<&'static str> {
    SYSTEM_BUNDLES
        .iter()
        .copied()
        .find(|p| Path::new(p).is_file())
}

/// The system bundle, as Debian's aria2c uses; the compiled-in Mozilla roots when there is none.
fn system_roots() -> RootCertStore {
    for path in SYSTEM_BUNDLES {
        if let Ok(iter) = CertificateDer::pem_file_iter(path) {
            let mut roots = RootCertStore::empty();
            roots.add_parsable_certificates(iter.flatten());
            if !roots.is_empty() {
                return roots;
            }
        }
    }
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// `--check-certificate=false`: any certificate is accepted, but handshake signatures are still
/// checked so the session keys belong to whoever holds the presented key.
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Receives decrypted application data. `room` is how many bytes `put` can take right now; a record
/// larger than that stays inside the TLS session until there is room (backpressure).
pub trait PlainSink {
    fn room(&self) -> usize;
    fn put(&mut self, data: &[u8]);
}

/// What one call to [`TlsSession::process`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Bytes at the front of `incoming` that are finished with and must be dropped.
    pub consumed: usize,
    /// The sink had no room for the next record; call again once it has.
    pub sink_full: bool,
    /// The handshake is complete (application data can flow).
    pub handshake_done: bool,
    /// The peer sent close_notify: no more application data will come.
    pub peer_closed: bool,
}

/// What [`TlsSession::open_in_place`] found in a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InPlace {
    /// Application data: this many bytes, at the front of the region.
    Data(usize),
    /// Nothing for the caller (a session ticket, a key update).
    Nothing,
    /// close_notify: no more application data will come.
    Closed,
}

/// One client connection's TLS state: rustls's handshake, then this crate's record layer.
pub struct TlsSession {
    state: State,
    handshake_done: bool,
    peer_closed: bool,
}

enum State {
    Handshake(Box<UnbufferedClientConnection>),
    Traffic(Box<record::Traffic>),
    /// Between the two, only if the hand-over failed.
    Failed,
    /// After an error, or after this side's close_notify: nothing more is opened or sealed.
    Closed,
}

/// How a call into the handshake ended.
enum Handshaking {
    /// It needs more bytes (or room, or the peer closed): the caller's turn.
    Wait { sink_full: bool },
    /// It is complete, but rustls goes on with the records for now (no request sealed yet, or
    /// it holds part of a message).
    Ready,
    /// It is complete and a request is sealed: the keys can be taken over.
    Done,
}

/// The server name for SNI and verification. IP literals verify against IP SANs and send no SNI.
fn server_name(host: &url::Host<&str>) -> Result<ServerName<'static>, TlsError> {
    match host {
        url::Host::Domain(d) => ServerName::try_from(d.to_string())
            .map_err(|e| TlsError::Config(format!("bad server name {d}: {e}"))),
        url::Host::Ipv4(a) => Ok(ServerName::IpAddress(IpAddr::V4(*a).into())),
        url::Host::Ipv6(a) => Ok(ServerName::IpAddress(IpAddr::V6(*a).into())),
    }
}

fn grow_and<E>(
    out: &mut Vec<u8>,
    mut f: impl FnMut(&mut [u8]) -> Result<usize, E>,
    need: impl Fn(&E) -> Option<usize>,
) -> Result<(), E> {
    let start = out.len();
    let mut extra = 4096;
    loop {
        out.resize(start + extra, 0);
        match f(&mut out[start..]) {
            Ok(n) => {
                out.truncate(start + n);
                return Ok(());
            }
            Err(e) => {
                out.truncate(start);
                match need(&e) {
                    Some(n) if n > extra => extra = n,
                    _ => return Err(e),
                }
            }
        }
    }
}

impl TlsSession {
    /// Starts a client handshake to `host`. The first flight is produced by the next `process`.
    pub fn new(config: &TlsConfig, host: &url::Host<&str>) -> Result<TlsSession, TlsError> {
        let conn = UnbufferedClientConnection::new(config.inner.clone(), server_name(host)?)
            .map_err(from_rustls)?;
        Ok(TlsSession {
            state: State::Handshake(Box::new(conn)),
            handshake_done: false,
            peer_closed: false,
        })
    }

    /// Whether application data can be sent.
    pub fn handshake_done(&self) -> bool {
        self.handshake_done
    }

    /// Runs the state machine over the ciphertext in `incoming` until it needs more bytes from the
    /// peer or the sink is full. TLS records to transmit are appended to `outgoing`; once the
    /// handshake is done, a non-empty `request` is encrypted into `outgoing` and cleared.
    /// Records are opened in place: `incoming` is overwritten up to what `Step::consumed` says.
    pub fn process(
        &mut self,
        incoming: &mut [u8],
        outgoing: &mut Vec<u8>,
        request: &mut Vec<u8>,
        sink: &mut dyn PlainSink,
    ) -> Result<Step, TlsError> {
        let step = self.process_records(incoming, outgoing, request, sink);
        if step.is_err() {
            self.state = State::Closed;
        }
        step
    }

    /// The record this side sends before it closes a connection whose handshake is over
    /// (RFC 8446 6.1, RFC 5246 7.2.1), once; none after an error (the connection is broken) or
    /// before the keys were taken over. The caller sends it when nothing else is being sent,
    /// and waits for no answer.
    pub fn close_notify(&mut self) -> Option<Vec<u8>> {
        let State::Traffic(traffic) = &mut self.state else {
            return None;
        };
        let mut out = Vec::new();
        let sealed = traffic.seal_close_notify(&mut out);
        self.state = State::Closed;
        sealed.ok().map(|()| out)
    }

    fn process_records(
        &mut self,
        incoming: &mut [u8],
        outgoing: &mut Vec<u8>,
        request: &mut Vec<u8>,
        sink: &mut dyn PlainSink,
    ) -> Result<Step, TlsError> {
        let mut off = 0;
        if let State::Handshake(conn) = &mut self.state {
            match handshake(
                conn,
                incoming,
                outgoing,
                request,
                sink,
                &mut off,
                &mut self.peer_closed,
            )? {
                Handshaking::Wait { sink_full } => return Ok(self.step(off, sink_full)),
                Handshaking::Ready => {
                    self.handshake_done = true;
                    return Ok(self.step(off, false));
                }
                Handshaking::Done => {
                    let State::Handshake(conn) = std::mem::replace(&mut self.state, State::Failed)
                    else {
                        return Err(TlsError::Protocol("unexpected TLS state".to_string()));
                    };
                    let (secrets, kernel) = conn
                        .dangerous_into_kernel_connection()
                        .map_err(from_rustls)?;
                    self.state = State::Traffic(Box::new(record::Traffic::new(secrets, kernel)?));
                    self.handshake_done = true;
                }
            }
        }
        let State::Traffic(traffic) = &mut self.state else {
            return Err(TlsError::Protocol("unexpected TLS state".to_string()));
        };
        if !request.is_empty() {
            traffic.seal_data(request, outgoing)?;
            request.clear();
        }
        let mut sink_full = false;
        while !self.peer_closed {
            let rest = &mut incoming[off..];
            let Some(len) = traffic.record_len(rest)? else {
                break;
            };
            if rest.len() < len {
                break;
            }
            if traffic.plain_bound(len) > sink.room() {
                sink_full = true;
                break;
            }
            let record = &mut rest[..len];
            match traffic.open_next(record, 0, outgoing)? {
                InPlace::Data(n) => sink.put(&record[..n]),
                InPlace::Nothing => {}
                InPlace::Closed => self.peer_closed = true,
            }
            off += len;
        }
        Ok(self.step(off, sink_full))
    }

    /// Whether records can be opened where they lie ([`TlsSession::open_in_place`]): the handshake
    /// is over and the peer has not closed.
    pub fn in_place_ready(&self) -> bool {
        matches!(self.state, State::Traffic(_)) && !self.peer_closed
    }

    /// The whole length of the record at the front of `buf` (header included), once its header is
    /// there; an error for a length no peer may send.
    pub fn record_len(&self, buf: &[u8]) -> Result<Option<usize>, TlsError> {
        match &self.state {
            State::Traffic(t) => t.record_len(buf),
            _ => Err(TlsError::Protocol("unexpected TLS state".to_string())),
        }
    }

    /// The most plaintext a record of `len` bytes (header included) can carry.
    pub fn plain_bound(&self, len: usize) -> usize {
        match &self.state {
            State::Traffic(t) => t.plain_bound(len),
            _ => len,
        }
    }

    /// Opens the one record that is `region[at..]` and leaves its plaintext at the front of
    /// `region`, with no copy: the way a body's records are decrypted straight into its write
    /// block. Records to send in answer (a key update) are appended to `outgoing`.
    pub fn open_in_place(
        &mut self,
        region: &mut [u8],
        at: usize,
        outgoing: &mut Vec<u8>,
    ) -> Result<InPlace, TlsError> {
        let State::Traffic(traffic) = &mut self.state else {
            return Err(TlsError::Protocol("unexpected TLS state".to_string()));
        };
        let found = match traffic.open_next(region, at, outgoing) {
            Ok(found) => found,
            Err(e) => {
                self.state = State::Closed;
                return Err(e);
            }
        };
        if found == InPlace::Closed {
            self.peer_closed = true;
        }
        Ok(found)
    }

    fn step(&self, consumed: usize, sink_full: bool) -> Step {
        Step {
            consumed,
            sink_full,
            handshake_done: self.handshake_done,
            peer_closed: self.peer_closed,
        }
    }
}

/// Drives rustls's handshake over `incoming[*off..]`, advancing `off` past what it used; once it
/// is complete, seals `request` (if any) with rustls before the keys are handed over.
fn handshake(
    conn: &mut UnbufferedClientConnection,
    incoming: &mut [u8],
    outgoing: &mut Vec<u8>,
    request: &mut Vec<u8>,
    sink: &mut dyn PlainSink,
    off: &mut usize,
    peer_closed: &mut bool,
) -> Result<Handshaking, TlsError> {
    loop {
        let status = conn.process_tls_records(&mut incoming[*off..]);
        let discard = status.discard;
        let state = match status.state {
            Ok(s) => s,
            Err(e) => return Err(from_rustls(e)),
        };
        match state {
            ConnectionState::ReadTraffic(mut traffic) => {
                // Application data before the handshake's end (a server's 0.5-RTT data).
                let mut full = false;
                loop {
                    let need = traffic.peek_len().map_or(0, |n| n.get());
                    if need > sink.room() {
                        full = true;
                        break;
                    }
                    match traffic.next_record() {
                        None => break,
                        Some(Err(e)) => return Err(from_rustls(e)),
                        Some(Ok(record)) => {
                            *off += record.discard;
                            sink.put(record.payload);
                        }
                    }
                }
                *off += discard;
                if full {
                    return Ok(Handshaking::Wait { sink_full: true });
                }
            }
            ConnectionState::EncodeTlsData(mut enc) => {
                grow_and(
                    outgoing,
                    |buf| enc.encode(buf),
                    |e| match e {
                        EncodeError::InsufficientSize(s) => Some(s.required_size),
                        _ => None,
                    },
                )
                .map_err(|e| TlsError::Protocol(e.to_string()))?;
                *off += discard;
            }
            ConnectionState::TransmitTlsData(tx) => {
                // The records are in `outgoing`, which the caller sends in order before anything
                // written later; rustls only needs to know they are handed over.
                tx.done();
                *off += discard;
            }
            ConnectionState::BlockedHandshake => {
                *off += discard;
                return Ok(Handshaking::Wait { sink_full: false });
            }
            ConnectionState::WriteTraffic(mut w) => {
                *off += discard;
                if request.is_empty() {
                    return Ok(Handshaking::Ready);
                }
                // rustls seals the first request itself: with it goes any answer to a key update
                // it has queued (kept apart from what it reports as unsent).
                grow_and(
                    outgoing,
                    |buf| w.encrypt(request, buf),
                    |e| match e {
                        EncryptError::InsufficientSize(s) => Some(s.required_size),
                        _ => None,
                    },
                )
                .map_err(|e| TlsError::Protocol(e.to_string()))?;
                request.clear();
                // A whole record still here is one rustls has opened and holds part of a
                // handshake message from: the hand-over waits until it has the rest.
                let rest = &incoming[*off..];
                let held = record::header_len(rest).is_some_and(|whole| rest.len() >= whole);
                return Ok(if held {
                    Handshaking::Ready
                } else {
                    Handshaking::Done
                });
            }
            ConnectionState::PeerClosed => {
                *peer_closed = true;
                *off += discard;
            }
            ConnectionState::Closed => {
                *peer_closed = true;
                *off += discard;
                return Ok(Handshaking::Wait { sink_full: false });
            }
            _ => return Err(TlsError::Protocol("unexpected TLS state".to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    struct Collect {
        got: Vec<u8>,
        room: usize,
    }

    impl PlainSink for Collect {
        fn room(&self) -> usize {
            self.room
        }
        fn put(&mut self, data: &[u8]) {
            assert!(
                data.len() <= self.room,
                "record larger than the room it was given"
            );
            self.got.extend_from_slice(data);
        }
    }

    fn server_config(names: &[&str]) -> (Arc<rustls::ServerConfig>, String) {
        let ck = rcgen::generate_simple_self_signed(
            names.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
        .unwrap();
        let key = rustls::pki_types::PrivateKeyDer::try_from(ck.key_pair.serialize_der()).unwrap();
        let cfg = rustls::ServerConfig::builder_with_provider(crypto_provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![ck.cert.der().clone()], key)
            .unwrap();
        (Arc::new(cfg), ck.cert.pem())
    }

    /// Runs client and server in memory until the client has `want` plaintext bytes, an error, or
    /// nothing moves. Returns the client's sink and the request the server read.
    fn exchange(
        client: &TlsConfig,
        host: url::Host<&str>,
        server: Arc<rustls::ServerConfig>,
        body: &[u8],
        room: usize,
    ) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
        let mut session = TlsSession::new(client, &host)?;
        let mut srv = rustls::ServerConnection::new(server).unwrap();
        srv.set_buffer_limit(None);
        let mut incoming = vec![0u8; MIN_INCOMING];
        let mut used = 0;
        let mut out = Vec::new();
        let mut request = b"GET / HTTP/1.1\r\n\r\n".to_vec();
        let mut sink = Collect {
            got: Vec::new(),
            room,
        };
        let mut server_got = Vec::new();
        let mut responded = false;
        let mut s2c = Vec::new();
        for _ in 0..10_000 {
            let step = session.process(&mut incoming[..used], &mut out, &mut request, &mut sink)?;
            incoming.copy_within(step.consumed..used, 0);
            used -= step.consumed;
            if step.sink_full {
                // The caller frees room later; here, simply a little more each time.
                sink.room += 1000;
            }
            if !out.is_empty() {
                srv.read_tls(&mut &out[..]).unwrap();
                out.clear();
                if let Err(e) = srv.process_new_packets() {
                    let _ = srv.write_tls(&mut s2c);
                    let _ = e;
                }
            }
            let mut buf = [0u8; 4096];
            while let Ok(n) = srv.reader().read(&mut buf) {
                if n == 0 {
                    break;
                }
                server_got.extend_from_slice(&buf[..n]);
            }
            if !responded && server_got.ends_with(b"\r\n\r\n") {
                srv.writer().write_all(body).unwrap();
                responded = true;
            }
            while srv.wants_write() {
                srv.write_tls(&mut s2c).unwrap();
            }
            let n = s2c.len().min(incoming.len() - used);
            incoming[used..used + n].copy_from_slice(&s2c[..n]);
            used += n;
            s2c.drain(..n);
            if sink.got.len() >= body.len() && responded {
                break;
            }
        }
        Ok((sink.got, server_got))
    }

    fn client_trusting(pem: &str, verify: bool) -> TlsConfig {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, pem).unwrap();
        TlsConfig::new(Some(&path), verify).unwrap()
    }

    /// A client session and a rustls server in memory, bytes moved between them by `run`.
    struct Pair {
        session: TlsSession,
        srv: rustls::ServerConnection,
        incoming: Vec<u8>,
        used: usize,
        out: Vec<u8>,
        request: Vec<u8>,
        sink: Collect,
        server_got: Vec<u8>,
        s2c: Vec<u8>,
        closed: bool,
        /// The most bytes handed to the client at a time.
        trickle: usize,
    }

    impl Pair {
        fn new(client: &TlsConfig, server: Arc<rustls::ServerConfig>) -> Pair {
            let mut srv = rustls::ServerConnection::new(server).unwrap();
            srv.set_buffer_limit(None);
            Pair {
                session: TlsSession::new(client, &url::Host::Domain("localhost")).unwrap(),
                srv,
                incoming: vec![0u8; MIN_INCOMING],
                used: 0,
                out: Vec::new(),
                request: Vec::new(),
                sink: Collect {
                    got: Vec::new(),
                    room: usize::MAX,
                },
                server_got: Vec::new(),
                s2c: Vec::new(),
                closed: false,
                trickle: usize::MAX,
            }
        }

        /// Moves bytes both ways until nothing moves or the client fails.
        fn run(&mut self) -> Result<(), TlsError> {
            for _ in 0..100_000 {
                if !self.run_once()? {
                    return Ok(());
                }
            }
            panic!("the pair never settled");
        }

        /// One turn of each side; false when nothing moved.
        fn run_once(&mut self) -> Result<bool, TlsError> {
            {
                let step = self.session.process(
                    &mut self.incoming[..self.used],
                    &mut self.out,
                    &mut self.request,
                    &mut self.sink,
                )?;
                self.closed |= step.peer_closed;
                self.incoming.copy_within(step.consumed..self.used, 0);
                self.used -= step.consumed;
                let mut moved = step.consumed > 0;
                if !self.out.is_empty() {
                    // rustls reads a bounded amount at a time.
                    let mut rd = &self.out[..];
                    while !rd.is_empty() {
                        self.srv.read_tls(&mut rd).unwrap();
                        self.srv.process_new_packets().unwrap();
                        self.srv.reader().read_to_end(&mut self.server_got).ok();
                    }
                    self.out.clear();
                    moved = true;
                }
                let mut buf = [0u8; 4096];
                while let Ok(n) = self.srv.reader().read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    self.server_got.extend_from_slice(&buf[..n]);
                    moved = true;
                }
                while self.srv.wants_write() {
                    self.srv.write_tls(&mut self.s2c).unwrap();
                    moved = true;
                }
                let n = self
                    .s2c
                    .len()
                    .min(self.incoming.len() - self.used)
                    .min(self.trickle);
                self.incoming[self.used..self.used + n].copy_from_slice(&self.s2c[..n]);
                self.used += n;
                self.s2c.drain(..n);
                Ok(moved || n > 0)
            }
        }

        /// A first exchange (the client holds "first"), then 5000 bytes more sealed by the server
        /// and waiting in `s2c`, not yet delivered: for a test to change them on the way.
        fn first_then_a_body_on_its_way(&mut self) {
            self.exchange(b"GET / HTTP/1.1\r\n\r\n", b"first");
            self.srv.writer().write_all(&body_of(5000, 9)).unwrap();
            while self.srv.wants_write() {
                self.srv.write_tls(&mut self.s2c).unwrap();
            }
        }

        /// Sends `request`, has the server answer `body`, and checks both ends got theirs.
        fn exchange(&mut self, request: &[u8], body: &[u8]) {
            let (asked, had) = (self.server_got.len(), self.sink.got.len());
            self.request = request.to_vec();
            self.run().unwrap();
            assert!(
                self.server_got[asked..] == *request,
                "the server read {} bytes of a {}-byte request",
                self.server_got.len() - asked,
                request.len()
            );
            self.srv.writer().write_all(body).unwrap();
            self.run().unwrap();
            assert_eq!(self.sink.got.len() - had, body.len());
            assert!(self.sink.got[had..] == *body, "the body arrived changed");
        }
    }

    fn server_with_suite(
        suite: rustls::SupportedCipherSuite,
    ) -> (Arc<rustls::ServerConfig>, String) {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::try_from(ck.key_pair.serialize_der()).unwrap();
        let provider = CryptoProvider {
            cipher_suites: vec![suite],
            ..rustls::crypto::ring::default_provider()
        };
        let mut cfg = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![ck.cert.der().clone()], key)
            .unwrap();
        // For `forging`: its keys can be taken over after the handshake.
        cfg.enable_secret_extraction = true;
        (Arc::new(cfg), ck.cert.pem())
    }

    /// A pair on `suite` past its handshake and a first exchange, whose server's keys are then
    /// taken over by a forger: the records a test puts in `pair.s2c` are what the client gets.
    /// (The server left in the pair is a new one that never speaks.)
    fn forging(suite: rustls::SupportedCipherSuite) -> (Pair, record::Forger) {
        let (srv, pem) = server_with_suite(suite);
        let mut pair = Pair::new(&client_trusting(&pem, true), srv.clone());
        pair.exchange(b"GET / HTTP/1.1\r\n\r\n", b"first");
        let tls13 = pair.srv.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3);
        let quiet = rustls::ServerConnection::new(srv).unwrap();
        let old = std::mem::replace(&mut pair.srv, quiet);
        let secrets = old.dangerous_extract_secrets().unwrap();
        (pair, record::Forger::new(tls13, secrets.tx))
    }

    /// The server's TLS 1.3 application traffic secret, from its key log.
    #[derive(Debug, Default, Clone)]
    struct ServerSecret(Arc<std::sync::Mutex<Vec<u8>>>);

    impl rustls::KeyLog for ServerSecret {
        fn log(&self, label: &str, _client_random: &[u8], secret: &[u8]) {
            if label == "SERVER_TRAFFIC_SECRET_0" {
                if let Ok(mut s) = self.0.lock() {
                    *s = secret.to_vec();
                }
            }
        }
    }

    /// `forging` on TLS 1.3, with the server's traffic secret, so the forger can move to new
    /// keys as a server's key update does.
    fn forging_with_secret(suite: rustls::SupportedCipherSuite) -> (Pair, record::Forger, Vec<u8>) {
        let (srv, pem) = server_with_suite(suite);
        let log = ServerSecret::default();
        let mut cfg = (*srv).clone();
        cfg.key_log = Arc::new(log.clone());
        let cfg = Arc::new(cfg);
        let mut pair = Pair::new(&client_trusting(&pem, true), cfg.clone());
        pair.exchange(b"GET / HTTP/1.1\r\n\r\n", b"first");
        let quiet = rustls::ServerConnection::new(cfg).unwrap();
        let old = std::mem::replace(&mut pair.srv, quiet);
        let secrets = old.dangerous_extract_secrets().unwrap();
        let secret = log.0.lock().unwrap().clone();
        assert!(!secret.is_empty(), "no traffic secret logged");
        (pair, record::Forger::new(true, secrets.tx), secret)
    }

    /// Key updates with no application data between them: 32 are followed, the 33rd refused
    /// (rustls's and BoringSSL's limit), and an empty record between them does not count as data
    /// (it reset the count before, so a server could update its keys without end). With data
    /// between, any number is followed.
    #[test]
    fn key_updates_without_data_between_are_limited_and_empty_records_are_not_data() {
        for suite in ecdsa_suites() {
            if suite.version() != &rustls::version::TLS13 {
                continue;
            }
            let name = format!("{:?}", suite.suite());
            let (mut pair, mut forger, mut secret) = forging_with_secret(suite);
            for i in 0..40u8 {
                let (update, next) = forger.key_update(&secret, false);
                secret = next;
                pair.s2c.extend(update);
                pair.s2c
                    .extend(forger.record(APPLICATION_DATA, &[b'a' + i % 26], 0));
            }
            pair.run().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(pair.sink.got.len(), 5 + 40, "{name}");

            let (mut pair, mut forger, mut secret) = forging_with_secret(suite);
            for _ in 0..32 {
                let (update, next) = forger.key_update(&secret, false);
                secret = next;
                pair.s2c.extend(update);
                pair.s2c.extend(forger.record(APPLICATION_DATA, b"", 0));
            }
            pair.run().unwrap_or_else(|e| panic!("{name}: {e}"));
            let (update, _) = forger.key_update(&secret, false);
            pair.s2c.extend(update);
            let err = pair.run().unwrap_err().to_string();
            assert!(err.contains("too many key updates"), "{name}: {err}");
        }
    }

    /// The suites rcgen's ECDSA key can serve (the RSA suites of TLS 1.2 cannot be): both
    /// versions, AES-GCM and ChaCha20.
    fn ecdsa_suites() -> Vec<rustls::SupportedCipherSuite> {
        rustls::crypto::ring::default_provider()
            .cipher_suites
            .into_iter()
            .filter(|s| !format!("{:?}", s.suite()).contains("_RSA_"))
            .collect()
    }

    const APPLICATION_DATA: u8 = 23;
    const HANDSHAKE: u8 = 22;
    const ALERT: u8 = 21;

    /// The limits rustls keeps in its record layer hold in ours, with its numbers: 32 empty
    /// records in a row (data between resets the count), none of another type than application
    /// data, 4 warning alerts in a connection (TLS 1.3: user_canceled only), one TLS 1.2 hello
    /// request, post-handshake messages of at most 0xffff bytes. Each refused with a line.
    #[test]
    fn the_record_layer_keeps_rustls_limits() {
        for suite in ecdsa_suites() {
            let name = format!("{:?}", suite.suite());
            let tls13 = suite.version() == &rustls::version::TLS13;
            // Empty records: 32 in a row taken, data, 32 more; the 33rd in a row refused.
            let (mut pair, mut forger) = forging(suite);
            for _ in 0..32 {
                pair.s2c.extend(forger.record(APPLICATION_DATA, b"", 0));
            }
            pair.s2c.extend(forger.record(APPLICATION_DATA, b"x", 0));
            for _ in 0..32 {
                pair.s2c.extend(forger.record(APPLICATION_DATA, b"", 0));
            }
            pair.run().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(pair.sink.got, b"firstx", "{name}");
            pair.s2c.extend(forger.record(APPLICATION_DATA, b"", 0));
            let err = pair.run().unwrap_err().to_string();
            assert!(err.contains("too many empty"), "{name}: {err}");
            // An empty record of another type.
            for kind in [HANDSHAKE, ALERT] {
                let (mut pair, mut forger) = forging(suite);
                pair.s2c.extend(forger.record(kind, b"", 0));
                let err = pair.run().unwrap_err().to_string();
                assert!(err.contains("empty"), "{name} {kind}: {err}");
            }
            // Warning alerts: four taken, the fifth refused; on TLS 1.3 only user_canceled is
            // one (any other is fatal there).
            let (mut pair, mut forger) = forging(suite);
            for _ in 0..4 {
                pair.s2c.extend(forger.record(ALERT, &[1, 90], 0));
            }
            pair.s2c.extend(forger.record(APPLICATION_DATA, b"y", 0));
            pair.run().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(pair.sink.got, b"firsty", "{name}");
            pair.s2c.extend(forger.record(ALERT, &[1, 90], 0));
            let err = pair.run().unwrap_err().to_string();
            assert!(err.contains("too many TLS warning"), "{name}: {err}");
            let (mut pair, mut forger) = forging(suite);
            // no_renegotiation, as a warning.
            pair.s2c.extend(forger.record(ALERT, &[1, 100], 0));
            pair.s2c.extend(forger.record(APPLICATION_DATA, b"z", 0));
            match (tls13, pair.run()) {
                (false, Ok(())) => assert_eq!(pair.sink.got, b"firstz", "{name}"),
                (true, Err(e)) => assert!(e.to_string().contains("NoRenegotiation"), "{name}: {e}"),
                (_, other) => panic!("{name}: {other:?}"),
            }
            // A post-handshake message over 0xffff bytes, across records; one of exactly
            // 0xffff is taken whole, and refused for its type (a ServerHello).
            for (len, said) in [(0x1_0000usize, "oversized"), (0xffff, "unexpected")] {
                let (mut pair, mut forger) = forging(suite);
                let mut message = vec![2u8, (len >> 16) as u8, (len >> 8) as u8, len as u8];
                message.resize(4 + len, 7);
                for piece in message.chunks(1 << 14) {
                    pair.s2c.extend(forger.record(HANDSHAKE, piece, 0));
                }
                let err = pair.run().unwrap_err().to_string();
                assert!(err.contains(said), "{name} {len}: {err}");
            }
            if !tls13 {
                // One hello request is ignored (ringdl never renegotiates); a second refused.
                let (mut pair, mut forger) = forging(suite);
                pair.s2c.extend(forger.record(HANDSHAKE, &[0, 0, 0, 0], 0));
                pair.s2c.extend(forger.record(APPLICATION_DATA, b"w", 0));
                pair.run().unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(pair.sink.got, b"firstw", "{name}");
                pair.s2c.extend(forger.record(HANDSHAKE, &[0, 0, 0, 0], 0));
                let err = pair.run().unwrap_err().to_string();
                assert!(err.contains("renegotiate again"), "{name}: {err}");
            } else {
                // The inner plaintext (content, type, padding) is at most 2^14 + 1 bytes.
                let (mut pair, mut forger) = forging(suite);
                pair.s2c
                    .extend(forger.record(APPLICATION_DATA, b"v", (1 << 14) - 1));
                pair.run().unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(pair.sink.got, b"firstv", "{name}");
                pair.s2c
                    .extend(forger.record(APPLICATION_DATA, b"v", 1 << 14));
                let err = pair.run().unwrap_err().to_string();
                assert!(err.contains("longer than TLS allows"), "{name}: {err}");
            }
        }
    }

    /// Many tiny post-handshake messages in one record (TLS 1.3 session tickets of a few bytes
    /// each) are each taken, and the data after them arrives: the messages are read with a
    /// cursor, not drained from the front one by one (work quadratic in their number).
    #[test]
    fn many_tiny_handshake_messages_in_one_record_are_all_taken() {
        let suite = ecdsa_suites()
            .into_iter()
            .find(|s| s.version() == &rustls::version::TLS13)
            .unwrap();
        let (mut pair, mut forger) = forging(suite);
        // NewSessionTicket: lifetime, age_add, an empty nonce, a one-byte ticket, no extensions.
        let ticket = [4u8, 0, 0, 14, 0, 0, 0, 60, 1, 2, 3, 4, 0, 0, 1, 9, 0, 0];
        let record: Vec<u8> = std::iter::repeat_n(ticket, (1 << 14) / ticket.len())
            .flatten()
            .collect();
        for _ in 0..4 {
            pair.s2c.extend(forger.record(HANDSHAKE, &record, 0));
        }
        pair.s2c
            .extend(forger.record(APPLICATION_DATA, b"after", 0));
        pair.run().unwrap();
        assert_eq!(pair.sink.got, b"firstafter");
    }

    fn body_of(len: usize, seed: u32) -> Vec<u8> {
        (0..len as u32)
            .map(|i| (i.wrapping_mul(31).wrapping_add(seed) % 251) as u8)
            .collect()
    }

    #[test]
    fn every_suite_carries_requests_and_responses_on_one_connection() {
        let mut versions = std::collections::BTreeSet::new();
        for suite in ecdsa_suites() {
            let (srv, pem) = server_with_suite(suite);
            let mut pair = Pair::new(&client_trusting(&pem, true), srv);
            // Bodies of several records, of one byte and of none; then a second request, sealed
            // on the same connection.
            pair.exchange(b"GET /1 HTTP/1.1\r\n\r\n", &body_of(100_003, 1));
            pair.exchange(b"GET /2 HTTP/1.1\r\n\r\n", &body_of(1, 2));
            pair.exchange(&body_of(40_000, 3), &body_of(16_384, 4));
            assert_eq!(
                pair.srv.negotiated_cipher_suite(),
                Some(suite),
                "{:?}",
                suite.suite()
            );
            versions.insert(format!("{:?}", suite.version()));
        }
        assert_eq!(
            versions.len(),
            2,
            "both TLS 1.2 and 1.3 were tried: {versions:?}"
        );
    }

    #[test]
    fn key_updates_from_the_server_are_followed_both_ways() {
        let (srv, pem) = server_config(&["localhost"]);
        let mut pair = Pair::new(&client_trusting(&pem, true), srv);
        pair.exchange(b"GET /1 HTTP/1.1\r\n\r\n", &body_of(50_000, 1));
        for round in 0..3 {
            // The server moves to new keys and asks the client to do the same; its next records,
            // and the client's next request, must be under the new keys.
            pair.srv.refresh_traffic_keys().unwrap();
            pair.exchange(
                format!("GET /again{round} HTTP/1.1\r\n\r\n").as_bytes(),
                &body_of(30_000, round + 2),
            );
        }
    }

    #[test]
    fn key_update_requests_are_answered_once_until_data_is_sent_and_not_without_end() {
        let (srv, pem) = server_config(&["localhost"]);
        let mut pair = Pair::new(&client_trusting(&pem, true), srv);
        pair.exchange(b"GET / HTTP/1.1\r\n\r\n", b"first");
        // Five requests for a key update and nothing else: one answer (one 27-byte record).
        for _ in 0..5 {
            pair.srv.refresh_traffic_keys().unwrap();
        }
        while pair.srv.wants_write() {
            pair.srv.write_tls(&mut pair.s2c).unwrap();
        }
        let n = pair.s2c.len();
        pair.incoming[..n].copy_from_slice(&pair.s2c);
        pair.s2c.clear();
        let step = pair
            .session
            .process(
                &mut pair.incoming[..n],
                &mut pair.out,
                &mut pair.request,
                &mut pair.sink,
            )
            .unwrap();
        assert_eq!(step.consumed, n);
        assert_eq!(pair.out.len(), 27, "one answer for five requests");
        pair.used = 0;
        // The keys still agree both ways.
        pair.exchange(b"GET /2 HTTP/1.1\r\n\r\n", &body_of(20_000, 3));
        // A server that sends nothing but key updates is refused.
        for _ in 0..40 {
            pair.srv.refresh_traffic_keys().unwrap();
        }
        let err = pair.run().unwrap_err();
        assert!(err.to_string().contains("too many key updates"), "{err}");
    }

    #[test]
    fn a_key_update_before_the_first_request_is_answered_before_it() {
        let (srv, pem) = server_config(&["localhost"]);
        let mut pair = Pair::new(&client_trusting(&pem, true), srv);
        // The handshake with no request: rustls keeps the records, and answers the server's
        // request for a key update; the answer must go out ahead of the first request.
        pair.run().unwrap();
        pair.srv.refresh_traffic_keys().unwrap();
        pair.run().unwrap();
        pair.exchange(b"GET / HTTP/1.1\r\n\r\n", &body_of(40_000, 1));
        pair.exchange(b"GET /2 HTTP/1.1\r\n\r\n", &body_of(4_000, 2));
    }

    #[test]
    fn tickets_split_over_records_are_whole_before_the_keys_are_handed_over() {
        let (srv, pem) = server_config(&["localhost"]);
        let mut cfg = (*srv).clone();
        // Records of at most 64 bytes: every session ticket spans several.
        cfg.max_fragment_size = Some(64);
        cfg.send_tls13_tickets = 3;
        let client = client_trusting(&pem, true);
        let mut held_seen = 0;
        for trickle in [7, 50, 64 + 22, 200, 333] {
            let mut pair = Pair::new(&client, Arc::new(cfg.clone()));
            // The handshake with no request yet; the tickets come in pieces of `trickle` bytes.
            pair.trickle = trickle;
            for _ in 0..2000 {
                if !pair.run_once().unwrap() {
                    break;
                }
                // A whole record left unconsumed after the handshake is one rustls holds part
                // of a ticket from: the first request is given right then.
                let b = &pair.incoming[..pair.used];
                let whole = record::header_len(b).is_some_and(|n| b.len() >= n);
                if pair.session.handshake_done() && whole {
                    held_seen += 1;
                    break;
                }
            }
            pair.trickle = usize::MAX;
            pair.exchange(b"GET / HTTP/1.1\r\n\r\n", &body_of(30_000, 1));
            pair.exchange(b"GET /2 HTTP/1.1\r\n\r\n", &body_of(3_000, 2));
        }
        assert!(held_seen > 0, "no run had rustls holding part of a ticket");
    }

    #[test]
    fn close_notify_ends_the_stream_and_a_bare_close_does_not() {
        let (srv, pem) = server_config(&["localhost"]);
        let mut pair = Pair::new(&client_trusting(&pem, true), srv);
        pair.exchange(b"GET / HTTP/1.1\r\n\r\n", b"body");
        assert!(!pair.closed);
        pair.srv.send_close_notify();
        pair.run().unwrap();
        assert!(pair.closed);
    }

    /// This side's close_notify, on every suite: the server reads it as a clean close, after
    /// what was sent before it; it is said once, and never after an error (the connection is
    /// broken then, and the peer gets no record sealed with its keys).
    #[test]
    fn our_close_notify_is_a_clean_close_for_the_server_once_and_never_after_an_error() {
        for suite in ecdsa_suites() {
            let (srv, pem) = server_with_suite(suite);
            let mut pair = Pair::new(&client_trusting(&pem, true), srv);
            pair.exchange(b"GET / HTTP/1.1\r\n\r\n", &body_of(20_000, 5));
            let bye = pair.session.close_notify().expect("a close_notify");
            let mut rd = &bye[..];
            while !rd.is_empty() {
                pair.srv.read_tls(&mut rd).unwrap();
            }
            let state = pair.srv.process_new_packets().unwrap();
            assert!(state.peer_has_closed(), "{:?}", suite.suite());
            assert!(pair.session.close_notify().is_none(), "said twice");

            let (srv, pem) = server_with_suite(suite);
            let mut pair = Pair::new(&client_trusting(&pem, true), srv);
            pair.first_then_a_body_on_its_way();
            let at = pair.s2c.len() - 3;
            pair.s2c[at] ^= 1;
            assert!(pair.run().is_err());
            assert!(pair.session.close_notify().is_none(), "after an error");
        }
    }

    #[test]
    fn a_changed_byte_fails_the_record() {
        let (srv, pem) = server_config(&["localhost"]);
        let mut pair = Pair::new(&client_trusting(&pem, true), srv);
        pair.first_then_a_body_on_its_way();
        let at = pair.s2c.len() / 2;
        pair.s2c[at] ^= 1;
        let err = pair.run().unwrap_err();
        assert!(
            err.to_string().contains("integrity"),
            "a changed byte must be refused: {err}"
        );
        assert_eq!(
            pair.sink.got, b"first",
            "nothing of the changed record is delivered"
        );
    }

    /// A TLS 1.2 record whose version bytes were rewritten on the way is refused: they are part
    /// of what its tag authenticates (RFC 5246 6.2.3.3). (Before, the additional data had 3,3
    /// whatever the record said, and such a record was opened.)
    #[test]
    fn a_tls12_record_with_rewritten_version_bytes_is_refused() {
        use rustls::crypto::ring::cipher_suite as cs;
        for suite in [
            cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ] {
            for version in [[3u8, 1], [3, 4], [0xfe, 0xfd]] {
                let (srv, pem) = server_with_suite(suite);
                let mut pair = Pair::new(&client_trusting(&pem, true), srv);
                pair.first_then_a_body_on_its_way();
                assert_eq!(&pair.s2c[..3], &[23, 3, 3], "an application data record");
                pair.s2c[1..3].copy_from_slice(&version);
                let err = pair.run().unwrap_err();
                assert!(
                    err.to_string().contains("version"),
                    "{suite:?} {version:?}: {err}"
                );
                assert_eq!(pair.sink.got, b"first", "{suite:?} {version:?}");
            }
        }
    }

    #[test]
    fn a_second_connection_resumes_with_a_ticket_kept_after_the_handshake() {
        let (srv, pem) = server_config(&["localhost"]);
        let client = client_trusting(&pem, true);
        let mut first = Pair::new(&client, srv.clone());
        first.exchange(b"GET / HTTP/1.1\r\n\r\n", b"one");
        assert_eq!(
            first.srv.protocol_version(),
            Some(rustls::ProtocolVersion::TLSv1_3)
        );
        let mut second = Pair::new(&client, srv);
        second.exchange(b"GET / HTTP/1.1\r\n\r\n", b"two");
        assert_eq!(
            second.srv.handshake_kind(),
            Some(rustls::HandshakeKind::Resumed),
            "the TLS 1.3 ticket the first connection received after its handshake was kept"
        );
    }

    #[test]
    fn handshake_request_and_response_in_memory() {
        let (srv, pem) = server_config(&["localhost"]);
        let client = client_trusting(&pem, true);
        let body: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (got, req) = exchange(
            &client,
            url::Host::Domain("localhost"),
            srv,
            &body,
            usize::MAX,
        )
        .unwrap();
        assert_eq!(req, b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(got, body);
    }

    #[test]
    fn records_wait_for_room() {
        let (srv, pem) = server_config(&["localhost"]);
        let client = client_trusting(&pem, true);
        let body = vec![42u8; 100_000];
        // Room starts below one record; the session holds records back until there is room.
        let (got, _) = exchange(&client, url::Host::Domain("localhost"), srv, &body, 100).unwrap();
        assert_eq!(got, body);
    }

    #[test]
    fn wrong_host_is_a_certificate_error() {
        let (srv, pem) = server_config(&["other.example"]);
        let client = client_trusting(&pem, true);
        let err = exchange(
            &client,
            url::Host::Domain("localhost"),
            srv,
            b"x",
            usize::MAX,
        )
        .unwrap_err();
        assert!(matches!(err, TlsError::Certificate(_)), "{err:?}");
        assert_eq!(
            err.with_host("localhost"),
            "SSL/TLS handshake failure: localhost: its certificate is for another name \
             (--ca-certificate=FILE trusts another authority)"
        );
    }

    #[test]
    fn unchecked_accepts_wrong_host() {
        let (srv, pem) = server_config(&["other.example"]);
        let client = client_trusting(&pem, false);
        let (got, _) = exchange(
            &client,
            url::Host::Domain("localhost"),
            srv,
            b"hello",
            usize::MAX,
        )
        .unwrap();
        assert_eq!(got, b"hello");
    }

    #[test]
    fn unreadable_ca_file_is_a_config_error() {
        let err = TlsConfig::new(Some(Path::new("/nonexistent/ca.pem")), true)
            .err()
            .unwrap();
        assert!(matches!(err, TlsError::Config(_)));
    }
}
