//! Test support: TOML-shaped text for the property tests of the config and
//! scenario parsers — mostly well-formed lines with the keys the parser
//! knows and values of every kind, sometimes garbage — so that the cases
//! reach the checks behind the syntax, not only the syntax errors.

use proptest::prelude::*;

/// A TOML value as text: right and wrong types, edge numbers, odd strings.
pub(crate) fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        Just("99999999999999999999".to_string()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("1.5".to_string()),
        Just("nan".to_string()),
        Just("true".to_string()),
        Just("1979-05-27T07:32:00Z".to_string()),
        any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        Just("\"\"".to_string()),
        Just("\"http://127.0.0.1:1/x\"".to_string()),
        Just("\"http://u:p@h:99999\"".to_string()),
        Just("\"ftp://x\"".to_string()),
        Just("\"SIGHUP\"".to_string()),
        Just("[]".to_string()),
        Just("[\"a\", \"\"]".to_string()),
        Just("[1, \"a\"]".to_string()),
        Just("{}".to_string()),
        Just("{ command = \"true\" }".to_string()),
        Just("{ managed = { command = [] } }".to_string()),
        Just(
            "{ managed = { command = [\"x\"], grace_ms = -5, stop_signal = \"NOPE\" } }"
                .to_string()
        ),
        Just("{ http = \"x\", status = 70000 }".to_string()),
        Just("{ tcp = \":0\" }".to_string()),
        Just("{ signal = \"HUP\", pid_file = \"\" }".to_string()),
        Just("{ delay_ms = 1, tcp = \"a:1\" }".to_string()),
        Just("{ \"x-api-key\" = \"v\", authorization = \"b\" }".to_string()),
    ]
}

/// A document of `headers` (table lines) and `keys = values`, with the odd
/// line of anything at all.
pub(crate) fn document(
    headers: &'static [&'static str],
    keys: &'static [&'static str],
) -> impl Strategy<Value = String> {
    let line = prop_oneof![
        2 => proptest::sample::select(headers).prop_map(str::to_string),
        6 => (proptest::sample::select(keys), value()).prop_map(|(k, v)| format!("{k} = {v}")),
        1 => any::<String>(),
    ];
    proptest::collection::vec(line, 0..16).prop_map(|lines| lines.join("\n"))
}

/// A `restart = …` value: each kind, right and wrong, or any value.
pub(crate) fn restart_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(&[
            "{ command = \"true\" }",
            "{ command = \"true\", timeout_ms = 0 }",
            "{ command = \"\", timeout_ms = 5 }",
            "{ managed = { command = [\"/bin/true\"] } }",
            "{ managed = { command = [] } }",
            "{ managed = { command = [\"x\", \"--token\", \"abcdefgh\"], env = { A_TOKEN = \"secretvalue\" }, grace_ms = -1 } }",
            "{ managed = { command = [\"x\"], stop_signal = \"SIGNOPE\" } }",
            "{ signal = \"HUP\", pid_file = \"/run/x.pid\" }",
            "{ signal = \"TERM\" }",
            "{ http = \"http://a:b@127.0.0.1:9/r\", method = \"PUT\", expect_status = 204 }",
            "{ http = \"http://127.0.0.1:9/r\", expect_status = 1000 }",
            "{ http = \"ftp://x\" }",
            "{ command = \"x\", signal = \"HUP\" }",
            "{ pid_file = \"x\" }",
        ][..]).prop_map(str::to_string),
        1 => value(),
    ]
}

/// A `ready = …` value: each probe, right and wrong, or any value.
pub(crate) fn ready_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(&[
            "{ http = \"http://127.0.0.1:9/v1/health\" }",
            "{ http = \"http://127.0.0.1:9/\", status = 204, interval_ms = 10 }",
            "{ http = \"http://127.0.0.1:9/\", status = 0 }",
            "{ tcp = \"127.0.0.1:9\" }",
            "{ tcp = \"nohost\" }",
            "{ delay_ms = 10 }",
            "{ delay_ms = -10 }",
            "{ tcp = \"a:1\", http = \"http://x\" }",
            "{}",
        ][..]).prop_map(str::to_string),
        1 => value(),
    ]
}
