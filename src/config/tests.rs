//! Config files good and bad, checked against the messages a user would read.
//!
//! Over 400 lines on purpose: every table of `continuity.toml` (run,
//! targets, faults, the seed scripts' environment) is checked here the same
//! way, a file's text against the message a user reads, through the same
//! `parse` and `error` helpers, with the parser's property tests; split by
//! table they would repeat those helpers.

use super::*;
use crate::targets::RestartKind;

const GOOD: &str = r#"
[run]
base_url = "http://127.0.0.1:2468"
agent = "mock"
timeout_ms = 30000
overall_timeout_ms = 900000
repeat = 2
persist = "sqlite"
token_env = "SA_TOKEN"
headers = { "x-extra" = "v", "x-second" = "w" }

[targets.gateway]
restart = { signal = "HUP", pid_file = "/run/nginx.pid" }
ready = { tcp = "127.0.0.1:8080" }

[targets.agent]
restart = { managed = { command = ["sandbox-agent", "server", "-p", "2468"], env = { XDG_DATA_HOME = "/tmp/x" }, stop_signal = "SIGINT", grace_ms = 2000 } }
ready = { http = "http://127.0.0.1:2468/v1/health", status = 200 }
ready_timeout_ms = 20000

[targets.rivet]
restart = { http = "http://127.0.0.1:9000/restart", expect_status = 204 }
ready = { delay_ms = 6000 }

[targets.box]
restart = { command = "systemctl restart sandbox-agent", timeout_ms = 30000 }
"#;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(Path::new("continuity.toml"), text)
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn a_good_file() {
    let config = parse(GOOD).unwrap();
    assert_eq!(
        config.run.base_url.as_deref(),
        Some("http://127.0.0.1:2468")
    );
    assert_eq!(config.run.timeout, Some(Duration::from_secs(30)));
    assert_eq!(config.run.overall_timeout, Some(Duration::from_secs(900)));
    assert_eq!(config.run.repeat, Some(2));
    assert_eq!(config.run.persist, [crate::persist::Store::Sqlite]);
    assert_eq!(config.run.token_env.as_deref(), Some("SA_TOKEN"));
    assert_eq!(
        config.run.headers,
        vec![
            ("x-extra".into(), "v".into()),
            ("x-second".into(), "w".into())
        ]
    );
    assert_eq!(config.target_names(), ["gateway", "agent", "rivet", "box"]);

    let targets = config.targets();
    assert_eq!(
        targets.iter().map(Target::kind).collect::<Vec<_>>(),
        [
            RestartKind::Signal,
            RestartKind::Managed,
            RestartKind::Http,
            RestartKind::Command
        ]
    );
    assert_eq!(
        config.targets[0].action,
        RestartAction::Signal {
            pid_file: "/run/nginx.pid".into(),
            signal: crate::signal::Signal::HUP
        }
    );
    let RestartAction::Managed(spec) = &config.targets[1].action else {
        panic!("{:?}", config.targets[1].action)
    };
    assert_eq!(spec.program, PathBuf::from("sandbox-agent"));
    assert_eq!(spec.args, ["server", "-p", "2468"]);
    assert_eq!(spec.env, [("XDG_DATA_HOME".into(), "/tmp/x".into())]);
    assert_eq!(spec.stop_signal, crate::signal::Signal::INT);
    assert_eq!(spec.grace, Duration::from_secs(2));
    assert_eq!(targets[1].ready_timeout, Duration::from_secs(20));
    assert_eq!(
        targets[1].readiness,
        Readiness::http("http://127.0.0.1:2468/v1/health")
    );
    assert_eq!(
        config.targets[2].action,
        RestartAction::Http {
            url: "http://127.0.0.1:9000/restart".into(),
            method: "POST".into(),
            expect_status: Some(204),
            timeout: crate::targets::DEFAULT_HTTP_TIMEOUT,
        }
    );
    assert_eq!(
        targets[2].readiness,
        Readiness::Delay {
            duration: Duration::from_secs(6)
        }
    );
    assert_eq!(targets[3].readiness, Readiness::None);
    assert_eq!(
        targets[3].describe(),
        "command: systemctl restart sandbox-agent (timeout 30 s)"
    );
}

#[test]
fn an_empty_file_is_a_config_without_targets() {
    let config = parse("").unwrap();
    assert!(config.targets().is_empty());
    assert_eq!(config.run, RunDefaults::default());
}

#[test]
fn an_unknown_key_names_the_file_the_line_and_the_key() {
    let e = error("[run]\nagent = \"mock\"\ntimeuot_ms = 5\n");
    assert!(e.starts_with("continuity.toml:3: "), "{e}");
    assert!(e.contains("timeuot_ms"), "{e}");
    assert!(e.contains("did you mean `timeout_ms`?"), "{e}");

    let e = error("[targets.agent]\nrestart = { command = \"x\", timout_ms = 5 }\n");
    assert!(e.starts_with("continuity.toml:2: "), "{e}");
    assert!(e.contains("unknown field `timout_ms`"), "{e}");
}

#[test]
fn a_bad_signal_name_is_refused() {
    let e = error(
        "[targets.gateway]\n\nrestart = { signal = \"SIGFOO\", pid_file = \"/run/x.pid\" }\n",
    );
    assert!(e.starts_with("continuity.toml:3: "), "{e}");
    assert!(e.contains("targets.gateway.restart.signal"), "{e}");
    assert!(e.contains("SIGFOO") && e.contains("SIGTERM"), "{e}");

    let e = error(
        "[targets.agent]\nrestart = { managed = { command = [\"x\"], stop_signal = \"STOP\" } }\n",
    );
    assert!(
        e.contains("targets.agent.restart.managed.stop_signal"),
        "{e}"
    );
}

#[test]
fn two_restart_kinds_are_refused() {
    let e = error(
        "[targets.agent]\nrestart = { command = \"x\", signal = \"HUP\", pid_file = \"/p\" }\n",
    );
    assert!(e.starts_with("continuity.toml:2: "), "{e}");
    assert!(e.contains("`command` and `signal`"), "{e}");

    let e = error("[targets.agent]\nrestart = { }\n");
    assert!(e.contains("one restart kind"), "{e}");

    let e = error(
        "[targets.agent]\nrestart = { signal = \"HUP\", pid_file = \"/p\", timeout_ms = 5 }\n",
    );
    assert!(
        e.contains("`timeout_ms` belongs to a command or http restart"),
        "{e}"
    );
}

#[test]
fn a_token_is_refused_anywhere_without_echoing_it() {
    for text in [
        "[run]\ntoken = \"sk-secret\"\n",
        "[targets.agent]\nrestart = { http = \"http://127.0.0.1:1/r\", token = \"sk-secret\" }\n",
    ] {
        let e = parse(text).unwrap_err();
        assert!(matches!(e, ConfigError::Token { line: 2, .. }), "{e:?}");
        let shown = e.to_string();
        assert!(shown.contains("token_env"), "{shown}");
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
    let e = error("[run]\nheaders = { Authorization = \"Bearer sk-secret\" }\n");
    assert!(e.contains("token_env") && !e.contains("sk-secret"), "{e}");
    let e = error("[run]\ntoken_env = \"sk-secret-value-123!\"\n");
    assert!(
        e.contains("run.token_env") && !e.contains("sk-secret"),
        "{e}"
    );
}

#[test]
fn values_are_checked() {
    let e = error("[run]\ntimeout_ms = -5\n");
    assert!(
        e.contains("run.timeout_ms` = -5") && e.contains("positive"),
        "{e}"
    );
    let e = error("[run]\nrepeat = 0\n");
    assert!(e.contains("run.repeat"), "{e}");
    let e = error("[run]\npersist = \"redis\"\n");
    assert!(e.contains("\"rivet\" or \"indexeddb\""), "{e}");
    let e = error("[run]\npersist = 3\n");
    assert!(
        e.contains("run.persist") && e.contains("a list of them"),
        "{e}"
    );
    let e = error("[run]\nbase_url = \"localhost:2468\"\n");
    assert!(e.contains("run.base_url") && e.contains("http://"), "{e}");
    let e = error("[targets.a]\nrestart = { command = \"x\" }\nready = { tcp = \"127.0.0.1\" }\n");
    assert!(
        e.starts_with("continuity.toml:3: ") && e.contains("host:port"),
        "{e}"
    );
    let e = error(
        "[targets.a]\nrestart = { command = \"x\" }\nready = { delay_ms = 5, status = 200 }\n",
    );
    assert!(e.contains("`status` belongs to an http probe"), "{e}");
    let e = error("[targets.a]\nrestart = { managed = { command = [] } }\n");
    assert!(e.contains("targets.a.restart.managed.command"), "{e}");
    let e = error("[targets.a]\nrestart = { command = \"x\" }\nready_timeout_ms = 0\n");
    assert!(e.contains("targets.a.ready_timeout_ms` = 0"), "{e}");
    let e = error("[targets.a]\nrestart = { http = \"http://127.0.0.1:1/\", method = \"GE T\" }\n");
    assert!(e.contains("targets.a.restart.method"), "{e}");
    let e = error("[targets.a]\n");
    assert!(e.contains("restart"), "{e}");
    let e = error("[run\n");
    assert!(e.starts_with("continuity.toml:1: "), "{e}");
}

#[test]
fn a_missing_file_is_a_read_error() {
    let e = Config::load(Path::new("/nonexistent/continuity.toml")).unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }), "{e:?}");
    assert!(e.to_string().contains("/nonexistent/continuity.toml"));
}

#[test]
fn the_seed_scripts_environment_becomes_a_command_target() {
    assert!(from_seed_env([("PATH", "/bin")]).unwrap().is_none());
    assert!(from_seed_env([("SA_RESTART_CMD", "  ")]).unwrap().is_none());

    let target = from_seed_env([("SA_RESTART_CMD", "docker restart sa")])
        .unwrap()
        .unwrap();
    assert_eq!(target.name(), "command");
    assert_eq!(target.kind(), RestartKind::Command);
    assert_eq!(
        target.readiness,
        Readiness::Delay {
            duration: Duration::from_secs(6)
        }
    );

    let target = from_seed_env([
        ("SA_RESTART_CMD", "docker restart sa"),
        ("SA_RESTART_WAIT_SEC", "1.5"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(
        target.readiness,
        Readiness::Delay {
            duration: Duration::from_millis(1500)
        }
    );

    let e = from_seed_env([("SA_RESTART_CMD", "x"), ("SA_RESTART_WAIT_SEC", "soon")])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("SA_RESTART_WAIT_SEC") && e.contains("soon"),
        "{e}"
    );
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const HEADERS: &[&str] = &[
        "[run]",
        "[run.headers]",
        "[targets.agent]",
        "[targets.gateway]",
        "[targets.\"a b\"]",
        "[targets]",
        "[[targets.x]]",
        "[targets.agent.restart]",
        "[targets.agent.restart.managed]",
        "[targets.agent.ready]",
    ];
    const KEYS: &[&str] = &[
        "base_url",
        "agent",
        "timeout_ms",
        "overall_timeout_ms",
        "repeat",
        "persist",
        "token_env",
        "secret_env",
        "expect",
        "retries",
        "headers",
        "restart",
        "ready",
        "ready_timeout_ms",
        "token",
        "command",
        "http",
        "tcp",
        "signal",
        "pid_file",
        "method",
        "expect_status",
        "managed",
        "env",
        "cwd",
        "log",
        "stop_signal",
        "grace_ms",
        "status",
        "interval_ms",
        "delay_ms",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn the_config_parser_never_panics(
            text in crate::toml_props::document(HEADERS, KEYS),
            run in proptest::collection::vec((proptest::sample::select(&KEYS[..8]), crate::toml_props::value()), 0..4),
            restart in crate::toml_props::restart_value(),
            ready in crate::toml_props::ready_value(),
            garbage in any::<bool>(),
        ) {
            // A skeleton of the right shape with values of every kind, so that
            // cases reach the checks and not only toml's syntax errors.
            let mut skeleton = String::from("[run]\n");
            for (key, value) in run {
                skeleton.push_str(&format!("{key} = {value}\n"));
            }
            skeleton.push_str(&format!("[targets.agent]\nrestart = {restart}\nready = {ready}\n"));
            let text = if garbage { text } else { skeleton };
            match Config::parse(Path::new("c.toml"), &text) {
                Ok(config) => {
                    for target in config.targets() {
                        prop_assert!(!target.describe().is_empty());
                    }
                    let mut redactor = crate::secret::Redactor::none();
                    config.add_secrets(&mut redactor);
                }
                Err(e) => prop_assert!(e.to_string().starts_with("c.toml"), "{e}"),
            }
        }

        #[test]
        fn the_seed_variables_never_panic(command in any::<String>(), wait in any::<String>()) {
            let _ = from_seed_env([("SA_RESTART_CMD", command), ("SA_RESTART_WAIT_SEC", wait)]);
        }
    }
}

#[test]
fn secret_env_names_variables_whose_values_are_redacted() {
    // A name no test or user sets, with a value only this test knows.
    std::env::set_var("CONTINUITY_TEST_CREDS_7A", "creds-value-31337");
    let config = Config::parse(
        Path::new("c.toml"),
        "[run]\nsecret_env = [\"CONTINUITY_TEST_CREDS_7A\", \"UNSET_VAR_7A\"]\nheaders = { \"x-api-key\" = \"hdr-value-4242\", \"x-extra\" = \"visible-value\" }\n[targets.a]\nrestart = { managed = { command = [\"srv\", \"--token\", \"arg-value-777\", \"--password=eq-value-888\"], env = { DEPLOY_TOKEN = \"env-value-999\" } } }\n[targets.b]\nrestart = { http = \"http://u:hook-pw-123@127.0.0.1:9/r\" }\n",
    )
    .unwrap();
    let mut redactor = crate::secret::Redactor::none();
    config.add_secrets(&mut redactor);
    let text = "creds-value-31337 hdr-value-4242 visible-value arg-value-777 eq-value-888 env-value-999 hook-pw-123";
    assert_eq!(
        redactor.redact(text),
        "[redacted] [redacted] visible-value [redacted] [redacted] [redacted] [redacted]"
    );
    let bad = Config::parse(
        Path::new("c.toml"),
        "[run]\nsecret_env = [\"sk-live 123\"]\n",
    )
    .unwrap_err();
    assert!(bad.to_string().contains("run.secret_env"), "{bad}");
    assert!(!bad.to_string().contains("sk-live"), "{bad}");
}

#[test]
fn gating_keys_in_the_run_table() {
    let config = parse("[run]\nexpect = \"ci/expect.toml\"\nretries = 2\n").unwrap();
    assert_eq!(config.run.expect, Some(PathBuf::from("ci/expect.toml")));
    assert_eq!(config.run.retries, Some(2));
    let seeded = parse("[run]\nseed = 42\n").unwrap();
    assert_eq!(seeded.run.seed, Some(42));
    let e = error("[run]\nseed = -1\n");
    assert!(
        e.contains("continuity.toml:2") && e.contains("run.seed"),
        "{e}"
    );
    let e = error("[run]\nretries = -1\n");
    assert!(
        e.contains("continuity.toml:2") && e.contains("run.retries"),
        "{e}"
    );
    let e = error("[run]\n\nexpect = \"\"\n");
    assert!(
        e.contains("continuity.toml:3") && e.contains("run.expect"),
        "{e}"
    );
}

#[test]
fn jobs_and_independent_targets() {
    let config = parse(
        "[run]\njobs = 3\n[targets.a]\nrestart = { command = \"x\" }\nindependent = true\n[targets.b]\nrestart = { command = \"y\" }\n",
    )
    .unwrap();
    assert_eq!(config.run.jobs, Some(3));
    let independent: Vec<(String, bool)> = config
        .targets()
        .iter()
        .map(|t| (t.name().to_string(), t.independent))
        .collect();
    assert_eq!(
        independent,
        [("a".to_string(), true), ("b".to_string(), false)]
    );
    assert_eq!(parse("[run]\n").unwrap().run.jobs, None, "1 unless given");
    for bad in ["0", "65", "-2"] {
        let e = error(&format!("[run]\njobs = {bad}\n"));
        assert!(e.contains("run.jobs") && e.contains(bad), "{e}");
        assert!(e.contains("from 1 to 64"), "{e}");
    }
    let e = error("[targets.a]\nrestart = { command = \"x\" }\nindependent = \"yes\"\n");
    assert!(e.contains("independent"), "{e}");
}

#[test]
fn fault_targets_and_the_faults_table() {
    let config = parse(
        "[run]\nbase_url = \"http://127.0.0.1:2468\"\n[faults]\nbase_url_hop = \"edge\"\n[faults.hops.db]\nlisten = \"127.0.0.1:15432\"\nupstream = \"127.0.0.1:5432\"\n[targets.edge-reset]\nfault = { hop = \"edge\", toxic = \"reset_peer\", timeout = 50, stream = \"upstream\", hold_ms = 1500 }\n[targets.db-slow]\nfault = { hop = \"db\", toxic = \"latency\", latency = 300, toxicity = 0.5 }\n",
    )
    .unwrap();
    let faults = config.faults.as_ref().unwrap();
    let names: Vec<&str> = faults.hops().iter().map(|h| h.name()).collect();
    assert_eq!(names, ["edge", "db"]);
    assert_eq!(faults.hops[0].upstream.port(), 5432);
    let targets = config.targets();
    assert_eq!(targets[0].kind(), RestartKind::Fault);
    assert_eq!(
        targets[0].describe(),
        "fault: reset_peer upstream (timeout 50 ms) on the edge hop for 1.5 s"
    );
    assert_eq!(
        targets[1].describe(),
        "fault: latency downstream (latency 300 ms, jitter 0 ms, toxicity 0.5) on the db hop for 3 s"
    );
    // Without [faults], the local stack's hops.
    let local =
        parse("[targets.x]\nfault = { hop = \"persist\", toxic = \"partition\" }\n").unwrap();
    assert_eq!(local.targets()[0].kind(), RestartKind::Fault);
    match &local.targets[0].action {
        crate::targets::RestartAction::Fault(fault) => {
            assert_eq!(fault.hop, crate::faults::LocalHop::Persist)
        }
        _ => unreachable!("a fault target"),
    }
}

#[test]
fn bad_faults_name_the_key_and_the_line() {
    let e = error("[targets.x]\nfault = { hop = \"gatewey\", toxic = \"down\" }\n");
    assert!(
        e.contains("continuity.toml:2: `targets.x.fault.hop` = \"gatewey\": unknown hop (did you mean `gateway`?)"),
        "{e}"
    );
    let e = error("[targets.x]\nfault = { hop = \"gateway\", toxic = \"bandwidth\", rate = 0 }\n");
    assert!(
        e.contains("`targets.x.fault.rate`") && e.contains("from 1 to"),
        "{e}"
    );
    let e = error("[targets.x]\nfault = { hop = \"gateway\", toxic = \"down\", hold_ms = -1 }\n");
    assert!(e.contains("`targets.x.fault.hold_ms`"), "{e}");
    let e = error("[targets.x]\nfault = { toxic = \"down\" }\n");
    assert!(e.contains("a fault needs `hop`"), "{e}");
    let e = error("[targets.x]\nrestart = { command = \"x\" }\nfault = { hop = \"gateway\", toxic = \"down\" }\n");
    assert!(e.contains("not both"), "{e}");
    let e = error(
        "[targets.x]\nfault = { hop = \"gateway\", toxic = \"down\" }\nready = { delay_ms = 5 }\n",
    );
    assert!(e.contains("no readiness probe"), "{e}");
    let e = error("[targets.x]\n");
    assert!(e.contains("expected `restart = { … }`"), "{e}");
    let e = error("[faults.hops.db]\nlisten = \"10.0.0.1:1\"\nupstream = \"127.0.0.1:5432\"\n");
    assert!(
        e.contains("`faults.hops.db.listen`") && e.contains("loopback"),
        "{e}"
    );
    let e = error("[faults]\nbase_url_hop = \"db\"\n[faults.hops.db]\nlisten = \"127.0.0.1:1\"\nupstream = \"127.0.0.1:2\"\n");
    assert!(e.contains("the base URL's hop already"), "{e}");
}

#[test]
fn a_fault_target_may_not_take_a_built_in_targets_name() {
    for name in ["gateway-partition", "agent"] {
        let e = error(&format!(
            "# the local stack's own\n[targets.{name}]\nfault = {{ hop = \"gateway\", toxic = \"down\" }}\n"
        ));
        assert!(
            e.starts_with("continuity.toml:")
                && e.contains(&format!("`targets.{name}` = \"{name}\""))
                && e.contains("built-in target"),
            "{e}"
        );
        let line: usize = e.split(':').nth(1).unwrap().parse().unwrap();
        assert!((2..=3).contains(&line), "{e}");
    }
    // A deployment's restart targets have their own names, built-in or not.
    parse("[targets.agent]\nrestart = { command = \"true\" }\n").unwrap();
}
