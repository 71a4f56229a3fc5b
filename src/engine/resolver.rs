//! Name resolution off the loop: `getaddrinfo` blocks, so one thread does it and hands answers back
//! through a channel, ringing an eventfd that the ring is reading. Transfers never wait on DNS.
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{mpsc, Arc};
use std::thread;

/// One answer: the token the request carried and the addresses (or the error text).
pub type Answer = (u64, Result<Vec<SocketAddr>, String>);

/// Handle to the resolver thread.
pub struct Resolver {
    requests: Option<mpsc::Sender<(u64, String, u16)>>,
    answers: mpsc::Receiver<Answer>,
    wake: Arc<OwnedFd>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Resolver {
    /// Starts the thread.
    pub fn start() -> std::io::Result<Resolver> {
        let wake = Arc::new(super::sys::eventfd()?);
        let thread_wake = wake.clone();
        let (req_tx, req_rx) = mpsc::channel::<(u64, String, u16)>();
        let (ans_tx, ans_rx) = mpsc::channel::<Answer>();
        let thread = thread::Builder::new()
            .name("resolver".into())
            .spawn(move || {
                for (token, host, port) in req_rx {
                    let result = (host.as_str(), port)
                        .to_socket_addrs()
                        .map(|a| a.collect::<Vec<_>>())
                        .map_err(|e| e.to_string())
                        .and_then(|v| {
                            if v.is_empty() {
                                Err("no address found".to_string())
                            } else {
                                Ok(v)
                            }
                        });
                    if ans_tx.send((token, result)).is_err() {
                        break;
                    }
                    super::sys::eventfd_signal(thread_wake.as_raw_fd());
                }
            })?;
        Ok(Resolver {
            requests: Some(req_tx),
            answers: ans_rx,
            wake,
            thread: Some(thread),
        })
    }

    /// The eventfd the ring should read to learn that answers are waiting.
    pub fn wake_fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }

    /// Asks for `host:port`; the answer comes back with `token`.
    pub fn lookup(&self, token: u64, host: &str, port: u16) {
        if let Some(tx) = &self.requests {
            let _ = tx.send((token, host.to_string(), port));
        }
    }

    /// Answers received so far.
    pub fn answers(&self) -> impl Iterator<Item = Answer> + '_ {
        self.answers.try_iter()
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        // Closing the channel ends the thread after its current lookup. A lookup can hang for the
        // resolver's own timeout, so the thread is not joined; it dies with the process.
        self.requests.take();
        self.thread.take();
    }
}
