use super::*;
use std::path::Path;

#[test]
fn every_builtin_target_round_trips_its_name_as_serde_writes_it() {
    for target in BuiltinTarget::ALL {
        let name = target.name();
        assert!(!name.is_empty(), "{target:?}");
        assert_eq!(serde_json::to_value(target).unwrap(), name);
        assert_eq!(BuiltinTarget::from_name(name), Some(target));
        let back: BuiltinTarget = serde_json::from_value(name.into()).unwrap();
        assert_eq!(back, target);
    }
    assert_eq!(BuiltinTarget::from_name("nope"), None);
    assert_eq!(
        BuiltinTarget::GatewayReloadIdle.name(),
        "gateway-reload-idle"
    );
}

#[test]
fn the_default_matrix_is_the_five_restarts_and_the_two_faults_on_the_clients_hop() {
    let defaults: Vec<&str> = BuiltinTarget::ALL
        .into_iter()
        .filter(|t| t.in_default_matrix())
        .map(BuiltinTarget::name)
        .collect();
    assert_eq!(
        defaults,
        [
            "agent",
            "gateway",
            "gateway-reload",
            "rivet",
            "rivet-engine",
            "gateway-partition",
            "gateway-reset"
        ]
    );
    assert!(BuiltinTarget::Store
        .describe()
        .ends_with("(only with --target)"));
    assert!(BuiltinTarget::ServerKill
        .describe()
        .ends_with("(only with --target)"));
    assert_eq!(BuiltinTarget::ServerKill.name(), "server-kill");
    assert!(!BuiltinTarget::Agent.describe().contains("--target"));
}

#[test]
fn every_fault_target_is_a_valid_toxic_on_a_stack_hop_and_no_restart_has_one() {
    for target in BuiltinTarget::ALL {
        match target.fault() {
            Some(action) => {
                assert_eq!(target.family(), Family::Fault, "{target}");
                assert!(action.hop.local().is_some(), "{target}");
                // Its name says its hop: `runner-down` is on the runner hop.
                assert!(target.name().starts_with(action.hop.name()), "{target}");
            }
            None => assert_ne!(target.family(), Family::Fault, "{target}"),
        }
    }
    assert_eq!(
        BuiltinTarget::GatewayReset.describe(),
        "fault: reset_peer downstream (timeout 0 ms) on the gateway hop for 1 s"
    );
}

#[test]
fn the_parts_a_target_restarts_on_purpose_follow_what_it_acts_on() {
    use BuiltinTarget::*;
    let parts = |t: BuiltinTarget, hosted| t.restarted_parts(hosted);
    assert_eq!(parts(Store, false), [HarnessPart::Postgres]);
    assert_eq!(parts(RivetEngine, false), [HarnessPart::RivetApp]);
    assert_eq!(parts(RunnerDown, false), [HarnessPart::RivetApp]);
    assert_eq!(parts(PersistLatency, false), [HarnessPart::RivetApp]);
    assert_eq!(parts(Client, true), [HarnessPart::RivetApp]);
    assert!(parts(Client, false).is_empty());
    assert_eq!(parts(GatewayReload, false), [HarnessPart::Nginx]);
    assert_eq!(parts(GatewayReloadIdle, false), [HarnessPart::Nginx]);
    assert!(parts(GatewayPartition, false).is_empty());
    assert!(parts(Agent, true).is_empty());
}

/// Whose failure a target that does not come back is: the system's, but
/// for a part of continuity's own that stands for none of the
/// deployment's components (its Postgres; the RivetKit runner hosting the
/// SDK). The Rivet Engine is the deployment's, hosted SDK or not: after
/// a long freeze it stopped placing actors while the hosted SDK answered.
#[test]
fn only_continuitys_own_parts_not_back_are_the_harnesss() {
    use BuiltinTarget::*;
    assert_eq!(
        Store.own_part_brought_back(false),
        Some(HarnessPart::Postgres)
    );
    assert_eq!(RivetEngine.own_part_brought_back(true), None);
    for hosted_by_rivet in [Rivet, Client] {
        assert_eq!(
            hosted_by_rivet.own_part_brought_back(true),
            Some(HarnessPart::RivetApp),
            "{hosted_by_rivet}"
        );
    }
    for system in [
        Agent,
        Gateway,
        GatewayReload,
        Rivet,
        RivetEngine,
        ServerKill,
    ] {
        assert_eq!(system.own_part_brought_back(false), None, "{system}");
    }
    // A nemesis's: the component that did not come back decides.
    assert_eq!(
        StorePauseLong.own_part_not_back(None, false),
        Some(HarnessPart::Postgres)
    );
    assert_eq!(RivetEnginePause.own_part_not_back(None, false), None);
    assert_eq!(RivetEnginePauseLong.own_part_not_back(None, true), None);
    assert_eq!(
        RivetPauseLong.own_part_not_back(None, true),
        Some(HarnessPart::RivetApp)
    );
    for nemesis in [WholeStack, Chaos] {
        assert_eq!(nemesis.own_part_not_back(None, true), None, "{nemesis}");
        assert_eq!(
            nemesis.own_part_not_back(Some(Store), false),
            Some(HarnessPart::Postgres)
        );
        assert_eq!(
            nemesis.own_part_not_back(Some(Rivet), true),
            Some(HarnessPart::RivetApp)
        );
        assert_eq!(nemesis.own_part_not_back(Some(RivetEngine), true), None);
        assert_eq!(nemesis.own_part_not_back(Some(Rivet), false), None);
        assert_eq!(nemesis.own_part_not_back(Some(Agent), true), None);
    }
}

/// The lines of `text` (a source file) that compare a target's name with a
/// built-in one's spelled out, before its tests: `== "rivet"`, a match arm
/// `"gateway" | "gateway-reload" =>`, `starts_with("runner-")`. The words a
/// built-in name shares with other vocabularies (the `gateway` hop, the
/// `rivet` store, a trace's `client`) count only on a line about a name or
/// a target.
fn name_comparisons(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    let mut found = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let about_targets = line.contains("name") || line.contains("target");
        let compared = |quoted: &str| {
            [
                format!("== {quoted}"),
                format!("!= {quoted}"),
                format!("{quoted} =>"),
                format!("{quoted} |"),
                format!("| {quoted}"),
            ]
            .iter()
            .any(|shape| line.contains(shape.as_str()))
        };
        let hit = BuiltinTarget::ALL.into_iter().any(|t| {
            let name = t.name();
            let shared = !name.contains('-');
            let prefix = name.split('-').next().unwrap_or(name);
            (compared(&format!("\"{name}\"")) && (!shared || about_targets))
                || line.contains(&format!("starts_with(\"{prefix}-\")"))
        });
        if hit {
            found.push(line.trim().to_string());
        }
    }
    found
}

#[test]
fn the_scan_finds_the_comparisons_it_is_for_and_not_other_vocabularies() {
    let old = r#"
        "rivet" | "rivet-engine" => vec![HarnessPart::RivetApp],
        _ if name.starts_with("runner-") => vec![],
        if let Some(at) = stack.background.iter().position(|t| t.name == "rivet") {
        "store" => {
        Some("rivet") => PersistChoice::Rivet,
        if e.closed_by.as_deref() == Some("client") {
        "persist" | "runner" => probe_of(x),
        #[cfg(test)]
        assert!(t.name == "agent");
    "#;
    assert_eq!(
        name_comparisons(old).len(),
        3,
        "{:?}",
        name_comparisons(old)
    );
}

/// Files that are test modules whole (their data may name any target).
fn test_only(file: &str) -> bool {
    file.ends_with("tests.rs") || file.ends_with("props.rs") || file == "fixture.rs"
}

#[test]
fn no_source_file_outside_this_module_compares_a_target_name_with_a_builtin_one() {
    fn walk(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                walk(&path, found);
            } else if name.ends_with(".rs")
                && !test_only(&name)
                && !path.ends_with("targets/builtin.rs")
            {
                let text = std::fs::read_to_string(&path).unwrap();
                for line in name_comparisons(&text) {
                    found.push(format!("{}: {line}", path.display()));
                }
            }
        }
    }
    let mut found = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    walk(&root.join("src"), &mut found);
    walk(&root.join("crates"), &mut found);
    assert!(
        found.is_empty(),
        "compare with BuiltinTarget instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_timeout_targets_run_only_when_named_restart_nothing_and_carry_their_timeout() {
    use BuiltinTarget::*;
    for target in [GatewayReadTimeout, GatewayIdleCut, ClientHeadersTimeout] {
        assert_eq!(target.family(), Family::Timeout, "{target}");
        assert!(!target.in_default_matrix(), "{target}");
        assert!(target.fault().is_none() && target.restarted_parts(true).is_empty());
        let timeout = target.timeout().unwrap();
        assert_eq!(timeout.limit(), TIMEOUT_LIMIT);
        assert!(target.describe().starts_with("timeout: "), "{target}");
        assert!(target.describe().ends_with("(only with --target)"));
    }
    assert_eq!(
        GatewayIdleCut.timeout(),
        Some(PathTimeout::IdleCut {
            hop: crate::faults::LocalHop::Gateway.into(),
            limit: TIMEOUT_LIMIT
        })
    );
    assert_eq!(
        ClientHeadersTimeout
            .timeout()
            .and_then(|t| t.client_headers()),
        Some(TIMEOUT_LIMIT)
    );
    assert!(Agent.timeout().is_none() && GatewayTimeout.timeout().is_none());
    assert_eq!(
        BuiltinTarget::from_name("client-headers-timeout"),
        Some(ClientHeadersTimeout)
    );
}
