//! Tests that need only the built binary and in-test servers.

mod agent_stdio;
mod bad_input;
mod bisect_input;
mod candidate_input;
mod ci_job;
mod command_env;
mod completions;
mod cost_shards;
mod docs_links;
mod exit_code_table;
mod hang_standins;
mod hostile_outputs;
mod process_probes;
mod quarantine;
mod report_v2;
mod secrets_e2e;
mod show_cli;
mod stream_diagnosis;
mod terminal_hostile;
mod terminal_width;
mod transport_hostile;
mod workflows;
