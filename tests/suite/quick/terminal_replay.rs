//! A reattach's watch for replayed output (`terminal_reattach`) against
//! in-test terminal servers that do what sandbox-agent 0.4.2 does not:
//! one replays the first line on attach, one answers pings but replays
//! nothing, one never reads the socket again. The watch must say which
//! ended it (`scrollbackWatchEnded`) and keep `scrollbackKept` true only
//! when the line came back; the real server's case is in
//! `real::sandbox_real_server`.

use super::terminal_hostile::accept_upgrade;
use crate::support::cell_settings;
use crate::support::fake_http::read_request;
use continuity::report::Verdict;
use continuity::scenario::{parse_scenario, run_cell, Restarter};
use futures_util::StreamExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// A scenario `name`: connect, spawn `cat` on a tty, attach its terminal
/// `t`, send `text`, then the phases in `tail`.
pub(super) fn cat_terminal_scenario(name: &str, text: &str, tail: &str) -> String {
    format!(
        r#"
name = "{name}"
[[phase]]
name = "connect"
step = "connect"
client = "c"
[[phase]]
name = "spawn"
step = "spawn_process"
client = "c"
process = "p"
command = "cat"
tty = true
[[phase]]
name = "attach"
step = "terminal_attach"
client = "c"
process = "p"
terminal = "t"
[[phase]]
name = "send"
step = "terminal_send"
terminal = "t"
text = "{text}"
{tail}"#
    )
}

/// The scenario's own phase after the shared ones: the reattach.
const REATTACH: &str = r#"[[phase]]
name = "reattach"
step = "terminal_reattach"
client = "c"
terminal = "t"
"#;

/// What the server does on the second attach, after `ready`.
#[derive(Clone, Copy, Debug)]
enum Second {
    /// Sends the first line back, then reads (answering pings).
    Replays,
    /// Reads, answering pings, and sends nothing.
    Answers,
    /// Never reads the socket again: a ping is never answered.
    Silent,
}

/// A terminal server: `POST /v1/processes` starts "p1"; the first upgrade
/// reads and answers pings, the second does `second`; anything else is 404.
async fn terminal_server(second: Second) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let upgrades = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let upgrades = Arc::clone(&upgrades);
            tokio::spawn(serve(socket, second, upgrades));
        }
    });
    base
}

async fn serve(mut socket: TcpStream, second: Second, upgrades: Arc<AtomicUsize>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let head = request.head;
    if head.to_ascii_lowercase().contains("upgrade: websocket") {
        accept_upgrade(&mut socket, &head).await;
        let nth = upgrades.fetch_add(1, Ordering::SeqCst);
        let mut ws = WebSocketStream::from_raw_socket(socket, Role::Server, None).await;
        match (nth, second) {
            (0, _) | (_, Second::Answers) => {}
            (_, Second::Replays) => {
                let _ = futures_util::SinkExt::send(
                    &mut ws,
                    Message::Binary(b"first-line\r\n".to_vec().into()),
                )
                .await;
            }
            (_, Second::Silent) => {
                tokio::time::sleep(Duration::from_secs(10)).await;
                return;
            }
        }
        // Reading is what answers a ping (tungstenite queues the pong).
        while let Some(Ok(_)) = ws.next().await {}
    } else {
        let (status, body) = if head.starts_with("POST /v1/processes HTTP") {
            ("200 OK", r#"{"id":"p1","status":"running","pid":1}"#)
        } else {
            ("404 Not Found", "")
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.write_all(answer.as_bytes()).await;
    }
}

struct NoRestart;

#[async_trait::async_trait]
impl Restarter for NoRestart {
    async fn restart(&mut self, _phase: &str) -> continuity::scenario::Restarted {
        unreachable!("no restart phase here")
    }
}

#[tokio::test]
async fn the_replay_watch_ends_on_the_line_or_the_servers_pong_and_says_which() {
    let scenario = parse_scenario(
        Path::new("replay.toml"),
        &cat_terminal_scenario("replay", "first-line", REATTACH),
    )
    .unwrap();
    let cases = [
        (Second::Replays, true, "firstLine"),
        (Second::Answers, false, "pong"),
        (Second::Silent, false, "bound"),
    ];
    for (second, kept, ended) in cases {
        let base = terminal_server(second).await;
        let settings = cell_settings(base, "replay", Duration::from_secs(3));
        let run = run_cell(&scenario, &settings, &mut NoRestart).await;
        assert_eq!(run.verdict, Verdict::Pass, "{second:?}: {:#?}", run.phases);
        let reattach = run.phases.iter().find(|p| p.name == "reattach").unwrap();
        assert_eq!(reattach.detail["oldSocket"], "open", "{second:?}");
        assert_eq!(
            reattach.detail["scrollbackKept"], kept,
            "{second:?}: {reattach:?}"
        );
        assert_eq!(
            reattach.detail["scrollbackWatchEnded"], ended,
            "{second:?}: {reattach:?}"
        );
    }
}
