//! The target a cell restarts and the components it is lent, taken from
//! the one walk over the worker's parts (`Worker::parts_mut`).

use super::restarted_target;
use crate::runner::tests::worker_of_every_place;
use crate::targets::{BuiltinTarget, Nemesis, Readiness, Reboot, RestartAction, Target, TargetId};

/// A reboot is lent every component it names wherever the worker holds
/// it (among the targets, the server's slot, the SDK's process, the other
/// components), in the walk's order, never its own target or one it does
/// not name.
#[test]
fn a_reboot_is_lent_what_it_names_from_every_place_of_the_worker() {
    let reboot = Reboot {
        order: vec![
            BuiltinTarget::RivetEngine,
            BuiltinTarget::Rivet,
            BuiltinTarget::Agent,
            BuiltinTarget::Gateway,
        ],
        boot_probes: Vec::new(),
    };
    let whole = Target::new(
        BuiltinTarget::WholeStack,
        RestartAction::Nemesis(Nemesis::Reboot(reboot)),
        Readiness::None,
    );
    let mut worker = worker_of_every_place(vec![
        Target::placeholder(BuiltinTarget::Gateway.into()),
        whole,
        Target::placeholder(BuiltinTarget::GatewayReload.into()),
    ]);
    let (own, lent) = restarted_target(&mut worker, 1, false);
    assert_eq!(own.id, BuiltinTarget::WholeStack);
    let lent: Vec<TargetId> = lent.iter().map(|part| part.id.clone()).collect();
    assert_eq!(
        lent,
        [
            BuiltinTarget::Gateway.into(),
            BuiltinTarget::Agent.into(),
            BuiltinTarget::Rivet.into(),
            BuiltinTarget::RivetEngine.into(),
        ] as [TargetId; 4]
    );
}
