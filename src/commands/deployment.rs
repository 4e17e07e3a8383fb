//! A `--base-url`/`--config` deployment's side of a run: its targets made
//! ready and the server checked, built whole into the runner's stacks, and
//! how many of its cells may run at once.

use super::CommandError;
use crate::cli::RunArgs;
use crate::client::hosted::Unhosted;
use crate::runner::{self, PersistChoice, RunSettings, RunStacks, Worker};
use crate::targets::{Readiness, Target};

/// A deployment's side of the run, built whole: its targets allowed to
/// probe the server, prepared, and the server checked to answer.
pub(super) async fn stacks(
    settings: &RunSettings,
    url: String,
    mut targets: Vec<Target>,
    jobs: usize,
) -> Result<RunStacks, CommandError> {
    let base_url = url.trim_end_matches('/').to_string();
    for target in &mut targets {
        // Probes of the server itself need the token the server wants.
        target.authorize_probes(&base_url, settings.token.as_ref(), &settings.headers);
    }
    for target in &mut targets {
        target.prepare().await?;
    }
    runner::preflight(&base_url, settings.token.as_ref(), &settings.headers).await?;
    for target in &mut targets {
        // A restart command or hook without a probe is seen down and back
        // through the path the clients take: the server's health under the
        // base URL (a gateway answering 502 while its upstream boots is not
        // back). Set after the preflight, which checks that health itself.
        target.with_default_probe(Readiness::http(format!("{base_url}/v1/health")));
    }
    Ok(RunStacks {
        own: Worker {
            base_url,
            targets,
            // Set from each cell's point (a deployment has no store of its own).
            persist: PersistChoice::Own(crate::persist::Store::Sqlite),
            stores: Default::default(),
            sdk_process: None,
            agent_sent_log: None,
            model_calls: None,
            sdk_host: Err(Unhosted("the local stack is not running".into())),
            sdks: Vec::new().into(),
            browser_host: Err(Unhosted("the local stack is not running".into())),
            fence: Default::default(),
            server: None,
            sandboxes: None,
            components: Vec::new(),
        },
        skipped_targets: Vec::new(),
        agent_skips: Vec::new(),
        server_version: None,
        logs: Vec::new(),
        workers: Vec::new(),
        jobs,
    })
}
/// How many cells run at once on a deployment: `--jobs` (or `[run] jobs`,
/// default 1) cells of `independent` targets; with none, one at a time,
/// and a message when more were asked.
pub(super) fn jobs(
    args: &RunArgs,
    defaults: &crate::config::RunDefaults,
    targets: &[Target],
) -> usize {
    let asked = args.jobs.or(defaults.jobs).unwrap_or(1) as usize;
    let independent = targets.iter().filter(|t| t.independent).count();
    if asked > 1 && independent < asked {
        crate::console::errln(&format!(
            "continuity: --jobs {asked}: {independent} of the {} targets {} `independent = true` (one shared deployment), so at most {} cell{} at once",
            targets.len(),
            if independent == 1 { "is" } else { "are" },
            independent.max(1),
            if independent > 1 { "s" } else { "" },
        ));
    }
    asked
}
