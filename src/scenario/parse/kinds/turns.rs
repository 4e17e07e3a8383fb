//! The checks on named turns (`prompt` with `wait = false`, `await_turn`,
//! `turn_history`, `restart` with `after_ms`): every turn has one unique
//! name, is started before it is used, is awaited exactly once, and a timed
//! restart has a running turn to land in.

use super::{RawPhase, Texts};
use crate::errors::Invalid;
use std::collections::HashMap;

#[derive(Default)]
pub(in crate::scenario::parse) struct Turns {
    /// Turn name → (offset of the prompt that starts it, awaited yet).
    started: HashMap<String, (usize, bool)>,
    /// Started and not yet awaited, in order.
    running: Vec<String>,
}

impl Turns {
    pub(crate) fn start_turn(
        &mut self,
        at: usize,
        p: &RawPhase,
        cleanup: bool,
    ) -> Result<(), Invalid> {
        if cleanup {
            return Err(Invalid::new(
                "a cleanup step cannot start a turn (`wait = false`)",
            ));
        }
        let turn = match (p.wait, p.turn.as_deref().map(str::trim)) {
            (Some(false), Some(turn)) if !turn.is_empty() => turn,
            (Some(false), _) => {
                return Err(Invalid::new(
                    "a prompt with `wait = false` needs `turn`: the name its `await_turn` uses",
                ))
            }
            // Called for `wait = false` or a `turn`: here it is a turn without `wait = false`.
            _ => {
                return Err(Invalid::new(
                    "`turn` names a prompt that does not wait: add `wait = false`",
                ))
            }
        };
        if !matches!(&p.text, Some(Texts::One(t)) if !t.trim().is_empty()) {
            return Err(Invalid::new(
                "a prompt with `wait = false` needs `text`: one non-empty string",
            ));
        }
        if p.expect_stop_reason.is_some() {
            return Err(Invalid::new("`expect_stop_reason` belongs on a waiting prompt; a turn's outcome is judged by `await_turn`"));
        }
        if self.started.contains_key(turn) {
            return Err(Invalid(format!("turn name `{turn}` is used twice")));
        }
        self.started.insert(turn.to_string(), (at, false));
        self.running.push(turn.to_string());
        Ok(())
    }

    pub(crate) fn await_turn(&mut self, turn: &str, cleanup: bool) -> Result<(), Invalid> {
        match self.started.get_mut(turn) {
            None => Err(self.unknown(turn, "await_turn")),
            Some((_, true)) => Err(Invalid(format!("turn `{turn}` is awaited twice"))),
            Some(_) if cleanup => Err(Invalid(format!(
                "turn `{turn}` must be awaited by a phase, not a cleanup step"
            ))),
            Some((_, awaited)) => {
                *awaited = true;
                self.running.retain(|t| t != turn);
                Ok(())
            }
        }
    }

    /// `step` (`turn_history`, `recover_turn`) reads an awaited turn.
    pub(crate) fn check_history(&self, turn: &str, step: &str) -> Result<(), Invalid> {
        match self.started.get(turn) {
            None => Err(self.unknown(turn, step)),
            Some((_, false)) => Err(Invalid(format!(
                "turn `{turn}` is still running here: `{step}` comes after its `await_turn`"
            ))),
            Some(_) => Ok(()),
        }
    }

    pub(crate) fn restart_during_turn(&self, cleanup: bool) -> Result<(), Invalid> {
        if cleanup || self.running.is_empty() {
            return Err(Invalid::new("`after_ms` counts from the start of a running turn, and none is running here (start one with a `prompt` with `wait = false`)"));
        }
        Ok(())
    }

    /// The first turn (by its position in the file) that no phase awaits.
    pub(crate) fn never_awaited(&self) -> Option<(String, usize)> {
        self.started
            .iter()
            .filter(|(_, (_, awaited))| !awaited)
            .map(|(name, (at, _))| (name.clone(), *at))
            .min_by_key(|(_, at)| *at)
    }

    fn unknown(&self, turn: &str, step: &str) -> Invalid {
        let mut known: Vec<&str> = self.started.keys().map(String::as_str).collect();
        known.sort();
        Invalid(format!(
            "`{step}` names turn `{turn}`, which no earlier `prompt` with `wait = false` starts{}",
            if known.is_empty() {
                String::new()
            } else {
                format!(" (turns: {})", known.join(", "))
            }
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{parse_scenario, Step};
    use std::path::Path;
    use std::time::Duration;

    const HEAD: &str = "name = \"t\"\n[[phase]]\nname = \"c\"\nstep = \"connect\"\nclient = \"a\"\n[[phase]]\nname = \"s\"\nstep = \"create_session\"\nclient = \"a\"\nsession = \"x\"\n";
    const START: &str = "[[phase]]\nname = \"go\"\nstep = \"prompt\"\nclient = \"a\"\nsession = \"x\"\ntext = \"hi\"\nwait = false\nturn = \"long\"\n";
    const AWAIT: &str =
        "[[phase]]\nname = \"wait\"\nstep = \"await_turn\"\nturn = \"long\"\ntimeout_ms = 900\n";

    fn error(body: &str) -> String {
        parse_scenario(Path::new("s.toml"), &format!("{HEAD}{body}"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_turn_is_started_restarted_into_awaited_and_checked() {
        let restart = "[[phase]]\nname = \"r\"\nstep = \"restart\"\nafter_ms = 250\n";
        let history =
            "[[phase]]\nname = \"h\"\nstep = \"turn_history\"\nclient = \"a\"\nturn = \"long\"\n";
        let s = parse_scenario(
            Path::new("s.toml"),
            &format!("{HEAD}{START}{restart}{AWAIT}{history}"),
        )
        .unwrap();
        let steps: Vec<&Step> = s.phases.iter().map(|p| &p.step).collect();
        assert!(
            matches!(steps[2], Step::StartTurn { turn, text, .. } if turn == "long" && text == "hi")
        );
        assert_eq!(
            steps[3],
            &Step::RestartDuringTurn {
                after: Duration::from_millis(250)
            }
        );
        assert_eq!(
            steps[4],
            &Step::AwaitTurn {
                turn: "long".into(),
                deadline: Some(Duration::from_millis(900))
            }
        );
        assert_eq!(s.phases[3].step.kind(), crate::scenario::StepKind::Restart);
    }

    #[test]
    fn a_turn_is_recovered_only_after_its_await() {
        let recover =
            "[[phase]]\nname = \"r\"\nstep = \"recover_turn\"\nclient = \"a\"\nturn = \"long\"\n";
        let s = parse_scenario(
            Path::new("s.toml"),
            &format!("{HEAD}{START}{AWAIT}{recover}"),
        )
        .unwrap();
        assert_eq!(
            s.phases[4].step,
            Step::RecoverTurn {
                client: "a".into(),
                turn: "long".into()
            }
        );
        let e = error(&format!("{START}{recover}{AWAIT}"));
        assert!(
            e.starts_with("s.toml:19: ")
                && e.contains("`recover_turn` comes after its `await_turn`"),
            "{e}"
        );
        let e = error(&recover.replace("long", "other"));
        assert!(e.contains("`recover_turn` names turn `other`"), "{e}");
    }

    #[test]
    fn an_await_needs_its_turn_started_earlier_with_file_and_line() {
        let e = error(AWAIT);
        assert!(e.starts_with("s.toml:11: "), "{e}");
        assert!(e.contains("`await_turn` names turn `long`, which no earlier `prompt` with `wait = false` starts"), "{e}");
        let e = error("[[phase]]\nname = \"wait\"\nstep = \"await_turn\"\n");
        assert!(e.contains("step `await_turn` needs `turn`"), "{e}");
        let e = error(&format!("{AWAIT}{START}"));
        assert!(e.contains("no earlier"), "awaited before it starts: {e}");
    }

    #[test]
    fn turn_names_are_unique_awaited_once_and_always_awaited() {
        let second = START.replace("\"go\"", "\"again\"");
        assert!(
            error(&format!("{START}{second}{AWAIT}")).contains("turn name `long` is used twice")
        );
        let twice = AWAIT.replace("\"wait\"", "\"again\"");
        assert!(error(&format!("{START}{AWAIT}{twice}")).contains("turn `long` is awaited twice"));
        let e = error(START);
        assert!(
            e.starts_with("s.toml:11: ")
                && e.contains("turn `long` is started here but no `await_turn` step collects it"),
            "{e}"
        );
        let cleanup = "[[cleanup]]\nstep = \"await_turn\"\nturn = \"long\"\n";
        assert!(error(&format!("{START}{cleanup}")).contains("not a cleanup step"));
    }

    #[test]
    fn a_non_waiting_prompt_and_a_timed_restart_are_checked() {
        let no_turn = START.replace("turn = \"long\"\n", "");
        assert!(error(&no_turn).contains("`wait = false` needs `turn`"));
        let no_wait = START.replace("wait = false\n", "");
        assert!(error(&no_wait).contains("add `wait = false`"));
        let many = START.replace("text = \"hi\"", "text = [\"a\", \"b\"]");
        assert!(error(&format!("{many}{AWAIT}")).contains("one non-empty string"));
        let stop = START.replace(
            "wait = false",
            "wait = false\nexpect_stop_reason = \"end_turn\"",
        );
        assert!(error(&format!("{stop}{AWAIT}")).contains("judged by `await_turn`"));
        let restart = "[[phase]]\nname = \"r\"\nstep = \"restart\"\nafter_ms = 100\n";
        assert!(error(restart).contains("none is running here"));
        assert!(error(&format!("{START}{AWAIT}{restart}")).contains("none is running here"));
        let early =
            "[[phase]]\nname = \"h\"\nstep = \"turn_history\"\nclient = \"a\"\nturn = \"long\"\n";
        assert!(error(&format!("{START}{early}{AWAIT}")).contains("still running here"));
        assert!(
            error("[[phase]]\nname = \"r\"\nstep = \"restart\"\nms = 1\n")
                .contains("`ms` is not a field of step `restart` (it takes: after_ms)")
        );
    }
}
