//! The sandbox's own state over REST, besides sessions: files (`/v1/fs/file`,
//! `/v1/fs/entry`) and long-running processes (`/v1/processes`, their logs,
//! kill and delete), as `sandbox-agent@0.4.2` serves them. Errors are the
//! client layer's, so a 404 after a restart gets the same signature as any
//! other HTTP failure.

use super::rest::auth_headers;
use super::{Client, ClientError};
use crate::acp::{AcpError, Problem};
use crate::trace::{Exchange, Purpose};
use reqwest::Method;
use serde_json::{json, Value};

/// What `spawn_process` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessSpec {
    pub command: String,
    pub args: Vec<String>,
    /// A PTY (needed for the terminal WebSocket); stdin stays open either way.
    pub tty: bool,
    /// Extra environment (the harness marks its processes with it).
    pub env: Vec<(String, String)>,
}

/// A process as `GET /v1/processes/{id}` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessInfo {
    pub id: String,
    /// `running` or `exited`.
    pub status: String,
    pub exit_code: Option<i64>,
    pub pid: Option<i64>,
}

impl ProcessInfo {
    fn from_json(value: &Value) -> Result<Self, ClientError> {
        let field = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_string);
        match (field("id"), field("status")) {
            (Some(id), Some(status)) => Ok(ProcessInfo {
                id,
                status,
                exit_code: value.get("exitCode").and_then(Value::as_i64),
                pid: value.get("pid").and_then(Value::as_i64),
            }),
            _ => Err(ClientError::UnexpectedResult {
                method: "processes".into(),
                detail: format!("no id/status in {}", truncate(&value.to_string())),
            }),
        }
    }
}

/// One retained log entry, decoded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogEntry {
    pub sequence: i64,
    pub data: Vec<u8>,
}

impl Client {
    async fn sandbox_request(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<reqwest::Body>,
        json_body: Option<Value>,
    ) -> Result<bytes::Bytes, ClientError> {
        let mut url = format!("{}{path}", self.options.base_url);
        if !query.is_empty() {
            let encoded = url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(query)
                .finish();
            url = format!("{url}?{encoded}");
        }
        let mut request = self
            .http
            .request(method.clone(), &url)
            .headers(auth_headers(&self.headers, self.options.token.as_ref()));
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
                .body(body);
        }
        if let Some(value) = json_body {
            request = request.json(&value);
        }
        let started = std::time::Instant::now();
        let purpose = match path.starts_with("/v1/fs") {
            true => Purpose::Fs,
            false => Purpose::Process,
        };
        let mut record = Exchange::new(method_name(&method), url.clone(), purpose);
        let outcome = async {
            let response = request
                .send()
                .await
                .map_err(|e| AcpError::from_reqwest(&url, &e, crate::http::CONNECT_TIMEOUT))?;
            let status = response.status().as_u16();
            record.status = Some(status);
            let body = response
                .bytes()
                .await
                .map_err(|e| AcpError::from_reqwest(&url, &e, crate::http::CONNECT_TIMEOUT))?;
            record.received = body.len() as u64;
            if !(200..300).contains(&status) {
                return Err(AcpError::Http {
                    status,
                    problem: Problem::parse(&body),
                });
            }
            Ok(body)
        }
        .await;
        // The sandbox API's answers are the server's time too: in the trace,
        // they count in the cell's floor and show in its timeline.
        record.elapsed = started.elapsed();
        record.failure = outcome.as_ref().err().map(AcpError::seen);
        self.options.trace.http(record);
        outcome.map_err(ClientError::Acp)
    }

    async fn sandbox_json(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        json_body: Option<Value>,
    ) -> Result<Value, ClientError> {
        let body = self
            .sandbox_request(method, path, query, None, json_body)
            .await?;
        if body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&body).map_err(|e| ClientError::UnexpectedResult {
            method: path.into(),
            detail: e.to_string(),
        })
    }

    /// `PUT /v1/fs/file?path=…` (the server makes missing parent folders).
    pub(crate) async fn write_file(&self, path: &str, content: Vec<u8>) -> Result<(), ClientError> {
        self.sandbox_request(
            Method::PUT,
            "/v1/fs/file",
            &[("path", path)],
            Some(content.into()),
            None,
        )
        .await
        .map(drop)
    }

    /// `GET /v1/fs/file?path=…`: the file's bytes. 0.4.2 answers a missing file with 400.
    pub(crate) async fn read_file(&self, path: &str) -> Result<Vec<u8>, ClientError> {
        self.sandbox_request(Method::GET, "/v1/fs/file", &[("path", path)], None, None)
            .await
            .map(|b| b.to_vec())
    }

    /// `DELETE /v1/fs/entry?path=…&recursive=true`.
    pub(crate) async fn delete_entry(&self, path: &str) -> Result<(), ClientError> {
        self.sandbox_json(
            Method::DELETE,
            "/v1/fs/entry",
            &[("path", path), ("recursive", "true")],
            None,
        )
        .await
        .map(drop)
    }

    /// `POST /v1/processes`: starts a long-running process.
    pub async fn create_process(&self, spec: &ProcessSpec) -> Result<ProcessInfo, ClientError> {
        let env: serde_json::Map<String, Value> = spec
            .env
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        let body = json!({
            "command": spec.command,
            "args": spec.args,
            "tty": spec.tty,
            "interactive": true,
            "env": env,
        });
        let value = self
            .sandbox_json(Method::POST, "/v1/processes", &[], Some(body))
            .await?;
        ProcessInfo::from_json(&value)
    }

    /// `POST /v1/processes/run` with arguments: a one-off command in the sandbox.
    pub(crate) async fn run_command(
        &self,
        command: &str,
        args: &[&str],
        timeout_ms: u64,
    ) -> Result<Value, ClientError> {
        let body = json!({"command": command, "args": args, "timeoutMs": timeout_ms});
        self.sandbox_json(Method::POST, "/v1/processes/run", &[], Some(body))
            .await
    }

    /// `GET /v1/processes/{id}`.
    pub(crate) async fn get_process(&self, id: &str) -> Result<ProcessInfo, ClientError> {
        let value = self
            .sandbox_json(Method::GET, &process_path(id, ""), &[], None)
            .await?;
        ProcessInfo::from_json(&value)
    }

    /// `GET /v1/processes`: the ids the server lists.
    pub async fn list_process_ids(&self) -> Result<Vec<String>, ClientError> {
        let value = self
            .sandbox_json(Method::GET, "/v1/processes", &[], None)
            .await?;
        let Some(items) = value.get("processes").and_then(Value::as_array) else {
            return Err(ClientError::UnexpectedResult {
                method: "processes".into(),
                detail: format!("no `processes` list in {}", truncate(&value.to_string())),
            });
        };
        Ok(items
            .iter()
            .filter_map(|p| p.get("id").and_then(Value::as_str).map(str::to_string))
            .collect())
    }

    /// `GET /v1/processes/{id}/logs`: every retained entry, base64 decoded.
    pub(crate) async fn process_logs(&self, id: &str) -> Result<Vec<LogEntry>, ClientError> {
        let value = self
            .sandbox_json(Method::GET, &process_path(id, "/logs"), &[], None)
            .await?;
        let entries = value
            .get("entries")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(entries
            .iter()
            .map(|e| LogEntry {
                sequence: e.get("sequence").and_then(Value::as_i64).unwrap_or(0),
                data: decode_entry(e),
            })
            .collect())
    }

    /// `POST /v1/processes/{id}/kill` then `DELETE /v1/processes/{id}`; a 404
    /// on either means there is nothing left to remove.
    pub async fn remove_process(&self, id: &str) -> Result<(), ClientError> {
        let gone = |e: &ClientError| {
            matches!(
                e,
                ClientError::Acp(AcpError::Http {
                    status: 404 | 410,
                    ..
                })
            )
        };
        match self
            .sandbox_json(Method::POST, &process_path(id, "/kill"), &[], None)
            .await
        {
            Err(e) if gone(&e) => return Ok(()),
            // An exited process refuses kill on some versions: delete it anyway.
            _ => {}
        }
        // Kill is asynchronous; the delete of a still-running process is refused.
        // Polled often: each round is a few milliseconds of the server's, and
        // the gap between rounds is pure waiting.
        for _ in 0..100 {
            match self
                .sandbox_request(Method::DELETE, &process_path(id, ""), &[], None, None)
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) if gone(&e) => return Ok(()),
                Err(ClientError::Acp(AcpError::Http { status: 409, .. })) => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await
                }
                Err(e) => return Err(e),
            }
        }
        self.sandbox_request(Method::DELETE, &process_path(id, ""), &[], None, None)
            .await
            .map(drop)
    }
}

/// A request method as the trace writes it.
fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        _ => "OTHER",
    }
}

fn process_path(id: &str, tail: &str) -> String {
    let id: String = url::form_urlencoded::byte_serialize(id.as_bytes()).collect();
    format!("/v1/processes/{id}{tail}")
}

fn decode_entry(entry: &Value) -> Vec<u8> {
    let data = entry.get("data").and_then(Value::as_str).unwrap_or("");
    if entry.get("encoding").and_then(Value::as_str) == Some("base64") {
        base64_decode(data).unwrap_or_else(|| data.as_bytes().to_vec())
    } else {
        data.as_bytes().to_vec()
    }
}

/// Standard base64 with padding; `None` for anything else.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= value(*c)? << (18 - 6 * i);
        }
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
    }
    Some(out)
}

fn truncate(text: &str) -> String {
    text.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_the_servers_log_entries() {
        assert_eq!(base64_decode("c3RhcnQNCg==").unwrap(), b"start\r\n");
        assert_eq!(base64_decode("YQ").unwrap(), b"a");
        assert_eq!(base64_decode("").unwrap(), b"");
        assert_eq!(base64_decode("a$=="), None);
        assert_eq!(base64_decode("abcde"), None);
    }

    #[test]
    fn a_process_without_id_or_status_is_a_protocol_error() {
        let ok =
            ProcessInfo::from_json(&json!({"id": "proc_1", "status": "exited", "exitCode": 0}))
                .unwrap();
        assert_eq!((ok.status.as_str(), ok.exit_code), ("exited", Some(0)));
        assert!(matches!(
            ProcessInfo::from_json(&json!({"id": 3})),
            Err(ClientError::UnexpectedResult { .. })
        ));
    }
}
