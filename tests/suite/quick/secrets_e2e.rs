//! No secret is written anywhere: every path that copies foreign text into
//! a run (a restart command's stderr, a server's error body, a hook's
//! answer, URL credentials, a secret header, a secret-named variable) is fed
//! the secrets, and the whole run folder, stdout and stderr are searched.
//!
//! The "server" here is a tiny in-test HTTP server that echoes the request's
//! headers into its error bodies: hostile behaviour no real sandbox-agent
//! shows, which is the point.

use crate::support;
use crate::support::fake_http::{self, FakeServer};

use continuity::exit_codes;
use std::path::Path;
use std::process::Output;

const TOKEN: &str = "tok-leak-4711abcdef";
const DEPLOY_TOKEN: &str = "deploy-leak-889900";
const HEADER_SECRET: &str = "hdr-secret-556677";
const HOOK_PASSWORD: &str = "hookpass-998877";
/// base64("hookuser:hookpass-998877"), what Basic auth sends.
const HOOK_BASIC: &str = "aG9va3VzZXI6aG9va3Bhc3MtOTk4ODc3";

/// A server that answers every request by `reply(method, path, head)` and
/// keeps every request head it saw.
struct EchoServer {
    port: u16,
    server: FakeServer,
}

type Reply = fn(&str, &str, &str) -> (u16, &'static str, String);

impl EchoServer {
    fn start(reply: Reply) -> EchoServer {
        let server = FakeServer::start(move |request| {
            let (status, content_type, body) =
                reply(&request.method, &request.target, &request.head);
            fake_http::reply(&format!("{status} X"), content_type, &body)
        });
        EchoServer {
            port: server.port,
            server,
        }
    }

    fn url(&self) -> String {
        self.server.base_url()
    }

    fn seen(&self) -> String {
        let heads: Vec<String> = self.server.requests().into_iter().map(|r| r.head).collect();
        heads.join("\n")
    }
}

/// Health passes; everything else fails with the request's headers in the body.
fn hostile(_method: &str, path: &str, head: &str) -> (u16, &'static str, String) {
    if path == "/v1/health" {
        return (200, "application/json", r#"{"status":"ok"}"#.into());
    }
    let headers = head.replace(['\r', '"', '\\'], " ").replace('\n', " | ");
    if path.starts_with("/restart") {
        // The credentials straddle the 300 characters of body a failure quotes.
        let auth = head
            .lines()
            .find_map(|l| l.strip_prefix("authorization: "))
            .unwrap_or("");
        let padding = "p".repeat(300 - "hook refused: ".len() - "Basic ".len() - 20);
        return (
            500,
            "text/plain",
            format!("hook refused: {padding}{auth} | {headers}"),
        );
    }
    let body = serde_json::json!({
        "type": "urn:sandbox-agent:error:invalid_request",
        "title": "Invalid request",
        "detail": format!("we saw {headers}"),
    });
    (400, "application/problem+json", body.to_string())
}

fn continuity(args: &[&str], env: &[(&str, &str)]) -> Output {
    support::continuity_with(args, env)
}

/// Every byte of every file under `dir`, lossily as text.
fn everything_in(dir: &Path) -> String {
    let mut text = String::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
                text.push('\n');
            }
        }
    }
    text
}

fn output_of(run: &Output) -> String {
    String::from_utf8_lossy(&run.stdout).to_string() + &String::from_utf8_lossy(&run.stderr)
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in [
        TOKEN,
        DEPLOY_TOKEN,
        HEADER_SECRET,
        HOOK_PASSWORD,
        HOOK_BASIC,
    ] {
        assert!(
            !text.contains(secret),
            "{secret} leaked into {what}:\n{text}"
        );
        // Nor half of one, cut off by a message's length limit.
        let half = &secret[..secret.len() / 2];
        assert!(!text.contains(half), "{half}… leaked into {what}:\n{text}");
    }
}

#[test]
fn no_secret_reaches_the_run_folder_or_the_output() {
    let server = EchoServer::start(hostile);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    let port = server.port;
    let config = format!(
        r#"[run]
base_url = "{url}"
token_env = "MY_SA_TOKEN"
timeout_ms = 5000
headers = {{ "x-api-key" = "{HEADER_SECRET}" }}

[targets.cmd]
restart = {{ command = "echo \"curl -H 'Authorization: Bearer $MY_SA_TOKEN' failed, deploy $DEPLOY_TOKEN\" >&2; exit 3" }}
ready = {{ http = "{url}/v1/health" }}

[targets.hook]
restart = {{ http = "http://hookuser:{HOOK_PASSWORD}@127.0.0.1:{port}/restart" }}
ready = {{ http = "{url}/v1/health" }}
"#
    );
    let config_path = dir.path().join("continuity.toml");
    std::fs::write(&config_path, config).unwrap();
    // One scenario restarts first (the command and the hook answer), one
    // talks to the server first (its error bodies answer).
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir(&scenarios).unwrap();
    std::fs::write(
        scenarios.join("restart-first.toml"),
        "name = \"restart-first\"\n[[phase]]\nname = \"restart\"\nstep = \"restart\"\n",
    )
    .unwrap();
    std::fs::write(
        scenarios.join("connect-first.toml"),
        "name = \"connect-first\"\n[[phase]]\nname = \"connect\"\nstep = \"connect\"\nclient = \"c\"\n[[phase]]\nname = \"create\"\nstep = \"create_session\"\nclient = \"c\"\nsession = \"s\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = continuity(
        &[
            "run",
            "--config",
            config_path.to_str().unwrap(),
            "--scenarios-dir",
            scenarios.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[("MY_SA_TOKEN", TOKEN), ("DEPLOY_TOKEN", DEPLOY_TOKEN)],
    );
    support::assert_exit(&run, exit_codes::FAILED);

    // The secrets really went out, so each path had them to copy back.
    let seen = server.seen();
    assert!(seen.contains(&format!("Bearer {TOKEN}")), "{seen}");
    assert!(seen.contains(HEADER_SECRET), "{seen}");
    assert!(seen.contains(HOOK_BASIC), "{seen}");

    let files = everything_in(&out);
    for name in ["report.json", "report.md", "report.txt", "junit.xml"] {
        assert!(out.join(name).is_file(), "{name} written");
    }
    // What was copied back is there, redacted.
    assert!(
        files.contains("curl -H 'Authorization: Bearer [redacted]' failed, deploy [redacted]"),
        "{files}"
    );
    assert!(files.contains("hook refused"), "{files}");
    assert!(
        files.contains("we saw"),
        "the server's error body is quoted: {files}"
    );
    assert_no_secret("the run folder", &files);
    assert_no_secret("stdout and stderr", &output_of(&run));
}

#[test]
fn credentials_in_the_base_url_are_refused_without_being_shown() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[targets.cmd]\nrestart = { command = \"true\" }\n").unwrap();
    let url = format!("http://user:{HOOK_PASSWORD}@127.0.0.1:1/sandbox");
    for (args, env, source) in [
        (vec!["--base-url", url.as_str()], vec![], "--base-url"),
        (vec![], vec![("SA_BASE_URL", url.as_str())], "SA_BASE_URL"),
    ] {
        let mut argv = vec!["run", "--config", config.to_str().unwrap()];
        argv.extend(args);
        let run = continuity(&argv, &env);
        support::assert_exit(&run, exit_codes::USAGE);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(stderr.contains(source), "{stderr}");
        assert!(stderr.contains("user:pass@"), "{stderr}");
        assert_no_secret("stderr", &stderr);
    }
    // In the file: refused with the key and the line, the password not shown.
    std::fs::write(
        &config,
        format!("[run]\nbase_url = \"{url}\"\n[targets.cmd]\nrestart = {{ command = \"true\" }}\n"),
    )
    .unwrap();
    let run = continuity(&["validate", "--config", config.to_str().unwrap()], &[]);
    support::assert_exit(&run, exit_codes::USAGE);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("c.toml:2") && stderr.contains("run.base_url"),
        "{stderr}"
    );
    assert_no_secret("stderr", &stderr);
}

#[test]
fn a_403_reads_as_a_rejected_token() {
    fn forbidden(_: &str, _: &str, _: &str) -> (u16, &'static str, String) {
        (403, "text/plain", "no".into())
    }
    let server = EchoServer::start(forbidden);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[targets.cmd]\nrestart = { command = \"true\" }\n").unwrap();
    let run = continuity(
        &[
            "run",
            "--base-url",
            &server.url(),
            "--config",
            config.to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ],
        &[("SA_TOKEN", TOKEN)],
    );
    support::assert_exit(&run, exit_codes::INCOMPLETE);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("sandbox-agent rejected the token (HTTP 403)"),
        "{stderr}"
    );
    assert!(!stderr.contains("unreachable"), "{stderr}");
    assert_no_secret("stderr", &stderr);
}
