//! The real ACP agents the local stack can run behind sandbox-agent —
//! opencode, Claude Code (claude-agent-acp) and Codex (codex-acp) — each
//! installed once from the npm registry at a pinned version into the cache,
//! then wired into sandbox-agent's data folder: the `agent_processes/<agent>-acp`
//! launcher it execs, and the stand-in native binary whose presence stops it
//! from downloading one. Each agent gets its own HOME and config folders in
//! the run folder, pointed at the fake model provider, with every offline
//! switch its version needs, so nothing reaches beyond loopback.
//!
//! Over 400 lines on purpose: each real agent's install, its wiring
//! (launcher, HOME and config pointed at the fake model provider, the
//! offline switches) and the sweep of its processes by owner tag follow one
//! table (`REAL`) and share the same script writers: a new agent is a row
//! and its `wire_*` here.

use super::npm;
use super::progress::Note;
use super::StackError;
use crate::errors::Invalid;
use crate::report::RunFolder;
use crate::secret::Redactor;
use std::path::{Path, PathBuf};

/// Agent names `--agent` accepts: the scripted agent and the real ones.
pub(crate) const KNOWN: [&str; 4] = ["mock", "opencode", "claude", "codex"];

/// The environment variable every launched agent process carries, naming
/// its stack, so a /proc scan finds the ones that outlived the server.
pub(crate) const OWNER_VAR: &str = "CONTINUITY_AGENT_OWNER";

/// One real agent: its npm package, pinned version and approximate size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RealAgent {
    pub name: &'static str,
    pub package: &'static str,
    pub version: &'static str,
    pub download: &'static str,
}

/// The real agents, pinned.
pub(crate) const REAL: [RealAgent; 3] = [
    RealAgent {
        name: "opencode",
        package: "opencode-ai",
        version: "1.18.33",
        download: "~185 MB download, ~350 MB installed",
    },
    RealAgent {
        name: "claude",
        package: "@zed-industries/claude-agent-acp",
        version: "0.20.0",
        download: "~100 MB installed",
    },
    RealAgent {
        name: "codex",
        package: "@zed-industries/codex-acp",
        version: "0.16.0",
        download: "~220 MB installed",
    },
];

/// The real agent called `name` (`None` for `mock` and unknown names).
pub(crate) fn real(name: &str) -> Option<RealAgent> {
    REAL.iter().copied().find(|a| a.name == name)
}

/// `unknown agent "x" (known: mock, opencode, claude, codex)` for a bad name.
pub(crate) fn check_known(name: &str) -> Result<(), Invalid> {
    if KNOWN.contains(&name) {
        Ok(())
    } else {
        Err(Invalid(format!(
            "unknown agent {name:?} (known: {})",
            KNOWN.join(", ")
        )))
    }
}

impl RealAgent {
    fn slot(&self) -> String {
        format!("agent-{}-{}", self.name, self.version)
    }

    /// The npm spec, `package@version`.
    pub(crate) fn spec(&self) -> String {
        format!("{}@{}", self.package, self.version)
    }

    /// What a user runs to retry a failed install by hand.
    pub(crate) fn retry_command(&self) -> String {
        format!(
            "npm install --no-save --prefix {} {}",
            npm::cache_dir().join("npm").join(self.slot()).display(),
            self.spec()
        )
    }

    /// Installs the package (first use only) and returns its folder.
    pub(crate) fn install(&self, progress: &mut dyn FnMut(Note)) -> Result<PathBuf, StackError> {
        let fresh = !npm::cache_dir()
            .join("npm")
            .join(self.slot())
            .join(".continuity-complete")
            .is_file();
        if fresh {
            progress(Note::Step(format!(
                "agent {}: installing {} from the npm registry ({})",
                self.name,
                self.spec(),
                self.download
            )));
        }
        let dir = npm::ensure_installed(&self.slot(), &[self.spec()], progress).map_err(|e| {
            StackError::AgentInstall {
                spec: self.spec(),
                summary: summarize(&e.to_string()),
                source: Box::new(e),
            }
        })?;
        if fresh {
            progress(Note::Step(format!(
                "agent {}: {} MB on disk in {}",
                self.name,
                folder_size(&dir) / 1_000_000,
                dir.display()
            )));
        }
        Ok(dir)
    }
}

/// npm's failure in one line: its first line and the error code and cause
/// lines, without the stack trace (the whole text is in npm's own log).
fn summarize(error: &str) -> String {
    let mut lines = error.lines();
    let mut kept: Vec<&str> = lines.next().into_iter().collect();
    kept.extend(lines.filter(|l| {
        l.starts_with("npm error code") || l.contains("FetchError") || l.contains("E404")
    }));
    kept.join(" ").trim_end_matches(':').to_string()
}

fn folder_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

/// Where a wired agent lives: sandbox-agent's data folder, the agent's own
/// state folder (kept across restarts), the provider's port, and the owner mark.
pub(crate) struct Wiring<'a> {
    /// sandbox-agent's `XDG_DATA_HOME`.
    pub data: &'a Path,
    /// This agent's HOME and config live under `state/<agent>/`.
    pub state: &'a Path,
    pub provider_port: u16,
    pub owner: &'a str,
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn exports(vars: &[(&str, String)]) -> String {
    vars.iter()
        .map(|(k, v)| format!("export {k}={}\n", shell_quote(v)))
        .collect()
}

fn write_script(folder: &RunFolder, name: &Path, text: &str) -> Result<PathBuf, StackError> {
    use std::os::unix::fs::PermissionsExt;
    let path = folder
        .write_text(name, text)
        .map_err(StackError::io(format!("cannot write {}", name.display())))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .map_err(StackError::io(format!("cannot chmod {}", path.display())))?;
    Ok(path)
}

/// Writes `agent`'s launcher, stand-in native binary and config into `wiring`.
pub(crate) fn wire(
    agent: RealAgent,
    installed: &Path,
    wiring: &Wiring<'_>,
) -> Result<(), StackError> {
    let bin = wiring.data.join("sandbox-agent").join("bin");
    let launchers = RunFolder::open(&bin, Redactor::none());
    let home = wiring.state.join(agent.name);
    let state = RunFolder::open(&home, Redactor::none());
    for dir in ["home", "config", "data", "cache", "state"] {
        std::fs::create_dir_all(home.join(dir)).map_err(StackError::io(format!(
            "cannot create {}",
            home.join(dir).display()
        )))?;
    }
    let port = wiring.provider_port;
    let node = npm::which("node").ok_or_else(|| {
        StackError::NotInstalled("node is not installed (Debian: apt-get install -y nodejs)".into())
    })?;
    let path_var = std::env::var("PATH").unwrap_or_default();
    let mut env: Vec<(&str, String)> = vec![
        (OWNER_VAR, wiring.owner.to_string()),
        ("PATH", path_var),
        ("HOME", home.join("home").display().to_string()),
    ];
    let at = AgentHome {
        modules: installed.join("node_modules"),
        home: &home,
        state: &state,
        launchers: &launchers,
        port,
        node: &node,
    };
    let (native, exec_line) = match agent.name {
        "opencode" => wire_opencode(&at, &mut env)?,
        "claude" => wire_claude(&at, &mut env)?,
        "codex" => wire_codex(&at, &mut env)?,
        other => return Err(Invalid(format!("{other} is not a real agent")).into()),
    };
    write_script(&launchers, Path::new(agent.name), &native)?;
    let mut launcher = format!(
        "#!/bin/sh\n# Written by continuity: {} behind sandbox-agent, offline, on the fake provider.\n",
        agent.spec()
    );
    launcher.push_str(&exports(&env));
    launcher.push_str(&format!(
        "cd {}\n",
        shell_quote(&home.display().to_string())
    ));
    launcher.push_str(&exec_line);
    write_script(
        &launchers,
        &Path::new("agent_processes").join(format!("{}-acp", agent.name)),
        &launcher,
    )?;
    Ok(())
}

/// Where one real agent is wired: its installed packages, its own state
/// folder (HOME and config), the launchers' folder, the fake provider's
/// port and `node`.
struct AgentHome<'a> {
    modules: PathBuf,
    home: &'a Path,
    state: &'a RunFolder,
    launchers: &'a RunFolder,
    port: u16,
    node: &'a Path,
}

/// A wired agent's stand-in native binary and its launcher's last line.
type Launch = (String, String);

/// opencode: its binary, its config on the fake provider, XDG folders of
/// its own and every switch that keeps it offline.
fn wire_opencode(at: &AgentHome<'_>, env: &mut Vec<(&str, String)>) -> Result<Launch, StackError> {
    let AgentHome {
        modules,
        home,
        state,
        port,
        ..
    } = at;
    let port = *port;
    let binary = modules.join("opencode-linux-x64/bin/opencode");
    npm::make_executable(&binary)?;
    let config = home.join("config/opencode/opencode.json");
    state
        .write_text("config/opencode/opencode.json", &opencode_config(port))
        .map_err(StackError::io(format!("cannot write {}", config.display())))?;
    for (key, dir) in [
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_STATE_HOME", "state"),
    ] {
        env.push((key, home.join(dir).display().to_string()));
    }
    env.push(("OPENCODE_CONFIG", config.display().to_string()));
    for switch in OPENCODE_OFFLINE {
        env.push((switch, "1".into()));
    }
    // opencode looks up a plugin's packument on every start: keep it on loopback (a 404).
    env.push((
        "NPM_CONFIG_REGISTRY",
        format!("http://127.0.0.1:{port}/npm/"),
    ));
    let stand_in = format!(
        "#!/bin/sh\nexec {} \"$@\"\n",
        shell_quote(&binary.display().to_string())
    );
    Ok((
        stand_in,
        format!(
            "exec {} acp \"$@\"\n",
            shell_quote(&binary.display().to_string())
        ),
    ))
}

/// claude: the ACP adapter on node, and a wrapper that gives Claude Code
/// back the environment the SDK strips.
fn wire_claude(at: &AgentHome<'_>, env: &mut Vec<(&str, String)>) -> Result<Launch, StackError> {
    let AgentHome {
        modules,
        home,
        launchers,
        port,
        node,
        ..
    } = at;
    let port = *port;
    let adapter = modules.join("@zed-industries/claude-agent-acp/dist/index.js");
    let cli = modules.join("@anthropic-ai/claude-agent-sdk/cli.js");
    let claude_env = claude_env(home, port);
    env.extend(claude_env.iter().map(|(k, v)| (*k, v.clone())));
    // The SDK starts Claude Code with only CLAUDE_CODE_ENTRYPOINT in its
    // environment: this wrapper puts the rest back.
    let mut wrapper = String::from(
        "#!/bin/sh\n# Written by continuity: CLAUDE_CODE_EXECUTABLE for claude-agent-acp.\n",
    );
    wrapper.push_str(&exports(env));
    wrapper.push_str(&format!(
        "exec {} {} \"$@\" 2>>{}\n",
        shell_quote(&node.display().to_string()),
        shell_quote(&cli.display().to_string()),
        shell_quote(&home.join("claude-cli.stderr.log").display().to_string())
    ));
    let wrapper_path = write_script(launchers, Path::new("claude-cli-wrapper"), &wrapper)?;
    env.push(("CLAUDE_CODE_EXECUTABLE", wrapper_path.display().to_string()));
    Ok((
        format!(
            "#!/bin/sh\nexec {} \"$@\"\n",
            shell_quote(&wrapper_path.display().to_string())
        ),
        format!(
            "exec {} {} \"$@\"\n",
            shell_quote(&node.display().to_string()),
            shell_quote(&adapter.display().to_string())
        ),
    ))
}

/// codex: the codex-acp binary with its `CODEX_HOME` on the fake provider.
fn wire_codex(at: &AgentHome<'_>, env: &mut Vec<(&str, String)>) -> Result<Launch, StackError> {
    let AgentHome {
        modules,
        home,
        state,
        port,
        ..
    } = at;
    let port = *port;
    let binary = modules.join("@zed-industries/codex-acp-linux-x64/bin/codex-acp");
    npm::make_executable(&binary)?;
    let codex_home = home.join("codex");
    state
        .write_text("codex/config.toml", &codex_config(port))
        .map_err(StackError::io(format!(
            "cannot write {}",
            codex_home.display()
        )))?;
    env.push(("CODEX_HOME", codex_home.display().to_string()));
    env.push(("FAKE_API_KEY", "fake-key".into()));
    env.push(("OPENAI_API_KEY", "fake-key".into()));
    Ok((
        "#!/bin/sh\necho 'codex-cli 0.137.0 (continuity stand-in: codex-acp embeds codex core)'\n"
            .to_string(),
        format!(
            "exec {} \"$@\"\n",
            shell_quote(&binary.display().to_string())
        ),
    ))
}

const OPENCODE_OFFLINE: [&str; 8] = [
    "OPENCODE_DISABLE_MODELS_FETCH",
    "OPENCODE_DISABLE_AUTOUPDATE",
    "OPENCODE_DISABLE_SHARE",
    "OPENCODE_DISABLE_LSP_DOWNLOAD",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_CLAUDE_CODE",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS",
    "OPENCODE_DISABLE_EMBEDDED_WEB_UI",
];

fn claude_env(home: &Path, port: u16) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("HOME", home.join("home").display().to_string()),
        (
            "CLAUDE_CONFIG_DIR",
            home.join("config").display().to_string(),
        ),
        ("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}")),
        ("ANTHROPIC_API_KEY", "sk-ant-fake".into()),
        ("ANTHROPIC_MODEL", "claude-fake".into()),
        ("ANTHROPIC_SMALL_FAST_MODEL", "claude-fake".into()),
    ];
    for switch in [
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "DISABLE_TELEMETRY",
        "DISABLE_ERROR_REPORTING",
        "DISABLE_AUTOUPDATER",
        "DISABLE_BUG_COMMAND",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE",
        // Claude Code refuses to skip permissions as root unless it is told it is sandboxed.
        "IS_SANDBOX",
    ] {
        env.push((switch, "1".into()));
    }
    env
}

fn opencode_config(port: u16) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "model": "fake/fake-model",
        "small_model": "fake/fake-model",
        "autoupdate": false,
        "share": "disabled",
        "enabled_providers": ["fake"],
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
        "provider": {"fake": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "continuity fake provider",
            "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "fake-key"},
            "models": {"fake-model": {"name": "Fake Model", "tool_call": true,
                "limit": {"context": 128000, "output": 4096}}}
        }}
    }))
    .unwrap_or_default()
}

fn codex_config(port: u16) -> String {
    format!(
        r#"model = "gpt-5.4-mini"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[otel]
exporter = "none"

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"#
    )
}

/// Processes carrying `owner` in their environment (the agents this stack
/// launched, and their children), found by a /proc scan.
pub(crate) fn owned_processes(owner: &str) -> Vec<i32> {
    let needle = format!("{OWNER_VAR}={owner}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| crate::supervise::owner::environ_holds(pid, &needle))
        .filter(|pid| !is_zombie(*pid))
        .collect()
}

/// Whether `pid` exists and is not a zombie.
pub(crate) fn is_running(pid: i32) -> bool {
    !is_zombie(pid)
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
        .unwrap_or(true)
}

/// Kills (SIGKILL) every process `owner` marks; returns how many there were.
pub(crate) fn reap(owner: &str) -> usize {
    let pids = owned_processes(owner);
    for &pid in &pids {
        // A pid whose environment carries this stack's own mark.
        let _ = crate::supervise::os::signal_process(pid, crate::signal::Signal::KILL.number());
    }
    pids.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_pass_and_others_list_them() {
        for name in KNOWN {
            assert!(check_known(name).is_ok());
        }
        assert_eq!(
            check_known("Claude").unwrap_err().to_string(),
            "unknown agent \"Claude\" (known: mock, opencode, claude, codex)"
        );
        assert!(real("mock").is_none());
        assert_eq!(
            real("codex").unwrap().spec(),
            "@zed-industries/codex-acp@0.16.0"
        );
    }

    #[test]
    fn an_npm_failure_reads_in_one_line_without_the_stack_trace() {
        let text = "npm install in /x failed (exit status: 1):\nnpm error code ECONNREFUSED\nnpm error syscall connect\nnpm error FetchError: request to http://127.0.0.1:9/x failed\nnpm error     at ClientRequest.<anonymous>";
        assert_eq!(
            summarize(text),
            "npm install in /x failed (exit status: 1): npm error code ECONNREFUSED npm error FetchError: request to http://127.0.0.1:9/x failed"
        );
    }

    #[test]
    fn wiring_writes_launcher_stand_in_and_offline_config_inside_the_given_folders() {
        let dir = tempfile::tempdir().unwrap();
        let installed = dir.path().join("installed");
        let binary =
            installed.join("node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp");
        std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
        std::fs::write(&binary, "#!/bin/sh\n").unwrap();
        let (data, state) = (dir.path().join("data"), dir.path().join("state"));
        let wiring = Wiring {
            data: &data,
            state: &state,
            provider_port: 4321,
            owner: "o-1",
        };
        wire(real("codex").unwrap(), &installed, &wiring).unwrap();
        let bin = data.join("sandbox-agent/bin");
        let launcher = std::fs::read_to_string(bin.join("agent_processes/codex-acp")).unwrap();
        assert!(
            launcher.contains("export CONTINUITY_AGENT_OWNER='o-1'"),
            "{launcher}"
        );
        assert!(launcher.contains(&format!(
            "export CODEX_HOME='{}'",
            state.join("codex/codex").display()
        )));
        assert!(launcher.ends_with(&format!("exec '{}' \"$@\"\n", binary.display())));
        assert!(bin.join("codex").is_file(), "the stand-in native binary");
        let config = std::fs::read_to_string(state.join("codex/codex/config.toml")).unwrap();
        assert!(
            config.contains("base_url = \"http://127.0.0.1:4321/v1\""),
            "{config}"
        );
        assert!(config.contains("wire_api = \"responses\""));
    }
}
