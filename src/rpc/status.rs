//! The status struct of `tellStatus`, `tellActive`, `tellWaiting` and `tellStopped`, and the
//! `files`/`uris` lists, as aria2 lays them out: every number a string, keys sorted, `errorCode`
//! and `errorMessage` only for stopped downloads, `keys` cutting the struct down.
use serde_json::{Map, Value};

/// A download's state as aria2 names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Active,
    Waiting,
    Paused,
    Complete,
    Error,
    Removed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Waiting => "waiting",
            Status::Paused => "paused",
            Status::Complete => "complete",
            Status::Error => "error",
            Status::Removed => "removed",
        }
    }
}

/// A URI's state in `getUris` and `files[].uris`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UriState {
    Used,
    Waiting,
}

/// What is known of one download, whatever its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusView {
    pub gid: u64,
    pub status: Status,
    pub total: u64,
    pub completed: u64,
    /// Bytes per second.
    pub speed: u64,
    pub connections: u64,
    pub dir: String,
    /// The file's path (empty until it is named).
    pub path: String,
    pub uris: Vec<(String, UriState)>,
    pub piece_length: u64,
    /// Hex, one bit per piece, once the length is known.
    pub bitfield: Option<String>,
    /// For stopped downloads: the exit code and message.
    pub error: Option<(u8, String)>,
    /// Made from a Metalink this download fetched (`following`), and the downloads a Metalink
    /// it fetched became (`followedBy`).
    pub following: Option<u64>,
    pub followed_by: Vec<u64>,
}

fn s(v: impl ToString) -> Value {
    Value::String(v.to_string())
}

impl StatusView {
    /// `getUris`.
    pub fn uris_json(&self) -> Value {
        Value::Array(
            self.uris
                .iter()
                .map(|(u, st)| {
                    let mut m = Map::new();
                    m.insert(
                        "status".into(),
                        s(match st {
                            UriState::Used => "used",
                            UriState::Waiting => "waiting",
                        }),
                    );
                    m.insert("uri".into(), s(u));
                    Value::Object(m)
                })
                .collect(),
        )
    }

    /// `getFiles`: one file.
    pub fn files_json(&self) -> Value {
        let mut f = Map::new();
        f.insert("completedLength".into(), s(self.completed));
        f.insert("index".into(), s(1));
        f.insert("length".into(), s(self.total));
        f.insert("path".into(), s(&self.path));
        f.insert("selected".into(), s("true"));
        f.insert("uris".into(), self.uris_json());
        Value::Array(vec![Value::Object(f)])
    }

    /// The status struct, cut to `keys` when any are given.
    pub fn to_json(&self, keys: &[String]) -> Value {
        let stopped = self.error.is_some();
        let mut m = Map::new();
        let want = |k: &str| keys.is_empty() || keys.iter().any(|x| x == k);
        let mut put = |k: &str, v: &dyn Fn() -> Value| {
            if want(k) {
                m.insert(k.to_string(), v());
            }
        };
        if let Some(b) = &self.bitfield {
            put("bitfield", &|| s(b));
        }
        put("completedLength", &|| s(self.completed));
        put("connections", &|| {
            s(if stopped { 0 } else { self.connections })
        });
        put("dir", &|| s(&self.dir));
        put("downloadSpeed", &|| s(if stopped { 0 } else { self.speed }));
        if let Some((code, msg)) = &self.error {
            put("errorCode", &|| s(code));
            put("errorMessage", &|| s(msg));
        }
        put("files", &|| self.files_json());
        if !self.followed_by.is_empty() {
            put("followedBy", &|| {
                Value::Array(
                    self.followed_by
                        .iter()
                        .map(|g| s(format!("{g:016x}")))
                        .collect(),
                )
            });
        }
        if let Some(g) = self.following {
            put("following", &|| s(format!("{g:016x}")));
        }
        put("gid", &|| s(format!("{:016x}", self.gid)));
        put("numPieces", &|| {
            s(self.total.div_ceil(self.piece_length.max(1)))
        });
        put("pieceLength", &|| s(self.piece_length));
        put("status", &|| s(self.status.as_str()));
        put("totalLength", &|| s(self.total));
        put("uploadLength", &|| s(0));
        put("uploadSpeed", &|| s(0));
        Value::Object(m)
    }
}

/// aria2's `bitfield`: one bit per piece of `piece_length` bytes (the last one may be short), set
/// when `done` says the piece's bytes are all on disk, first piece in the highest bit, in hex
/// padded to whole bytes. None while the length is unknown (aria2 leaves the key out then).
pub fn bitfield(total: u64, piece_length: u64, done: impl Fn(u64, u64) -> bool) -> Option<String> {
    if total == 0 {
        return None;
    }
    let piece = piece_length.max(1);
    let pieces = total.div_ceil(piece);
    let mut bits = vec![0u8; usize::try_from(pieces.div_ceil(8)).ok()?];
    for p in 0..pieces {
        if done(p * piece, ((p + 1) * piece).min(total)) {
            bits[(p / 8) as usize] |= 0x80 >> (p % 8);
        }
    }
    Some(bits.iter().map(|b| format!("{b:02x}")).collect())
}

/// `tellWaiting`/`tellStopped`'s window over `len` items: which indices, in the order returned.
/// A negative offset counts from the end and gives the items last first (aria2's rules).
pub fn page(len: usize, offset: i64, num: usize) -> Vec<usize> {
    let len_i = len as i64;
    if offset < 0 {
        let end = offset + len_i;
        if end < 0 || num == 0 {
            return Vec::new();
        }
        let start = (end - (num as i64 - 1)).max(0);
        (start..=end).rev().map(|i| i as usize).collect()
    } else if offset >= len_i {
        Vec::new()
    } else {
        let end = len.min(offset as usize + num);
        (offset as usize..end).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view() -> StatusView {
        StatusView {
            gid: 0x53b146bdc814cb1e,
            status: Status::Active,
            total: 20_000_000,
            completed: 933_888,
            speed: 268_667,
            connections: 1,
            dir: "/srv/dl".into(),
            path: "/srv/dl/big.bin".into(),
            uris: vec![
                ("http://h/big.bin".into(), UriState::Used),
                ("http://h/big.bin?mirror".into(), UriState::Waiting),
            ],
            piece_length: 1 << 20,
            bitfield: Some("000000".into()),
            error: None,
            following: None,
            followed_by: Vec::new(),
        }
    }

    #[test]
    fn an_active_download_has_aria2s_keys_all_strings() {
        let v = view().to_json(&[]);
        assert_eq!(
            v,
            json!({"bitfield":"000000","completedLength":"933888","connections":"1",
                "dir":"/srv/dl","downloadSpeed":"268667",
                "files":[{"completedLength":"933888","index":"1","length":"20000000",
                    "path":"/srv/dl/big.bin","selected":"true",
                    "uris":[{"status":"used","uri":"http://h/big.bin"},
                            {"status":"waiting","uri":"http://h/big.bin?mirror"}]}],
                "gid":"53b146bdc814cb1e","numPieces":"20","pieceLength":"1048576",
                "status":"active","totalLength":"20000000","uploadLength":"0","uploadSpeed":"0"})
        );
    }

    #[test]
    fn stopped_downloads_say_why_and_keys_cut_the_struct() {
        let mut v = view();
        v.status = Status::Error;
        v.error = Some((3, "Resource not found".into()));
        let j = v.to_json(&[]);
        assert_eq!(j["errorCode"], "3");
        assert_eq!(j["errorMessage"], "Resource not found");
        assert_eq!(
            (&j["downloadSpeed"], &j["connections"]),
            (&json!("0"), &json!("0"))
        );
        let keys = vec!["gid".to_string(), "status".into(), "nonsense".into()];
        assert_eq!(
            v.to_json(&keys),
            json!({"gid":"53b146bdc814cb1e","status":"error"})
        );
        assert!(view().to_json(&keys).get("errorCode").is_none());
    }

    #[test]
    fn the_bitfield_is_aria2s_hex_first_piece_highest() {
        assert_eq!(bitfield(0, 1 << 20, |_, _| true), None);
        assert_eq!(
            bitfield(70_000, 1 << 20, |_, _| true).as_deref(),
            Some("80")
        );
        assert_eq!(
            bitfield(2 << 20, 1 << 20, |_, _| false).as_deref(),
            Some("00")
        );
        // Nine pieces, the last one short; the first and the last on disk.
        let total = 8 * 100 + 40;
        let b = bitfield(total, 100, |a, b| a == 0 || (a, b) == (800, total));
        assert_eq!(b.as_deref(), Some("8080"));
    }

    #[test]
    fn pages_follow_aria2() {
        assert_eq!(page(5, 0, 3), [0, 1, 2]);
        assert_eq!(page(5, 3, 10), [3, 4]);
        assert_eq!(page(5, 5, 1), Vec::<usize>::new());
        assert_eq!(page(5, -1, 2), [4, 3]);
        assert_eq!(page(5, -1, 1000), [4, 3, 2, 1, 0]);
        assert_eq!(page(5, -2, 2), [3, 2]);
        assert_eq!(page(5, -6, 2), Vec::<usize>::new());
        assert_eq!(page(0, -1, 1000), Vec::<usize>::new());
        assert_eq!(page(5, 0, 0), Vec::<usize>::new());
    }
}
