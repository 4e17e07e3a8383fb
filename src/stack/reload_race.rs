//! The `gateway-reload-idle` target: an nginx reload (SIGHUP) that lands
//! while the client holds an idle keep-alive connection to the old worker,
//! and whose close of that connection is still in flight when the client's
//! next request goes out on it. The race a plain `gateway-reload` meets at
//! random, made to happen every time.
//!
//! Why it is a race. On a reload the old worker starts its graceful
//! shutdown and closes its idle keep-alive connections at once
//! (`ngx_close_idle_connections`, right after "gracefully shutting down" in
//! its error log); the requests it is serving finish first. A client whose
//! pool still counts such a connection as open, because the FIN has not
//! reached it or not been read yet, writes its next POST into a connection
//! the server has closed: the request is lost and the client reads the end
//! of the stream instead of a response ("connection closed before message
//! completed" in hyper, "other side closed" in undici). Whether the FIN or
//! the POST comes first is a matter of microseconds, so the plain reload
//! passes or fails by chance.
//!
//! How it is made deterministic. Each restart puts `slow_close` on the
//! gateway hop (clients → nginx) just before the SIGHUP, so the old
//! worker's FIN is held back from the client for [`HOLD`], and the restart
//! is done only once the proxy has held such a close (the old worker did
//! close an idle connection of the client's). The client's next POST then
//! goes out on that connection while the close is in flight, as in the
//! real race; the held FIN reaches the client when the window heals. A
//! client that held no idle connection gives a restart error that says so.

use crate::faults::{parse_toxic, Param};
use crate::targets::{BuiltinTarget, FaultAction, Readiness, RestartAction, Target};
use std::path::PathBuf;
use std::time::Duration;

/// How long the old worker's close is held back from the client: long
/// enough for any client's next request after the restart phase, short of
/// the old worker's `worker_shutdown_timeout` (5 s), whose closes of the
/// connections it was serving then reach the client on time.
pub(crate) const HOLD: Duration = Duration::from_secs(3);

/// The window each restart opens on the gateway hop: the server's FIN
/// held for [`HOLD`] (healing releases it at once).
pub(crate) fn window() -> FaultAction {
    let params = [
        ("delay".to_string(), Param::Int(HOLD.as_millis() as i64)),
        ("stream".to_string(), Param::Text("downstream".into())),
    ];
    FaultAction {
        hop: crate::faults::LocalHop::Gateway.into(),
        toxic: parse_toxic("slow_close", &params).expect("slow_close with a valid delay"),
        hold: HOLD,
    }
}

/// The target: SIGHUP to the nginx master named in `pid_file`, with
/// [`window`] along on the gateway hop's proxy (`gateway_hop`); ready when
/// `health_url` answers. It does not keep open requests: the held close
/// would cut another cell's deferred DELETE on a pooled connection.
pub(crate) fn target(
    pid_file: PathBuf,
    health_url: String,
    gateway_hop: crate::faults::FaultControl,
) -> Target {
    Target::new(
        BuiltinTarget::GatewayReloadIdle,
        RestartAction::Signal {
            pid_file,
            signal: crate::signal::Signal::HUP,
        },
        Readiness::http(health_url),
    )
    .with_window_along(window(), gateway_hop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_holds_the_gateways_fin_shorter_than_the_old_workers_shutdown() {
        let window = window();
        assert_eq!(
            window.describe(),
            "fault: slow_close downstream (delay 3000 ms) on the gateway hop for 3 s"
        );
        let config = include_str!("../../stack/nginx/nginx.conf.template");
        assert!(config.contains("worker_shutdown_timeout 5s;"), "{config}");
        assert!(HOLD < Duration::from_secs(5));
    }
}
