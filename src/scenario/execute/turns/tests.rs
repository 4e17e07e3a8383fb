//! The long turn steps' tests (`turns.rs`): a timed restart during a turn and what a lost turn says it saw.

use super::*;

struct CountingRestart(u32);

#[async_trait::async_trait]
impl crate::scenario::Restarter for CountingRestart {
    async fn restart(&mut self, phase: &str) -> crate::targets::Restarted {
        self.0 += 1;
        crate::targets::Restarted::from_record(crate::targets::RestartResult {
            phase: phase.into(),
            ok: true,
            action: "fake".into(),
            restart_ms: 1,
            ready_ms: Some(1),
            down: None,
            detail: None,
        })
    }
}

/// No server at all: the turn fails (the client's health check cannot
/// connect), the timed restart still waits for its moment, the await
/// names the failure, and nothing hangs.
#[tokio::test]
async fn a_timed_restart_lands_after_the_turn_started_and_the_await_names_the_failure() {
    let source = "name = \"t\"\n[[phase]]\nname = \"c\"\nstep = \"connect\"\nclient = \"a\"\n[[phase]]\nname = \"s\"\nstep = \"create_session\"\nclient = \"a\"\nsession = \"x\"\non_failure = \"continue\"\n[[phase]]\nname = \"go\"\nstep = \"prompt\"\nclient = \"a\"\nsession = \"x\"\ntext = \"hi\"\nwait = false\nturn = \"long\"\n[[phase]]\nname = \"r\"\nstep = \"restart\"\nafter_ms = 300\n[[phase]]\nname = \"w\"\nstep = \"await_turn\"\nturn = \"long\"\ntimeout_ms = 20000\n";
    let scenario = crate::scenario::parse_scenario(std::path::Path::new("t.toml"), source).unwrap();
    let settings = crate::scenario::CellSettings {
        default_timeout: Duration::from_secs(1),
        ..crate::scenario::CellSettings::for_tests()
    };
    let mut restarter = CountingRestart(0);
    let run = crate::scenario::run_cell(&scenario, &settings, &mut restarter).await;
    assert_eq!(restarter.0, 1);
    let restart = &run.phases[3];
    let into = restart.detail["startedIntoTurnMs"].as_u64().unwrap();
    assert!(into >= 300, "{restart:?}");
    assert_eq!(restart.detail["afterMs"], 300);
    let wait = &run.phases[4];
    assert_eq!(wait.detail["turnOutcome"], "failed", "{wait:?}");
    assert_eq!(wait.deadline_ms, 20_000);
    assert!(wait.duration_ms < 5_000, "{wait:?}");
    assert_eq!(run.failure_boundary.as_deref(), Some("s"));
    assert!(!wait.ok && wait.signature.is_some(), "{wait:?}");
}

#[test]
fn a_lost_turn_says_what_the_stream_and_the_post_saw() {
    let before = StreamStats::default();
    let after = StreamStats {
        streams_opened: 2,
        streams_resumed: 1,
        last_resume_id: Some("17".into()),
        stream_ends: vec!["ended".into()],
        get_failures: vec!["HTTP 404".into()],
        ..StreamStats::default()
    };
    let seen = describe_lost(&before, &after);
    assert_eq!(seen, "stream: 2 opened, 1 resumed; last Last-Event-ID 17; stream ended: ended; reconnect refused: HTTP 404; POST: no answer and no error");
}
