//! The schedule's draw: one per seed, inside its window, one fault at a
//! time per part.

use super::super::chaos_run::toxic;
use super::*;

#[test]
fn a_seed_draws_one_schedule_inside_its_window_one_fault_at_a_time_per_part() {
    for seed in 0..500u64 {
        let schedule = draw(seed, seed % 2 == 0);
        assert_eq!(schedule, draw(seed, seed % 2 == 0), "seed {seed}");
        assert_eq!(schedule.faults.len(), FAULTS, "seed {seed}");
        for (i, f) in schedule.faults.iter().enumerate() {
            assert!(f.end_ms() <= schedule.window_ms, "seed {seed}: {f:?}");
            for g in &schedule.faults[i + 1..] {
                assert!(!collides(f, g), "seed {seed}: {f:?} {g:?}");
            }
        }
        let store = schedule.faults.iter().any(|f| f.on == "store");
        assert!(
            !store || seed % 2 == 0,
            "seed {seed}: a store fault without Postgres"
        );
    }
    assert_ne!(draw(1, false), draw(2, false));
    for kind in [FaultKind::Partition, FaultKind::Reset, FaultKind::Latency] {
        toxic(kind);
    }
}

/// The draw is a function of the seed alone: these are the schedules
/// every machine and every later continuity must draw.
#[test]
fn a_seed_draws_the_same_schedule_everywhere() {
    let shown = draw(42, false).describe();
    assert_eq!(shown, draw(42, false).describe());
    assert!(shown.starts_with("seed 42, 3 faults in 8 s: "), "{shown}");
    insta::assert_snapshot!(format!("{}\n{}", shown, draw(7, true).describe()));
}
