//! Tests that start the real programs (sandbox-agent, the local stack,
//! real agents, Chromium); they fail loudly when one cannot start.

mod bad_input_e2e;
mod bisect_e2e;
mod browser_e2e;
mod candidate_e2e;
mod checker_e2e;
mod client_real_server;
mod clients_e2e;
mod diagnosis_e2e;
mod faults_e2e;
mod gate_e2e;
mod hang_e2e;
mod hosted_wire_e2e;
mod hygiene_e2e;
mod jobs_e2e;
mod long_turn_e2e;
mod matrix_e2e;
mod mid_turn_e2e;
mod nemesis_e2e;
mod persist_e2e;
mod progress_tty;
mod real_agents_e2e;
mod reload_race_e2e;
mod report_html_browser;
mod rerun_e2e;
mod restart_verified_e2e;
mod run_e2e;
mod sandbox_real_server;
mod sdk_provider_e2e;
mod sdk_steps_e2e;
mod seed_e2e;
mod shard_e2e;
mod stack_e2e;
