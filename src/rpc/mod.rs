//! aria2's RPC interface without I/O: the JSON-RPC envelope (single calls, batches,
//! `system.multicall`, the GET form), the `token:` secret, parameter checks with aria2's messages,
//! and the server side of HTTP and WebSocket. The engine serves the bytes on its ring and answers
//! the methods (`Service`); everything here is a pure function of what arrived.
pub mod http;
pub mod status;
pub mod ws;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// aria2's methods, in the order `system.listMethods` gives them.
pub const METHODS: [&str; 36] = [
    "aria2.addUri",
    "aria2.addTorrent",
    "aria2.getPeers",
    "aria2.addMetalink",
    "aria2.remove",
    "aria2.pause",
    "aria2.forcePause",
    "aria2.pauseAll",
    "aria2.forcePauseAll",
    "aria2.unpause",
    "aria2.unpauseAll",
    "aria2.forceRemove",
    "aria2.changePosition",
    "aria2.tellStatus",
    "aria2.getUris",
    "aria2.getFiles",
    "aria2.getServers",
    "aria2.tellActive",
    "aria2.tellWaiting",
    "aria2.tellStopped",
    "aria2.getOption",
    "aria2.changeUri",
    "aria2.changeOption",
    "aria2.getGlobalOption",
    "aria2.changeGlobalOption",
    "aria2.purgeDownloadResult",
    "aria2.removeDownloadResult",
    "aria2.getVersion",
    "aria2.getSessionInfo",
    "aria2.shutdown",
    "aria2.forceShutdown",
    "aria2.getGlobalStat",
    "aria2.saveSession",
    "system.multicall",
    "system.listMethods",
    "system.listNotifications",
];

/// The notifications, in aria2's order.
pub const NOTIFICATIONS: [&str; 6] = [
    "aria2.onDownloadStart",
    "aria2.onDownloadPause",
    "aria2.onDownloadStop",
    "aria2.onDownloadComplete",
    "aria2.onDownloadError",
    "aria2.onBtDownloadComplete",
];

/// A failed call: aria2's code (1 for anything a method refuses) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    /// A method's refusal: code 1, as every aria2 method error.
    pub fn new(message: impl Into<String>) -> RpcError {
        RpcError {
            code: 1,
            message: message.into(),
        }
    }

    fn envelope(code: i64, message: &str) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("code".into(), Value::from(self.code));
        m.insert("message".into(), Value::from(self.message.clone()));
        Value::Object(m)
    }
}

/// What answers the methods: the engine, or a test double.
pub trait Service {
    /// Runs `method` (a name from `METHODS` or any other string) with `params`, the token already
    /// taken off. Unknown names are the service's to refuse ("No such method").
    fn call(&mut self, method: &str, params: Params) -> Result<Value, RpcError>;
}

/// The secret (`--rpc-secret`), compared in constant time: the SHA-256 of the token sent and of
/// the secret, so neither the time nor the length of the comparison depends on how much matched.
#[derive(Clone, Default)]
pub struct Secret(Option<[u8; 32]>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Secret(set)"
        } else {
            "Secret(none)"
        })
    }
}

impl Secret {
    pub fn new(secret: Option<&str>) -> Secret {
        Secret(secret.map(|s| Sha256::digest(s.as_bytes()).into()))
    }

    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// Whether `token` (what followed `token:`, empty when none was sent) opens the door.
    pub fn admits(&self, token: &str) -> bool {
        let Some(want) = self.0 else { return true };
        let got: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        got.iter()
            .zip(want.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

/// The secret as one request sees it: after the first wrong token, every later call of the same
/// request (a batch, a `system.multicall`) is refused without comparing, so one request tests one
/// guess however many calls it holds (and its answer is held back once).
struct Door<'a> {
    secret: &'a Secret,
    shut: bool,
}

impl Door<'_> {
    fn admits(&mut self, token: &str) -> bool {
        if self.shut {
            return false;
        }
        let ok = self.secret.admits(token);
        self.shut = !ok;
        ok
    }
}

/// A method's positional parameters, read with aria2's checks and messages (indices count after
/// the token).
#[derive(Debug, Clone, Default)]
pub struct Params(pub Vec<Value>);

impl Params {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&Value> {
        self.0.get(i)
    }

    fn wrong_type(i: usize) -> RpcError {
        RpcError::new(format!("The parameter at {i} has wrong type."))
    }

    fn missing(i: usize) -> RpcError {
        RpcError::new(format!("The parameter at {i} is required but missing."))
    }

    /// A string parameter: missing or of another type is an error.
    pub fn string(&self, i: usize) -> Result<&str, RpcError> {
        match self.0.get(i) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(Self::wrong_type(i)),
            None => Err(Self::missing(i)),
        }
    }

    /// An integer parameter (a JSON number; a fraction is cut, as aria2 does), or `None` when
    /// absent.
    pub fn opt_int(&self, i: usize) -> Result<Option<i64>, RpcError> {
        match self.0.get(i) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(Some(
                n.as_i64()
                    .or_else(|| n.as_f64().map(|f| f as i64))
                    .unwrap_or(0),
            )),
            Some(_) => Err(Self::wrong_type(i)),
        }
    }

    /// A required integer parameter.
    pub fn int(&self, i: usize) -> Result<i64, RpcError> {
        self.opt_int(i)?.ok_or_else(|| Self::missing(i))
    }

    /// An array parameter, or `None` when absent.
    pub fn opt_list(&self, i: usize) -> Result<Option<&Vec<Value>>, RpcError> {
        match self.0.get(i) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(_) => Err(Self::wrong_type(i)),
        }
    }

    /// An object parameter, or `None` when absent.
    pub fn opt_dict(&self, i: usize) -> Result<Option<&Map<String, Value>>, RpcError> {
        match self.0.get(i) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(Self::wrong_type(i)),
        }
    }

    /// A required struct parameter.
    pub fn dict(&self, i: usize) -> Result<&Map<String, Value>, RpcError> {
        self.opt_dict(i)?.ok_or_else(|| Self::missing(i))
    }

    /// `keys`: the names a status struct is cut to (absent or empty: all of them). Non-string
    /// members are skipped, as aria2 does.
    pub fn keys(&self, i: usize) -> Result<Vec<String>, RpcError> {
        Ok(self
            .opt_list(i)?
            .map(|l| {
                l.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default())
    }
}

/// An answer to a request body: the JSON to send, the HTTP status aria2 gives it, and whether a
/// call in it was refused for its token (the answer is then held back a second).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub json: Value,
    pub status: u16,
    pub unauthorized: bool,
}

/// The HTTP status of a single response with this error (aria2's mapping).
fn status_of(code: i64) -> u16 {
    match code {
        -32700 | -32602 | -32603 => 500,
        -32601 => 404,
        _ => 400,
    }
}

/// Answers a JSON-RPC request body (one call or a batch).
pub fn answer(body: &[u8], secret: &Secret, svc: &mut dyn Service) -> Answer {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => answer_value(v, secret, svc),
        Err(_) => parse_error(),
    }
}

fn parse_error() -> Answer {
    let e = RpcError::envelope(-32700, "Parse error.");
    Answer {
        json: response(Value::Null, Err(e)),
        status: 500,
        unauthorized: false,
    }
}

/// Answers an already parsed request value.
pub fn answer_value(v: Value, secret: &Secret, svc: &mut dyn Service) -> Answer {
    let door = &mut Door {
        secret,
        shut: false,
    };
    match v {
        Value::Object(call) => {
            let (json, code, unauthorized) = one_call(call, door, svc);
            Answer {
                json,
                status: code.map_or(200, status_of),
                unauthorized,
            }
        }
        Value::Array(calls) => {
            let mut out = Vec::new();
            let mut unauthorized = false;
            for c in calls {
                // Members that are not objects are skipped, as aria2 does.
                if let Value::Object(call) = c {
                    let (json, _, u) = one_call(call, door, svc);
                    unauthorized |= u;
                    out.push(json);
                }
            }
            Answer {
                json: Value::Array(out),
                status: 200,
                unauthorized,
            }
        }
        _ => parse_error(),
    }
}

/// The response object for `id`.
fn response(id: Value, result: Result<Value, RpcError>) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), id);
    m.insert("jsonrpc".into(), Value::from("2.0"));
    match result {
        Ok(v) => m.insert("result".into(), v),
        Err(e) => m.insert("error".into(), e.to_value()),
    };
    Value::Object(m)
}

/// One call: its response, its error code if it failed, and whether it was refused for its token.
fn one_call(
    mut call: Map<String, Value>,
    door: &mut Door,
    svc: &mut dyn Service,
) -> (Value, Option<i64>, bool) {
    let invalid = |id| {
        let e = RpcError::envelope(-32600, "Invalid Request.");
        (response(id, Err(e)), Some(-32600), false)
    };
    let Some(id) = call.remove("id") else {
        return invalid(Value::Null);
    };
    let Some(Value::String(method)) = call.remove("method") else {
        return invalid(id);
    };
    let params = match call.remove("params") {
        None => Vec::new(),
        Some(Value::Array(p)) => p,
        Some(_) => {
            let e = RpcError::envelope(-32602, "Invalid params.");
            return (response(id, Err(e)), Some(-32602), false);
        }
    };
    let (result, unauthorized) = dispatch(&method, params, door, svc);
    let code = result.as_ref().err().map(|e| e.code);
    (response(id, result), code, unauthorized)
}

/// Runs one method with aria2's rules: `system.listMethods` and `system.listNotifications` need no
/// token, `system.multicall` takes one inside each of its calls, and every other method has its
/// leading `token:` parameter taken off (whether or not a secret is set) and checked.
fn dispatch(
    method: &str,
    mut params: Vec<Value>,
    door: &mut Door,
    svc: &mut dyn Service,
) -> (Result<Value, RpcError>, bool) {
    match method {
        "system.listMethods" => (Ok(Value::from(METHODS.to_vec())), false),
        "system.listNotifications" => (Ok(Value::from(NOTIFICATIONS.to_vec())), false),
        "system.multicall" => multicall(params, door, svc),
        _ => {
            let token = match params.first() {
                Some(Value::String(s)) if s.starts_with("token:") => {
                    let t = s["token:".len()..].to_string();
                    params.remove(0);
                    t
                }
                _ => String::new(),
            };
            if !door.admits(&token) {
                return (Err(RpcError::new("Unauthorized")), true);
            }
            (svc.call(method, Params(params)), false)
        }
    }
}

/// `system.multicall([{methodName, params}, ...])`: each result as a one-member array, each
/// failure as its error struct.
fn multicall(
    params: Vec<Value>,
    door: &mut Door,
    svc: &mut dyn Service,
) -> (Result<Value, RpcError>, bool) {
    let p = Params(params);
    let calls = match p.opt_list(0) {
        Ok(Some(l)) => l.clone(),
        Ok(None) => return (Err(Params::missing(0)), false),
        Err(e) => return (Err(e), false),
    };
    let mut out = Vec::new();
    let mut unauthorized = false;
    for c in calls {
        let Value::Object(mut c) = c else {
            out.push(RpcError::new("system.multicall expected struct.").to_value());
            continue;
        };
        let Some(Value::String(name)) = c.remove("methodName") else {
            out.push(RpcError::new("Missing methodName.").to_value());
            continue;
        };
        if name == "system.multicall" {
            out.push(RpcError::new("Recursive system.multicall forbidden.").to_value());
            continue;
        }
        let params = match c.remove("params") {
            Some(Value::Array(p)) => p,
            _ => Vec::new(),
        };
        let (r, u) = dispatch(&name, params, door, svc);
        unauthorized |= u;
        out.push(match r {
            Ok(v) => Value::Array(vec![v]),
            Err(e) => e.to_value(),
        });
    }
    (Ok(Value::Array(out)), unauthorized)
}

/// A request sent as `GET /jsonrpc?method=M&id=I&params=BASE64[&jsoncallback=CB]`: the request
/// value it stands for (a batch when neither `method` nor `id` is given; without `params`, or
/// with an empty one, a call has none, which is `[]`) and the JSONP callback, which wraps the
/// answer whatever it is. `Err` when it does not stand for a request (a batch without `params`,
/// or `params` that are not base64 of JSON), which aria2 answers -32600.
pub fn from_query(query: &str) -> (Result<Value, Answer>, Option<String>) {
    let mut callback = None;
    let request = get_request(query, &mut callback);
    (request, callback)
}

fn get_request(query: &str, callback: &mut Option<String>) -> Result<Value, Answer> {
    use base64::Engine as _;
    let mut method = None;
    let mut id = None;
    let mut params = None;
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "method" => method = Some(v.into_owned()),
            "id" => id = Some(v.into_owned()),
            "params" => params = Some(v.into_owned()).filter(|p| !p.is_empty()),
            "jsoncallback" => *callback = Some(v.into_owned()),
            _ => {}
        }
    }
    let invalid = || Answer {
        json: response(
            Value::Null,
            Err(RpcError::envelope(-32600, "Invalid Request.")),
        ),
        status: 400,
        unauthorized: false,
    };
    let decoded = match params {
        // Form decoding turned '+' into ' '; base64 wants it back.
        Some(p) => base64::engine::general_purpose::STANDARD
            .decode(p.replace(' ', "+").trim_end_matches('\n'))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(Some)
            .ok_or_else(invalid)?,
        None => None,
    };
    if method.is_none() && id.is_none() {
        return decoded.ok_or_else(invalid);
    }
    let mut m = Map::new();
    if let Some(method) = method {
        m.insert("method".into(), Value::from(method));
    }
    if let Some(id) = id {
        m.insert("id".into(), Value::from(id));
    }
    if let Some(params) = decoded {
        m.insert("params".into(), params);
    }
    Ok(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Echoes the method and its parameters, refuses "aria2.fail".
    struct Echo(Vec<String>);
    impl Service for Echo {
        fn call(&mut self, method: &str, params: Params) -> Result<Value, RpcError> {
            self.0.push(method.to_string());
            if method == "aria2.fail" {
                return Err(RpcError::new("nope"));
            }
            Ok(json!({"method": method, "params": params.0}))
        }
    }

    fn ask(body: &str, secret: Option<&str>) -> (Answer, Vec<String>) {
        let mut svc = Echo(Vec::new());
        let a = answer(body.as_bytes(), &Secret::new(secret), &mut svc);
        (a, svc.0)
    }

    #[test]
    fn envelopes_clients_send_are_accepted_and_ids_echoed_with_their_type() {
        // aria2p: no jsonrpc member, id -1. npm aria2: "json-rpc", ids from 0.
        for (body, id) in [
            (r#"{"id":-1,"method":"aria2.x","params":[]}"#, json!(-1)),
            (
                r#"{"json-rpc":"2.0","id":0,"method":"aria2.x","params":["token:s"]}"#,
                json!(0),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"q1","method":"aria2.x"}"#,
                json!("q1"),
            ),
            (r#"{"id":null,"method":"aria2.x"}"#, json!(null)),
            (r#"{"id":{"a":[1]},"method":"aria2.x"}"#, json!({"a":[1]})),
        ] {
            let (a, _) = ask(body, None);
            assert_eq!(a.status, 200, "{body}");
            assert_eq!(a.json["id"], id);
            assert_eq!(a.json["jsonrpc"], "2.0");
            // The token is taken off even without a secret.
            assert_eq!(a.json["result"]["params"], json!([]), "{body}");
        }
    }

    #[test]
    fn envelope_errors_have_aria2s_codes_and_statuses() {
        let (a, _) = ask("{not json", None);
        assert_eq!((a.status, &a.json["error"]["code"]), (500, &json!(-32700)));
        assert_eq!(a.json["error"]["message"], "Parse error.");
        assert_eq!(a.json["id"], Value::Null);
        let (a, _) = ask("42", None);
        assert_eq!((a.status, &a.json["error"]["code"]), (500, &json!(-32700)));
        let (a, _) = ask(r#"{"method":"aria2.x"}"#, None);
        assert_eq!((a.status, &a.json["error"]["code"]), (400, &json!(-32600)));
        assert_eq!(a.json["error"]["message"], "Invalid Request.");
        let (a, _) = ask(r#"{"id":3,"method":7}"#, None);
        assert_eq!((a.status, &a.json["id"]), (400, &json!(3)));
        let (a, _) = ask(r#"{"id":3,"method":"aria2.x","params":{"a":1}}"#, None);
        assert_eq!((a.status, &a.json["error"]["code"]), (500, &json!(-32602)));
        assert_eq!(a.json["error"]["message"], "Invalid params.");
        let (a, _) = ask(r#"{"id":3,"method":"aria2.fail"}"#, None);
        assert_eq!(a.status, 400);
        assert_eq!(a.json["error"], json!({"code":1,"message":"nope"}));
        // Keys come out sorted, as aria2's.
        let text = serde_json::to_string(&a.json).unwrap();
        assert!(text.starts_with(r#"{"error":"#), "{text}");
    }

    #[test]
    fn one_request_tests_one_guess_however_many_calls_it_holds() {
        // A batch of guesses with the right one last: refused once the first is wrong.
        let guesses: Vec<Value> = ["a", "b", "s"]
            .iter()
            .map(|t| json!({"id": t, "method": "aria2.x", "params": [format!("token:{t}")]}))
            .collect();
        let (a, calls) = ask(&Value::Array(guesses).to_string(), Some("s"));
        assert!(a.unauthorized && calls.is_empty(), "{}", a.json);
        let refused = a.json.as_array().unwrap();
        assert!(refused
            .iter()
            .all(|r| r["error"]["message"] == "Unauthorized"));
        // The same inside system.multicall.
        let body = json!({"id": 1, "method": "system.multicall", "params": [[
            {"methodName": "aria2.x", "params": ["token:a"]},
            {"methodName": "aria2.x", "params": ["token:s"]},
        ]]});
        let (a, calls) = ask(&body.to_string(), Some("s"));
        assert!(a.unauthorized && calls.is_empty(), "{}", a.json);
        // The right token first, then a wrong one: the first call runs.
        let body = json!([
            {"id": 1, "method": "aria2.x", "params": ["token:s"]},
            {"id": 2, "method": "aria2.x", "params": ["token:z"]},
        ]);
        let (a, calls) = ask(&body.to_string(), Some("s"));
        assert!(a.unauthorized && calls.len() == 1, "{}", a.json);
    }

    #[test]
    fn the_secret_is_checked_and_listing_needs_none() {
        let (a, calls) = ask(
            r#"{"id":1,"method":"aria2.x","params":["token:bad"]}"#,
            Some("s"),
        );
        assert_eq!(a.json["error"], json!({"code":1,"message":"Unauthorized"}));
        assert!(a.unauthorized && calls.is_empty());
        let (a, _) = ask(r#"{"id":1,"method":"aria2.x"}"#, Some("s"));
        assert!(a.unauthorized);
        let (a, calls) = ask(
            r#"{"id":1,"method":"aria2.x","params":["token:s",5]}"#,
            Some("s"),
        );
        assert_eq!(a.json["result"]["params"], json!([5]));
        assert_eq!(calls, ["aria2.x"]);
        for m in ["system.listMethods", "system.listNotifications"] {
            let (a, _) = ask(
                &format!(r#"{{"id":1,"method":"{m}","params":["token:x"]}}"#),
                Some("s"),
            );
            assert!(a.json["result"].is_array() && !a.unauthorized, "{m}");
        }
        let (a, _) = ask(r#"{"id":1,"method":"system.listMethods"}"#, None);
        assert_eq!(a.json["result"].as_array().unwrap().len(), 36);
        assert!(Secret::new(Some("abc")).admits("abc"));
        assert!(!Secret::new(Some("abc")).admits("abd"));
        assert!(!Secret::new(Some("abc")).admits(""));
        assert!(Secret::new(None).admits("anything"));
    }

    #[test]
    fn batches_and_multicall() {
        let (a, _) = ask(
            r#"[{"id":1,"method":"aria2.x"},5,{"method":"aria2.y"},{"id":2,"method":"aria2.fail"}]"#,
            None,
        );
        assert_eq!(a.status, 200);
        let out = a.json.as_array().unwrap();
        assert_eq!(out.len(), 3, "the non-object member is skipped");
        assert_eq!(out[1]["error"]["code"], -32600);
        assert_eq!(out[2]["error"]["message"], "nope");
        assert_eq!(ask("[]", None).0.json, json!([]));

        let (a, calls) = ask(
            r#"{"id":9,"method":"system.multicall","params":[[
                {"methodName":"aria2.x","params":["token:s",1]},
                {"methodName":"aria2.fail","params":["token:s"]},
                {"methodName":"aria2.x","params":["token:bad"]},
                {"methodName":"system.multicall","params":[]},
                {"params":[]},
                7,
                {"methodName":"system.listMethods"}
            ]]}"#,
            Some("s"),
        );
        let r = a.json["result"].as_array().unwrap();
        assert_eq!(r[0], json!([{"method":"aria2.x","params":[1]}]));
        assert_eq!(r[1], json!({"code":1,"message":"nope"}));
        assert_eq!(r[2], json!({"code":1,"message":"Unauthorized"}));
        assert_eq!(r[3]["message"], "Recursive system.multicall forbidden.");
        assert_eq!(r[4]["message"], "Missing methodName.");
        assert_eq!(r[5]["message"], "system.multicall expected struct.");
        assert_eq!(r[6][0].as_array().unwrap().len(), 36);
        assert!(
            a.unauthorized,
            "one refused call holds the whole answer back"
        );
        assert_eq!(calls, ["aria2.x", "aria2.fail"]);
        // A token at the top level is the first parameter, which must be the list.
        let (a, _) = ask(
            r#"{"id":9,"method":"system.multicall","params":["token:s",[]]}"#,
            Some("s"),
        );
        assert_eq!(
            a.json["error"]["message"],
            "The parameter at 0 has wrong type."
        );
    }

    #[test]
    fn the_get_form_decodes_to_a_call_or_a_batch() {
        use base64::Engine as _;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let p = b64(r#"["token:s",[">>>"]]"#);
        let q = format!(
            "method=aria2.x&id=7&params={}&jsoncallback=cb",
            percent_encoding::utf8_percent_encode(&p, percent_encoding::NON_ALPHANUMERIC)
        );
        let (v, cb) = from_query(&q);
        assert_eq!(
            v.unwrap(),
            json!({"method":"aria2.x","id":"7","params":["token:s",[">>>"]]})
        );
        assert_eq!(cb.as_deref(), Some("cb"));
        // '+' in unescaped base64 survives form decoding.
        let plus = b64(r#"[">>>?"]"#);
        assert!(plus.contains('+') || plus.contains('/'));
        let (v, _) = from_query(&format!("method=m&id=1&params={plus}"));
        assert_eq!(v.unwrap()["params"], json!([">>>?"]));
        let (v, cb) = from_query(&format!("params={}", b64(r#"[{"id":1}]"#)));
        assert_eq!((v.unwrap(), cb), (json!([{"id":1}]), None));
        // A call without params (or with empty ones) has none, as in aria2.
        for q in ["method=m&id=1", "method=m&id=1&params="] {
            assert_eq!(from_query(q).0.unwrap(), json!({"method":"m","id":"1"}));
        }
        // What stands for no request is aria2's -32600, the callback kept to wrap it.
        for q in [
            "jsoncallback=cb",
            "method=m&id=1&params=!!&jsoncallback=cb",
            &format!("method=m&id=1&params={}&jsoncallback=cb", b64("{nope")),
        ] {
            let (v, cb) = from_query(q);
            let e = v.unwrap_err();
            assert_eq!(
                (e.status, &e.json["error"]["code"]),
                (400, &json!(-32600)),
                "{q}"
            );
            assert_eq!(cb.as_deref(), Some("cb"), "{q}");
        }
    }

    #[test]
    fn parameters_are_checked_with_aria2s_messages() {
        let p = Params(vec![json!("a"), json!(1.5), json!(true), json!([1, "k"])]);
        assert_eq!(p.string(0).unwrap(), "a");
        assert_eq!(p.int(1).unwrap(), 1);
        assert_eq!(
            p.int(2).unwrap_err().message,
            "The parameter at 2 has wrong type."
        );
        assert_eq!(
            p.string(9).unwrap_err().message,
            "The parameter at 9 is required but missing."
        );
        assert_eq!(p.keys(3).unwrap(), ["k"]);
        assert_eq!(p.keys(7).unwrap(), Vec::<String>::new());
        assert!(p.opt_dict(0).is_err());
    }
}
