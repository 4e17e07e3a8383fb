//! The bisect's points, cells, judgements and each point's command line.

use super::*;
use crate::cli::Cli;

fn args(extra: &[&str]) -> BisectArgs {
    let mut argv = vec!["continuity", "bisect"];
    argv.extend_from_slice(extra);
    match Cli::try_parse_from(argv).unwrap().command {
        Command::Bisect(args) => args,
        other => panic!("{other:?}"),
    }
}

#[test]
fn points_are_versions_or_paths_and_cells_target_slash_scenario() {
    let a = args(&[
        "--axis",
        "server",
        "--cell",
        "agent/native-continuity",
        "0.4.0",
        "fix=./build/sandbox-agent",
        "./other",
    ]);
    let points = parse_points(&a).unwrap();
    let registry: Vec<bool> = points.iter().map(|p| p.registry).collect();
    assert_eq!(registry, [true, false, false]);
    let bad = args(&["--axis", "server", "--cell", "a/b", "0.4.0", "latest"]);
    let e = parse_points(&bad).unwrap_err().to_string();
    assert!(e.contains("\"latest\"") && e.contains("./latest"), "{e}");
    assert!(
        Cli::try_parse_from([
            "continuity",
            "bisect",
            "--axis",
            "agent",
            "--cell",
            "a/b",
            "0.4.0",
            "0.4.2"
        ])
        .is_err(),
        "the points of a bisect are builds: server or sdk"
    );
    assert!(
        Cli::try_parse_from([
            "continuity",
            "bisect",
            "--axis",
            "sdk",
            "--cell",
            "a/b",
            "0.4.2"
        ])
        .is_err(),
        "two points at least"
    );
    assert_eq!(
        parse_cells(&["agent/native-continuity".into()]).unwrap(),
        [Point::new("agent", "native-continuity")]
    );
    for bad in ["agent", "/x", "agent/", "a/b/c"] {
        assert!(parse_cells(&[bad.into()]).is_err(), "{bad}");
    }
    assert!(parse_cells(&["a/b".into(), "a/b".into()]).is_err());
}

fn verdicts(cells: &[(&str, Verdict, &[Verdict])]) -> Verdicts {
    Verdicts {
        cells: cells
            .iter()
            .map(|(c, v, runs)| (c.to_string(), *v, runs.to_vec()))
            .collect(),
        run: "point-1".into(),
    }
}

#[test]
fn a_point_is_changed_when_its_runs_agree_on_another_verdict() {
    use Verdict::{Error, Fail, Flaky, Pass};
    let first = verdicts(&[("a", Fail, &[Fail, Fail]), ("b", Pass, &[Pass, Pass])]);
    assert_eq!(first.unjudgeable(), None);
    assert_eq!(first.against(&first), Judged::Same);
    let fixed = verdicts(&[("a", Pass, &[Pass, Pass]), ("b", Pass, &[Pass, Pass])]);
    assert_eq!(fixed.against(&first), Judged::Changed);
    let flaky = verdicts(&[("a", Flaky, &[Fail, Pass]), ("b", Pass, &[Pass, Pass])]);
    assert_eq!(flaky.against(&first), Judged::Flaky);
    // A stable change counts even beside a flaky cell.
    let both = verdicts(&[("a", Flaky, &[Fail, Pass]), ("b", Fail, &[Fail, Fail])]);
    assert_eq!(both.against(&first), Judged::Changed);
    let error = verdicts(&[("a", Error, &[Error]), ("b", Pass, &[Pass])]);
    assert_eq!(error.against(&first), Judged::NotRun);
    let missing = verdicts(&[("b", Pass, &[Pass])]);
    assert_eq!(missing.against(&first), Judged::NotRun);
    assert!(flaky
        .unjudgeable()
        .unwrap()
        .contains("a is flaky (fail pass)"));
}

#[test]
fn each_point_runs_the_cells_its_runs_times_with_one_seed() {
    let a = args(&[
        "--axis",
        "sdk",
        "--cell",
        "agent/native-continuity",
        "--cell",
        "gateway/native-continuity",
        "--runs",
        "2",
        "--timeout-ms",
        "9000",
        "0.4.2",
        "fix=/tmp/fix",
    ]);
    let points = parse_points(&a).unwrap();
    let cells = parse_cells(&a.cells).unwrap();
    let probe = Probe {
        args: &a,
        points: &points,
        cells: &cells,
        seed: 7,
        dir: Path::new("/b"),
    };
    let line = |i: usize| {
        probe
            .command_line(&points[i], Path::new("/b/point-1"))
            .join(" ")
    };
    assert_eq!(
        line(1),
        "continuity run --repeat 2 --seed 7 --sdk fix=/tmp/fix --client ts-sdk --target agent \
         --scenario native-continuity --target gateway --timeout-ms 9000 --out /b/point-1"
    );
    assert!(line(0).contains("--sdk-version 0.4.2 "), "{}", line(0));
    // Each line parses as `run` does.
    assert!(Cli::try_parse_from(probe.command_line(&points[1], Path::new("/o"))).is_ok());
}
