//! Readiness probes: how the harness knows a restarted component is back.
//!
//! A probe polls until it passes or its deadline ends; a failure carries the
//! probe's last error ("connection refused", "status 503"), which is usually
//! the whole diagnosis. HTTP probes overlap their attempts ([`hedge`]),
//! since a server may hold a request rather than refuse it.
//!
//! Over 400 lines on purpose: the probe kinds share one attempt loop and
//! one record of what each attempt saw (`LastSeen`, the failure's cause),
//! which HTTP and TCP polling both feed; the command probe and the hedge
//! are apart (`readiness/`).

mod command;
mod hedge;

use super::{fmt_duration, DEFAULT_PROBE_INTERVAL};
use crate::errors::error_chain;
use crate::secret::{display_url, Secret};
use crate::trace::event::{self, Event};
use crate::trace::Trace;
use hedge::{Ended, Finished};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// What one probe attempt saw instead of the status it expects.
#[derive(Debug, thiserror::Error)]
pub(super) enum AttemptError {
    #[error("connect {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    /// The request failed (the chain on one line: reqwest hides the cause).
    #[error("{}", error_chain(.0))]
    Http(#[source] reqwest::Error),
    #[error("status {0}")]
    Status(u16),
    #[error("no answer within {}", fmt_duration(*.0))]
    NoAnswer(Duration),
}

/// One readiness attempt in the cell's trace: `attempt` is the order it
/// started in, `took` how long it was in flight.
fn probe_event(trace: &Trace, attempt: u32, target: &str, took: Duration, seen: Seen<'_>) {
    let (status, error) = match seen {
        Seen::Connected => (None, None),
        Seen::Status(status) => (Some(status), None),
        Seen::Error(error) => (None, Some(error.to_string())),
    };
    trace.emit(Event::ReadyProbe(event::ReadyProbe {
        attempt,
        probe: display_url(target),
        ms: took.as_millis() as u64,
        status,
        error,
    }));
}

/// What one attempt saw.
#[derive(Clone, Copy)]
enum Seen<'a> {
    /// A TCP connect succeeded.
    Connected,
    Status(u16),
    Error(&'a str),
}

/// How long one TCP connect attempt may take before the next try.
const TCP_ATTEMPT: Duration = Duration::from_secs(2);

/// How to tell that a component is ready again.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Readiness {
    /// `GET url` until it answers `expect_status`.
    Http {
        url: String,
        expect_status: u16,
        interval: Duration,
    },
    /// `POST body` (JSON) with `headers` until it answers `expect_status`:
    /// for components whose readiness is an operation, not a page (an actor action).
    HttpPost {
        url: String,
        body: String,
        headers: Vec<(String, String)>,
        expect_status: u16,
        interval: Duration,
    },
    /// A TCP connect to `host:port` succeeds.
    Tcp { addr: String },
    /// `program args…` exits 0: for a server whose readiness its own
    /// client tool knows best (`pg_isready`: Postgres listens before it
    /// takes queries, and answers "the database system is starting up").
    Command {
        program: std::path::PathBuf,
        args: Vec<String>,
        interval: Duration,
    },
    /// Wait a fixed time (what the seed script did: `sleep $SA_RESTART_WAIT_SEC`).
    Delay { duration: Duration },
    /// Ready as soon as the restart action returns.
    None,
}

/// What an HTTP probe of the server under test sends to be let in: the
/// bearer token and the run's extra headers, to URLs under the run's base
/// URL only (same scheme, host and port, path below the base path), so the
/// token never goes to another service.
#[derive(Clone, Default)]
pub(crate) struct ProbeAuth {
    base: Option<url::Url>,
    token: Option<Secret>,
    headers: Vec<(String, String)>,
}

impl std::fmt::Debug for ProbeAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeAuth")
            .field("base", &self.base.as_ref().map(|u| display_url(u.as_str())))
            .field("token", &self.token)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ProbeAuth {
    pub(crate) fn new(
        base_url: &str,
        token: Option<&Secret>,
        headers: &[(String, String)],
    ) -> Self {
        Self {
            base: url::Url::parse(base_url).ok(),
            token: token.cloned(),
            headers: headers.to_vec(),
        }
    }

    /// Whether `url` is the server under test.
    fn covers(&self, url: &str) -> bool {
        let (Some(base), Ok(url)) = (&self.base, url::Url::parse(url)) else {
            return false;
        };
        let base_path = base.path().trim_end_matches('/');
        base.scheme() == url.scheme()
            && base.host_str() == url.host_str()
            && base.port_or_known_default() == url.port_or_known_default()
            && (url.path() == base_path || url.path().starts_with(&format!("{base_path}/")))
    }
}

/// A probe that passed: how long it took, and the last error its earlier
/// attempts saw (none when the first attempt passed).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Ready {
    pub took: Duration,
    pub failed_first: Option<String>,
}

/// A probe that did not pass before its deadline, or that could never pass.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("readiness probe {probe} {} ({attempts} attempts); last error: {last_error}", if *.gave_up { "gave up at once".to_string() } else { format!("did not pass within {}", fmt_duration(*.timeout)) })]
pub struct ProbeError {
    /// The probe as [`Readiness::describe`] puts it.
    pub probe: String,
    pub timeout: Duration,
    pub last_error: String,
    /// What the last failed attempt met, typed: a status, or the transport
    /// error's kind (`refused`, `reset`, `closed`, `no_answer`); `None` for
    /// a command probe, whose failure is its own words.
    pub last_cause: Option<Box<crate::report::Cause>>,
    /// True when waiting could not help (the server refused the credentials).
    pub gave_up: bool,
    /// How many times it polled.
    pub attempts: u32,
}

impl Readiness {
    /// `http GET http://127.0.0.1:2468/v1/health = 200`, `tcp 127.0.0.1:2468`, `delay 6 s`, `none`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Readiness::Http {
                url, expect_status, ..
            } => format!("http GET {} = {expect_status}", display_url(url)),
            Readiness::HttpPost {
                url, expect_status, ..
            } => format!("http POST {} = {expect_status}", display_url(url)),
            Readiness::Tcp { addr } => format!("tcp {addr}"),
            Readiness::Command { program, args, .. } => command::describe(program, args),
            Readiness::Delay { duration } => format!("delay {}", fmt_duration(*duration)),
            Readiness::None => "none".to_string(),
        }
    }

    /// An HTTP readiness on `url` expecting 200, polled every 50 ms.
    pub(crate) fn http(url: impl Into<String>) -> Self {
        Readiness::Http {
            url: url.into(),
            expect_status: 200,
            interval: DEFAULT_PROBE_INTERVAL,
        }
    }

    /// Polls until ready; returns how long that took. A delay is only a delay,
    /// so it does not consult `timeout`. Only tests probe without auth or a
    /// trace; the harness always goes through [`Readiness::wait_with`].
    #[cfg(test)]
    pub(crate) async fn wait(&self, timeout: Duration) -> Result<Duration, ProbeError> {
        self.wait_with(timeout, &ProbeAuth::default(), &Trace::detached())
            .await
    }

    /// [`Readiness::wait`], sending `auth` to probes of the server under
    /// test and recording each attempt in `trace` (`ready_probe`).
    pub(crate) async fn wait_with(
        &self,
        timeout: Duration,
        auth: &ProbeAuth,
        trace: &Trace,
    ) -> Result<Duration, ProbeError> {
        self.wait_observing(timeout, auth, trace)
            .await
            .map(|ready| ready.took)
    }

    /// Whether [`Readiness::attempt_once`] can probe it: an HTTP or TCP probe.
    pub(super) fn attempts_once(&self) -> bool {
        matches!(
            self,
            Readiness::Http { .. } | Readiness::HttpPost { .. } | Readiness::Tcp { .. }
        )
    }

    /// One attempt, cut at `limit`: `Err` says what failed (a refused
    /// connection, another status, no answer). Probes that cannot be
    /// attempted once ([`Readiness::attempts_once`]) pass.
    pub(super) async fn attempt_once(
        &self,
        auth: &ProbeAuth,
        limit: Duration,
    ) -> Result<(), AttemptError> {
        let attempt = async {
            let (url, post, expect) = match self {
                Readiness::Tcp { addr } => {
                    return tokio::net::TcpStream::connect(addr)
                        .await
                        .map(drop)
                        .map_err(|source| AttemptError::Connect {
                            addr: addr.clone(),
                            source,
                        });
                }
                Readiness::Http {
                    url, expect_status, ..
                } => (url, None, *expect_status),
                Readiness::HttpPost {
                    url,
                    body,
                    headers,
                    expect_status,
                    ..
                } => (url, Some((body, headers)), *expect_status),
                _ => return Ok(()),
            };
            let client = crate::http::client_builder()
                .build()
                .map_err(AttemptError::Http)?;
            let request = build_request(&client, url, post);
            let request = match auth.covers(url) {
                true => with_auth(request, auth),
                false => request,
            };
            match request.send().await {
                Ok(r) if r.status().as_u16() == expect => Ok(()),
                Ok(r) => Err(AttemptError::Status(r.status().as_u16())),
                Err(e) => Err(AttemptError::Http(e)),
            }
        };
        tokio::time::timeout(limit, attempt)
            .await
            .unwrap_or(Err(AttemptError::NoAnswer(limit)))
    }

    /// [`Readiness::wait_with`], also saying what the attempts that failed
    /// before it passed saw: a restart's proof that the target was down.
    pub(crate) async fn wait_observing(
        &self,
        timeout: Duration,
        auth: &ProbeAuth,
        trace: &Trace,
    ) -> Result<Ready, ProbeError> {
        let started = Instant::now();
        // Written by the polling loop, read after the deadline drops it.
        let mut last = LastSeen::default();
        let mut attempts = 0;
        let polled = match self {
            Readiness::None => return Ok(Ready::default()),
            Readiness::Delay { duration } => {
                tokio::time::sleep(*duration).await;
                return Ok(Ready {
                    took: started.elapsed(),
                    failed_first: None,
                });
            }
            Readiness::Http {
                url,
                expect_status,
                interval,
            } => {
                let request = Probe::new(url, None, (*expect_status, *interval), auth, trace);
                tokio::time::timeout(timeout, poll_http(request, &mut last, &mut attempts)).await
            }
            Readiness::HttpPost {
                url,
                body,
                headers,
                expect_status,
                interval,
            } => {
                let post = Some((body, headers));
                let request = Probe::new(url, post, (*expect_status, *interval), auth, trace);
                tokio::time::timeout(timeout, poll_http(request, &mut last, &mut attempts)).await
            }
            Readiness::Tcp { addr } => {
                tokio::time::timeout(timeout, poll_tcp(addr, &mut last, &mut attempts, trace)).await
            }
            Readiness::Command {
                program,
                args,
                interval,
            } => {
                let probe = command::CommandProbe {
                    program,
                    args,
                    interval: *interval,
                    trace,
                };
                tokio::time::timeout(timeout, probe.poll(&mut last.words, &mut attempts)).await
            }
        };
        let seen = Polled {
            took: started.elapsed(),
            last,
            attempts,
        };
        self.outcome(polled, seen, timeout)
    }

    /// What the polling came to: ready (and what the attempts before saw),
    /// given up on a failure no retry mends, or out of time.
    fn outcome(
        &self,
        polled: Result<Result<(), GaveUp>, tokio::time::error::Elapsed>,
        seen: Polled,
        timeout: Duration,
    ) -> Result<Ready, ProbeError> {
        let Polled {
            took,
            last,
            attempts,
        } = seen;
        match polled {
            Ok(Ok(())) => Ok(Ready {
                took,
                failed_first: (!last.words.is_empty()).then_some(last.words),
            }),
            Ok(Err(fatal)) => Err(ProbeError {
                gave_up: true,
                ..self.failed(timeout, fatal.to_string(), attempts)
            }),
            // No attempt ended before the deadline: none was answered.
            Err(_) if last.words.is_empty() => Err(ProbeError {
                last_cause: Some(Box::new(error_cause("no_answer"))),
                ..self.failed(timeout, "no answer before the deadline".into(), attempts)
            }),
            Err(_) => Err(ProbeError {
                last_cause: last.cause.map(Box::new),
                ..self.failed(timeout, last.words, attempts)
            }),
        }
    }

    fn failed(&self, timeout: Duration, last_error: String, attempts: u32) -> ProbeError {
        ProbeError {
            attempts,
            probe: self.describe(),
            timeout,
            last_error,
            last_cause: None,
            gave_up: false,
        }
    }
}

/// One HTTP probe: a GET, or a POST with a JSON body and headers.
struct Probe<'a> {
    url: &'a str,
    post: Option<(&'a String, &'a Vec<(String, String)>)>,
    expect: u16,
    interval: Duration,
    auth: &'a ProbeAuth,
    trace: &'a Trace,
}

impl<'a> Probe<'a> {
    /// A probe of `url` (a POST of `post`, else a GET) that passes on the
    /// status of `(expect, interval)` and tries again every interval.
    fn new(
        url: &'a str,
        post: Option<(&'a String, &'a Vec<(String, String)>)>,
        (expect, interval): (u16, Duration),
        auth: &'a ProbeAuth,
        trace: &'a Trace,
    ) -> Probe<'a> {
        Probe {
            url,
            post,
            expect,
            interval,
            auth,
            trace,
        }
    }
}

/// Polls until the probe answers `expect`, a new attempt every interval
/// while earlier ones may still wait ([`hedge::hedge`]). Only a probe that
/// can never pass (a client that cannot be built, a server that refuses its
/// credentials) returns early with an error.
/// What a wait's attempts saw by the time it ended.
struct Polled {
    took: Duration,
    last: LastSeen,
    attempts: u32,
}

/// The last failed attempt of a wait, in words (empty: none failed) and as
/// a failure's cause.
#[derive(Default)]
struct LastSeen {
    words: String,
    cause: Option<crate::report::Cause>,
}

impl LastSeen {
    fn failed(&mut self, words: String, cause: crate::report::Cause) {
        self.words = words;
        self.cause = Some(cause);
    }
}

/// A transport error as a failure's cause: `refused`, `reset`, `closed`,
/// `no_answer`… (what a target that never came back is signed with).
fn error_cause(error: &str) -> crate::report::Cause {
    use crate::report::SignatureKind;
    crate::report::Cause {
        kind: match error {
            "no_answer" => SignatureKind::Timeout,
            "closed" => SignatureKind::StreamClosed,
            _ => SignatureKind::Connect,
        },
        http_status: None,
        problem_type: None,
        error: Some(error.to_string()),
    }
}

/// A status other than the expected one, as a failure's cause.
fn status_cause(status: u16) -> crate::report::Cause {
    crate::report::Cause {
        kind: crate::report::SignatureKind::Http,
        http_status: Some(status),
        problem_type: None,
        error: None,
    }
}

/// The kind of a failed HTTP attempt, in [`error_cause`]'s words.
fn http_error_word(error: &reqwest::Error) -> &'static str {
    use crate::trace::ErrorKind;
    let seen = crate::acp::AcpError::from_reqwest("", error, Duration::ZERO).seen();
    match seen {
        crate::trace::Seen::Error {
            kind: ErrorKind::Timeout,
            ..
        } => "no_answer",
        crate::trace::Seen::Error { kind, .. } => kind.as_str(),
        crate::trace::Seen::Status { .. } => "other",
    }
}

/// The kind of a failed TCP connect, in [`error_cause`]'s words.
fn connect_error_word(error: &std::io::Error) -> &'static str {
    match error.kind() {
        std::io::ErrorKind::ConnectionRefused => "refused",
        std::io::ErrorKind::ConnectionReset
        | std::io::ErrorKind::ConnectionAborted
        | std::io::ErrorKind::BrokenPipe => "reset",
        std::io::ErrorKind::TimedOut => "no_answer",
        _ => "other",
    }
}

async fn poll_http(
    probe: Probe<'_>,
    last: &mut LastSeen,
    attempts: &mut u32,
) -> Result<(), GaveUp> {
    let client = crate::http::client_builder()
        .build()
        .map_err(GaveUp::Client)?;
    let Probe {
        url,
        post,
        expect,
        interval,
        auth,
        trace,
    } = probe;
    let authorized = auth.covers(url);
    let start = || {
        let request = build_request(&client, url, post);
        let request = match authorized {
            true => with_auth(request, auth),
            false => request,
        };
        let sent = request.send();
        async move { sent.await.map(|response| response.status().as_u16()) }
    };
    let judge = |finished: Finished<Result<u16, reqwest::Error>>| {
        let failed;
        let word;
        let seen = match &finished.ended {
            Ended::Answered(Ok(status)) => {
                word = "";
                Seen::Status(*status)
            }
            Ended::Answered(Err(e)) => {
                failed = error_chain(e);
                word = http_error_word(e);
                Seen::Error(&failed)
            }
            Ended::TimedOut => {
                failed = format!("no answer within {}", fmt_duration(finished.took));
                word = "no_answer";
                Seen::Error(&failed)
            }
        };
        probe_event(trace, finished.number, url, finished.took, seen);
        match seen {
            Seen::Status(s) if s == expect => return ControlFlow::Break(Ok(())),
            Seen::Status(status @ (401 | 403)) => {
                return ControlFlow::Break(Err(GaveUp::Refused {
                    status,
                    sent_token: authorized && auth.token.is_some(),
                }))
            }
            Seen::Status(s) => last.failed(format!("status {s}"), status_cause(s)),
            Seen::Error(e) => last.failed(e.to_string(), error_cause(word)),
            Seen::Connected => {}
        }
        ControlFlow::Continue(())
    };
    hedge::hedge(interval, attempts, start, judge).await
}

/// A probe's request: a GET, or a POST of a JSON body with its headers.
fn build_request(
    client: &reqwest::Client,
    url: &str,
    post: Option<(&String, &Vec<(String, String)>)>,
) -> reqwest::RequestBuilder {
    match post {
        None => client.get(url),
        Some((body, headers)) => {
            let mut r = client
                .post(url)
                .header("content-type", "application/json")
                .body(body.clone());
            for (k, v) in headers {
                r = r.header(k.as_str(), v.as_str());
            }
            r
        }
    }
}

fn with_auth(mut request: reqwest::RequestBuilder, auth: &ProbeAuth) -> reqwest::RequestBuilder {
    for (k, v) in &auth.headers {
        request = request.header(k.as_str(), v.as_str());
    }
    match &auth.token {
        Some(token) => request.bearer_auth(token.expose()),
        None => request,
    }
}

/// Why a probe stopped before its deadline: waiting longer will not help.
#[derive(Debug, thiserror::Error)]
enum GaveUp {
    /// The HTTP client cannot be built.
    #[error("{}", error_chain(.0))]
    Client(reqwest::Error),
    /// A 401 or 403.
    #[error("{}", refused(*.status, *.sent_token))]
    Refused { status: u16, sent_token: bool },
    /// A command probe whose program cannot be started.
    #[error("{0}")]
    Unstartable(String),
}

fn refused(status: u16, sent_token: bool) -> String {
    if sent_token {
        format!("the server rejected the token (HTTP {status})")
    } else {
        format!("the server refused the probe (HTTP {status}); if it wants a token, set SA_TOKEN or name its variable with --token-env")
    }
}

async fn poll_tcp(
    addr: &str,
    last: &mut LastSeen,
    attempts: &mut u32,
    trace: &Trace,
) -> Result<(), GaveUp> {
    // A connect is not held by the server (the kernel accepts or refuses
    // it), so one attempt at a time; they start on a beat, so a slow failure
    // is not followed by a sleep on top.
    let mut beat = tokio::time::interval(DEFAULT_PROBE_INTERVAL);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        beat.tick().await;
        *attempts += 1;
        let began = Instant::now();
        let connected =
            tokio::time::timeout(TCP_ATTEMPT, tokio::net::TcpStream::connect(addr)).await;
        let error = match &connected {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some("no answer".to_string()),
        };
        let seen = match &error {
            None => Seen::Connected,
            Some(e) => Seen::Error(e),
        };
        probe_event(trace, *attempts, addr, began.elapsed(), seen);
        match connected {
            Ok(Ok(_stream)) => return Ok(()),
            Ok(Err(e)) => last.failed(
                format!("connect {addr}: {e}"),
                error_cause(connect_error_word(&e)),
            ),
            Err(_) => last.failed(
                format!(
                    "connect {addr}: no answer within {}",
                    fmt_duration(TCP_ATTEMPT)
                ),
                error_cause("no_answer"),
            ),
        }
    }
}

#[cfg(test)]
mod tests;
