//! What a request says about who is asking: cookies (loaded at the start, kept from every
//! response, saved at the end), credentials (in the URI, `--http-user`, the netrc file) and which
//! origin each may go to, and the answer to a server's 401.
use super::*;
use crate::http::auth::{same_origin, Credentials, Netrc};

/// The run's cookies (`--load-cookies`, then every `Set-Cookie`; `--save-cookies` at the end)
/// and the netrc file's credentials (none with `-n`, or when it is missing or not private).
/// Private to this file: other parts ask for a request's `Cookie` value or hand over a
/// response's cookies.
#[derive(Default)]
pub(super) struct Identity {
    cookies: crate::http::cookies::Jar,
    netrc: Option<Netrc>,
}

impl Identity {
    /// The netrc file's entry an FTP login to `url`'s host may use (its own or the `default`
    /// one), unless `-n`.
    pub(super) fn ftp_netrc(&self, url: &Url, no_netrc: bool) -> Option<&Credentials> {
        // (Asked as every exchange begins, HTTP's too: only FTP's look the host up.)
        let host = url
            .host_str()
            .filter(|_| !no_netrc && matches!(url.scheme(), "ftp" | "ftps" | "ftpes" | "sftp"))?;
        self.netrc.as_ref()?.lookup_or_default(host)
    }

    /// The `Cookie` value for a request to `url`.
    pub(super) fn cookie_header(&self, url: &Url) -> Option<String> {
        self.cookies.header_for(url)
    }

    /// Keeps what a response to a request for `url` set.
    pub(super) fn keep_cookies(&mut self, url: &Url, set_cookies: &[String]) {
        self.cookies.store_response(url, set_cookies);
    }
}

/// Where a request's credentials come from, and whether they wait for a server to ask.
pub(super) struct Offer {
    pub credentials: Credentials,
    /// `--http-auth-challenge`: only after a 401.
    pub on_challenge: bool,
}

impl<R: Reactor<Tag>> Engine<'_, R> {
    /// Reads `--load-cookies` and the netrc file, before anything is sent. A file that cannot be
    /// read is said once and the run goes on without it, as aria2c does.
    pub(super) fn load_credentials(&mut self) {
        if let Some(path) = &self.s.load_cookies {
            match self.identity.cookies.load_file(path) {
                Ok(_) => {}
                // A file that is there but not cookies: say why.
                Err(e) if e.kind() == std::io::ErrorKind::Other => self.console.error(&format!(
                    "Failed to load cookies from {}: {e}",
                    path.display()
                )),
                Err(_) => self
                    .console
                    .error(&format!("Failed to load cookies from {}", path.display())),
            }
        }
        if self.s.download.no_netrc || self.s.netrc_path.as_os_str().is_empty() {
            return;
        }
        match Netrc::load(&self.s.netrc_path) {
            Ok(netrc) => self.identity.netrc = netrc,
            Err(why) => self.console.log(LogLevel::Warn, &why),
        }
    }

    /// Writes `--save-cookies` at the end of the run.
    pub(super) fn save_cookies(&mut self) {
        let Some(path) = &self.s.save_cookies else {
            return;
        };
        if let Err(e) = self.identity.cookies.save_file(path) {
            self.console.error(&format!(
                "Failed to save cookies to {}: {e}",
                path.display()
            ));
        }
    }

    /// The credentials a request for `url`, made for download `dl` through its URI `mirror`, may
    /// carry. Those written in `url` go with it. Those of the download's URI (written in it, or
    /// `--http-user`) go only to that URI's origin: never to another host, port or scheme a
    /// redirect leads to, and never from https down to http. The netrc file's go to the hosts it
    /// names.
    pub(super) fn offer_for(&self, dl: usize, mirror: usize, url: &Url) -> Option<Offer> {
        let d = &self.dls[dl];
        if let Some(credentials) = Credentials::from_url(url) {
            return Some(Offer {
                credentials,
                on_challenge: false,
            });
        }
        if let Some(origin) = d.uris.get(mirror).filter(|o| same_origin(o, url)) {
            if let Some(credentials) = Credentials::from_url(origin) {
                return Some(Offer {
                    credentials,
                    on_challenge: false,
                });
            }
            if let Some(user) = &d.opts.http_user {
                return Some(Offer {
                    credentials: Credentials {
                        user: user.clone(),
                        password: d.opts.http_passwd.clone().unwrap_or_default(),
                    },
                    on_challenge: d.opts.http_auth_challenge,
                });
            }
        }
        if d.opts.no_netrc {
            return None;
        }
        let host = url.host_str()?;
        let credentials = self.identity.netrc.as_ref()?.lookup(host)?.clone();
        Some(Offer {
            credentials,
            on_challenge: d.opts.http_auth_challenge,
        })
    }

    /// The `Authorization` value for this request, if one goes out now.
    pub(super) fn authorization(&self, dl: usize, mirror: usize, url: &Url) -> Option<String> {
        let offer = self.offer_for(dl, mirror, url)?;
        (!offer.on_challenge || self.dls[dl].auth_challenged).then(|| offer.credentials.basic())
    }

    /// A 401 to a request that carried no credentials, when there are some to offer: the same
    /// request goes again with them (`--http-auth-challenge`). False when the 401 is the answer.
    pub(super) fn answer_challenge(&mut self, slot: usize) -> bool {
        let Some(ex) = self.conns[slot].as_ref().and_then(|c| c.ex.as_ref()) else {
            return false;
        };
        if ex.sent_auth || self.offer_for(ex.dl, ex.mirror, &ex.url).is_none() {
            return false;
        }
        let w = ex.again();
        self.dls[w.dl].auth_challenged = true;
        // The 401's body is not wanted; a fresh connection is simpler than skipping it.
        self.close_conn(slot);
        self.open_or_defer(w);
        true
    }
}
