//! SSH for SFTP downloads, as machines without I/O: the transport (version lines, key exchange,
//! AEAD packets opened in place: `transport`), a client session that authenticates, opens a
//! session channel with the `sftp` subsystem and reads one file at offsets with several requests
//! in flight (`sftp`), the user's keys in OpenSSH's file format (`keys`) and the host keys known
//! for a server (`known_hosts`). The engine's driver feeds it the connection's bytes and sends what
//! it gives back (`engine/sftp.rs`).
//!
//! Ours rather than a crate's: the Rust SSH clients either bring an async runtime of their own
//! (russh, thrussh, makiko), do their own socket I/O (libssh2's bindings), or fix a channel
//! window of a thousand bytes (sunset), which no download could live with. The crypto is
//! `ring`'s (already the TLS provider's): X25519 and P-256 key agreement, Ed25519, ECDSA and RSA
//! signatures, AES-GCM and OpenSSH's ChaCha20-Poly1305.
pub mod keys;
pub mod known_hosts;
pub mod sftp;
pub mod transport;
pub mod wire;

pub use sftp::{Event, Login, Session};

/// What went wrong, for the engine to say and to decide whether another try may do better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bytes that are not the protocol, or a step out of order.
    Protocol,
    /// A packet failed its integrity check, or a key could not be made.
    Crypto,
    /// The host key is not the one expected, or its signature is not valid.
    HostKey,
    /// The server refused every way of logging in offered.
    Auth,
    /// The server ended the connection (SSH_MSG_DISCONNECT).
    Disconnected,
    /// The file is not there (SSH_FX_NO_SUCH_FILE).
    NotFound,
    /// The path names a directory.
    NotAFile,
    /// Another SFTP status, or no SFTP subsystem.
    Sftp,
    /// The file ended before the bytes asked for (it shrank), or reads came back short.
    Short,
}

/// A failure and its one-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
