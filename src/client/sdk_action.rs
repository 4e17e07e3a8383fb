//! The actions continuity asks of the real SDK's host, typed on our side:
//! the `sdkClient` actor (`stack/rivet/sdk-client.mjs`) and the browser
//! client's page API (`stack/browser/page.mjs`) answer the same actions.
//! One variant per action with the arguments the JS reads, serialised to
//! the JSON those scripts take (the same bytes the string-keyed maps sent
//! before), and the answers the scenario steps read back.
//!
//! Over 400 lines on purpose: it is the one typed list of what the SDK hosts
//! are asked (`SdkAction`, one variant per action of `sdk-client.mjs` and
//! `page.mjs`, and its arguments) with each answer's struct beside it
//! (`Created`, `Prompted`, ..., `SdkError`): a new action changes both
//! together.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One action and its arguments. Every action carries the phase it runs
/// for (the actor records its faults and wire under it); the client's
/// actions name the scenario's client (`client`) and, for a session, its
/// id (`id`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub(crate) enum SdkAction {
    /// A new SDK client named `client`, on `base_url`.
    Connect {
        phase: String,
        client: String,
        base_url: String,
        /// The SDK module the actor imports (the cell's SDK point).
        #[serde(skip_serializing_if = "Option::is_none")]
        sdk: Option<String>,
        /// The `SessionPersistDriver` the client keeps sessions in.
        #[serde(skip_serializing_if = "Option::is_none")]
        persist: Option<Value>,
        /// Headers every request of the client carries, by name.
        #[serde(skip_serializing_if = "Option::is_none")]
        headers: Option<Map<String, Value>>,
        /// undici's `headersTimeout` for the client's `fetch`, lowered
        /// through a dispatcher (a `client-headers-timeout` cell).
        #[serde(skip_serializing_if = "Option::is_none")]
        headers_timeout_ms: Option<u64>,
    },
    CreateSession {
        phase: String,
        client: String,
        id: String,
        agent: String,
        cwd: String,
    },
    Prompt {
        phase: String,
        client: String,
        id: String,
        text: String,
    },
    GetEvents {
        phase: String,
        client: String,
        id: String,
        limit: usize,
    },
    ResumeSession {
        phase: String,
        client: String,
        id: String,
    },
    DestroySession {
        phase: String,
        client: String,
        id: String,
    },
    /// Every stored event of a session, each as its JSON text.
    History {
        phase: String,
        client: String,
        id: String,
    },
    Health {
        phase: String,
        client: String,
    },
    /// `session.prompt` started and left running as turn `turn`.
    StartTurn {
        phase: String,
        client: String,
        id: String,
        text: String,
        turn: String,
    },
    /// Turn `turn`'s outcome, waited for up to `wait_ms`.
    AwaitTurn {
        phase: String,
        turn: String,
        wait_ms: u64,
    },
    /// `runProcess` of `pwd`.
    Probe {
        phase: String,
        client: String,
    },
    /// `mkdirFs` of its folder, then `writeFsFile`.
    WriteFile {
        phase: String,
        client: String,
        path: String,
        content: String,
    },
    /// `readFsFile` (and `listFsEntries` of its folder).
    ReadFile {
        phase: String,
        client: String,
        path: String,
    },
    /// `createProcess`.
    SpawnProcess {
        phase: String,
        client: String,
        command: String,
        args: Vec<String>,
        tty: bool,
        env: Map<String, Value>,
    },
    /// `listProcesses`, `getProcess`, `getProcessLogs`.
    ProcessStatus {
        phase: String,
        client: String,
        process_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        logs_contain: Option<String>,
    },
    /// `connectProcessTerminal`, until its `ready` frame (up to `wait_ms`).
    TerminalAttach {
        phase: String,
        client: String,
        terminal: String,
        process_id: String,
        wait_ms: u64,
    },
    /// `sendInput` of a line on the terminal.
    TerminalSend {
        phase: String,
        terminal: String,
        text: String,
    },
    /// `text` (default: the line last sent) back on the terminal within `wait_ms`.
    TerminalExpect {
        phase: String,
        terminal: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        wait_ms: u64,
    },
    /// The old socket's fate, then a new `connectProcessTerminal` to the
    /// process the terminal was attached to: `process_id`, which the host
    /// has lost with its own restart (the Rivet app, a reloaded page).
    TerminalReattach {
        phase: String,
        client: String,
        terminal: String,
        process_id: String,
        wait_ms: u64,
        scrollback_ms: u64,
    },
    Dispose {
        phase: String,
        client: String,
    },
    /// One `SessionPersistDriver` call (`call`, its arguments as a JSON
    /// text) on the driver `persist` names: the persist contract.
    #[cfg(test)]
    Store {
        phase: String,
        persist: Value,
        call: String,
        args_json: String,
    },
    /// `SandboxAgent.start({ sandbox })` with the stack's own provider,
    /// whose back end is the harness's sandbox service at `service_url`;
    /// the client's `sandboxId` is persisted by its host.
    StartSandbox {
        phase: String,
        client: String,
        service_url: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        sdk: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        persist: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        headers: Option<Map<String, Value>>,
    },
    /// The reconnect route on the client's persisted `sandboxId`:
    /// `SandboxAgent.start({ sandbox, sandboxId })`, then `pwd` within `probe_ms`.
    ReattachSandbox {
        phase: String,
        client: String,
        service_url: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        sdk: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        persist: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        headers: Option<Map<String, Value>>,
        probe_ms: u64,
    },
    /// `destroySandbox()`.
    DestroySandbox {
        phase: String,
        client: String,
    },
    /// The unhandled rejections recorded so far (and: is the actor there).
    Faults {
        phase: String,
    },
    /// The wire records the harness has not acknowledged.
    Wire {
        phase: String,
    },
    /// The running phase's call hung: the host's own waits (a turn's
    /// await) end now, so that action answers with what it saw.
    CutWaits {
        phase: String,
    },
    /// The cell is over: its clients closed, the actor destroyed.
    Retire {
        phase: String,
    },
}

impl SdkAction {
    /// The action's name, as the actor and the page API know it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            SdkAction::Connect { .. } => "connect",
            SdkAction::CreateSession { .. } => "createSession",
            SdkAction::Prompt { .. } => "prompt",
            SdkAction::GetEvents { .. } => "getEvents",
            SdkAction::ResumeSession { .. } => "resumeSession",
            SdkAction::DestroySession { .. } => "destroySession",
            SdkAction::History { .. } => "history",
            SdkAction::Health { .. } => "health",
            SdkAction::StartTurn { .. } => "startTurn",
            SdkAction::AwaitTurn { .. } => "awaitTurn",
            SdkAction::Probe { .. } => "probe",
            SdkAction::WriteFile { .. } => "writeFile",
            SdkAction::ReadFile { .. } => "readFile",
            SdkAction::SpawnProcess { .. } => "spawnProcess",
            SdkAction::ProcessStatus { .. } => "processStatus",
            SdkAction::TerminalAttach { .. } => "terminalAttach",
            SdkAction::TerminalSend { .. } => "terminalSend",
            SdkAction::TerminalExpect { .. } => "terminalExpect",
            SdkAction::TerminalReattach { .. } => "terminalReattach",
            SdkAction::Dispose { .. } => "dispose",
            #[cfg(test)]
            SdkAction::Store { .. } => "store",
            SdkAction::StartSandbox { .. } => "startSandbox",
            SdkAction::ReattachSandbox { .. } => "reattachSandbox",
            SdkAction::DestroySandbox { .. } => "destroySandbox",
            SdkAction::Faults { .. } => "faults",
            SdkAction::Wire { .. } => "wire",
            SdkAction::CutWaits { .. } => "cutWaits",
            SdkAction::Retire { .. } => "retire",
        }
    }

    /// The phase the action runs for.
    pub(crate) fn phase(&self) -> &str {
        match self {
            SdkAction::Connect { phase, .. }
            | SdkAction::CreateSession { phase, .. }
            | SdkAction::Prompt { phase, .. }
            | SdkAction::GetEvents { phase, .. }
            | SdkAction::ResumeSession { phase, .. }
            | SdkAction::DestroySession { phase, .. }
            | SdkAction::History { phase, .. }
            | SdkAction::Health { phase, .. }
            | SdkAction::StartTurn { phase, .. }
            | SdkAction::AwaitTurn { phase, .. }
            | SdkAction::Probe { phase, .. }
            | SdkAction::WriteFile { phase, .. }
            | SdkAction::ReadFile { phase, .. }
            | SdkAction::SpawnProcess { phase, .. }
            | SdkAction::ProcessStatus { phase, .. }
            | SdkAction::TerminalAttach { phase, .. }
            | SdkAction::TerminalSend { phase, .. }
            | SdkAction::TerminalExpect { phase, .. }
            | SdkAction::TerminalReattach { phase, .. }
            | SdkAction::Dispose { phase, .. }
            | SdkAction::StartSandbox { phase, .. }
            | SdkAction::ReattachSandbox { phase, .. }
            | SdkAction::DestroySandbox { phase, .. }
            | SdkAction::Faults { phase }
            | SdkAction::Wire { phase }
            | SdkAction::CutWaits { phase }
            | SdkAction::Retire { phase } => phase,
            #[cfg(test)]
            SdkAction::Store { phase, .. } => phase,
        }
    }
}

/// What goes to the actor (or the page) for one call: the action's
/// arguments, the SDK call's own bound for a scenario action, and which
/// wire records the harness already holds.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ActionArgs<'a> {
    #[serde(flatten)]
    pub action: &'a SdkAction,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire_ack: Option<Value>,
}

/// `createSession`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Created {
    pub session_id: Option<Value>,
    pub agent_session_id: Option<Value>,
}

/// `prompt`'s answer: the stop reason, the session handle the SDK used
/// (`cached`, `resumed`, …) and whether the actor built its client anew.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Prompted {
    pub stop_reason: Option<Value>,
    pub handle: Option<Value>,
    pub client_rebuilt: Option<Value>,
}

/// `resumeSession`'s answer: `same_handle` or `recreated`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Resumed {
    pub action: Option<Value>,
}

/// `health`'s answer: the SDK's `getHealth()`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Healthy {
    pub health: Option<Value>,
}

/// `startTurn`'s answer: the session handle the SDK used.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct TurnStarted {
    pub handle: Option<Value>,
    pub client_rebuilt: Option<Value>,
}

/// `awaitTurn`'s answer: `completed` (with the SDK's stop reason),
/// `failed` (with its error) or `lost` (the prompt still pending), and what
/// the SDK delivered meanwhile through `session.onEvent`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct TurnAwaited {
    pub turn_outcome: Option<String>,
    pub stop_reason: Option<String>,
    pub error: Option<SdkError>,
    pub turn_ms: Option<u64>,
    pub events_seen: Option<u64>,
    /// The texts of the `agent_message_chunk` events the SDK delivered.
    pub chunks: Vec<String>,
    /// From the SDK's wire: how the prompt's answer first arrived (`post`,
    /// `stream`, `resumed stream`; `None`: never, or no wire to say).
    pub answered_via: Option<String>,
    /// The ACP server id the prompt went to.
    pub server_id: Option<String>,
    /// The last stream event id the SDK had when the prompt went out.
    pub last_event_id: Option<String>,
}

/// `probe`'s answer: the SDK's `ProcessRunResponse`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Probed {
    pub run: Option<Value>,
}

/// `readFile`'s answer: the bytes read (as text) and whether the folder lists it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ReadBack {
    pub content: Option<String>,
    pub listed: Option<bool>,
}

/// `spawnProcess`'s answer: the SDK's `ProcessInfo`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Spawned {
    pub process: Option<Value>,
}

/// `processStatus`'s answer: listed, then the SDK's `ProcessInfo` (or
/// `getProcess`'s error) and its logs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ProcessSeen {
    pub listed: Option<bool>,
    pub process: Option<Value>,
    pub process_error: Option<SdkError>,
    pub log_entries: Option<usize>,
    pub log_text: Option<String>,
}

/// One call the SDK made of the stack's provider, and what its back end answered.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ProviderCall {
    /// `create`, `reconnect`, `getUrl`, `ensureServer`, `destroy`.
    pub call: String,
    /// `start` (inside `SandboxAgent.start`), `health-wait` (the client's
    /// health wait, after three failed checks) or `client` (`destroySandbox`).
    pub caller: String,
    pub sandbox_id: Option<String>,
    pub status: Option<u16>,
    pub answer: Option<Value>,
    pub ms: Option<u64>,
}

/// `startSandbox`'s answer: the SDK's `sandboxId` and the provider's calls.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct SandboxStarted {
    pub sandbox_id: Option<String>,
    pub calls: Vec<ProviderCall>,
}

/// `reattachSandbox`'s answer: the status (`connected`, `expired`,
/// `no_sandbox`), the probe's run, why it expired, the provider's calls.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct SandboxReattached {
    pub status: Option<String>,
    pub sandbox_id: Option<String>,
    pub reattach_ms: Option<u64>,
    pub probe: Option<Value>,
    pub reason: Option<SdkError>,
    pub calls: Vec<ProviderCall>,
}

/// `destroySandbox`'s answer: the provider's calls.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct SandboxDestroyed {
    pub calls: Vec<ProviderCall>,
}

/// `retire`'s answer: the unhandled rejections the actor app recorded.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Retired {
    pub faults: Vec<Value>,
}

/// An answer read as `T`; absent fields read as their defaults. An answer
/// that does not read (a field of the wrong type) is an error the step
/// reports: read as defaults, it would become a blank detail that hides
/// what the host said.
pub(crate) fn answer<T: for<'de> Deserialize<'de> + Default>(
    out: &Map<String, Value>,
) -> Result<T, serde_json::Error> {
    serde_json::from_value(Value::Object(out.clone()))
}

/// An error the SDK raised (or the actor's own bound on an action), as the actor reports it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct SdkError {
    pub name: String,
    pub message: String,
    /// `SandboxAgentError` / `AcpHttpError`: the HTTP status.
    #[serde(default)]
    pub status: Option<u16>,
    /// The problem document (`type`, `title`, `detail`), when the server sent one.
    #[serde(default)]
    pub problem: Option<Value>,
    /// `AcpRpcError`: the JSON-RPC code (other errors may carry a string code).
    #[serde(default)]
    pub code: Option<Value>,
    #[serde(default)]
    pub cause: Option<Box<SdkError>>,
}

impl SdkError {
    /// The error and its causes, outermost first.
    pub(crate) fn chain(&self) -> impl Iterator<Item = &SdkError> {
        std::iter::successors(Some(self), |e| e.cause.as_deref())
    }

    /// The first HTTP status in the chain.
    pub(crate) fn http_status(&self) -> Option<u16> {
        self.chain().find_map(|e| e.status)
    }

    /// The first problem `type` in the chain.
    pub(crate) fn problem_type(&self) -> Option<String> {
        self.chain().find_map(|e| {
            e.problem
                .as_ref()
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
    }

    /// The first JSON-RPC (numeric) code in the chain.
    pub(crate) fn rpc_code(&self) -> Option<i64> {
        self.chain()
            .find_map(|e| e.code.as_ref().and_then(Value::as_i64))
    }

    /// `Name: message; cause: Name: message …`.
    pub(crate) fn describe(&self) -> String {
        self.chain()
            .map(|e| format!("{}: {}", e.name, e.message))
            .collect::<Vec<_>>()
            .join("; cause: ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sent(action: &SdkAction, timeout_ms: Option<u64>, wire_ack: Option<Value>) -> String {
        serde_json::to_string(&ActionArgs {
            action,
            timeout_ms,
            wire_ack,
        })
        .unwrap()
    }

    /// The typed actions send exactly the bytes the maps built by hand sent.
    #[test]
    fn each_action_serialises_to_the_json_the_actor_reads() {
        let mut headers = Map::new();
        headers.insert("x-team".into(), "a".into());
        let connect = SdkAction::Connect {
            phase: "connect".into(),
            client: "a".into(),
            base_url: "http://127.0.0.1:1".into(),
            sdk: Some("/m.mjs".into()),
            persist: Some(json!({"kind": "sqlite"})),
            headers: Some(headers),
            headers_timeout_ms: Some(2000),
        };
        assert_eq!(connect.name(), "connect");
        assert_eq!(
            sent(&connect, Some(5000), Some(Value::Null)),
            r#"{"phase":"connect","client":"a","baseUrl":"http://127.0.0.1:1","sdk":"/m.mjs","persist":{"kind":"sqlite"},"headers":{"x-team":"a"},"headersTimeoutMs":2000,"timeoutMs":5000,"wireAck":null}"#
        );
        let bare = SdkAction::Connect {
            phase: "c".into(),
            client: "a".into(),
            base_url: "u".into(),
            sdk: None,
            persist: None,
            headers: None,
            headers_timeout_ms: None,
        };
        assert_eq!(
            sent(&bare, None, None),
            r#"{"phase":"c","client":"a","baseUrl":"u"}"#
        );
        let prompt = SdkAction::Prompt {
            phase: "p".into(),
            client: "a".into(),
            id: "s-1".into(),
            text: "hi".into(),
        };
        assert_eq!(
            sent(&prompt, Some(1), Some(json!({"origin": "o", "seq": 2}))),
            r#"{"phase":"p","client":"a","id":"s-1","text":"hi","timeoutMs":1,"wireAck":{"origin":"o","seq":2}}"#
        );
        let store = SdkAction::Store {
            phase: "contract".into(),
            persist: json!(null),
            call: "getSession".into(),
            args_json: "[\"x\"]".into(),
        };
        assert_eq!(
            sent(&store, None, None),
            r#"{"phase":"contract","persist":null,"call":"getSession","argsJson":"[\"x\"]"}"#
        );
        let events = SdkAction::GetEvents {
            phase: "g".into(),
            client: "a".into(),
            id: "s".into(),
            limit: 100,
        };
        assert_eq!(
            (events.name(), sent(&events, None, None).as_str()),
            (
                "getEvents",
                r#"{"phase":"g","client":"a","id":"s","limit":100}"#
            )
        );
        let retire = SdkAction::Retire {
            phase: "retire".into(),
        };
        assert_eq!(sent(&retire, None, None), r#"{"phase":"retire"}"#);
    }

    #[test]
    fn absent_fields_read_as_defaults_and_a_wrong_shape_is_an_error() {
        let out = json!({"ok": true, "stopReason": "end_turn", "handle": "cached"});
        let prompted: Prompted = answer(out.as_object().unwrap()).unwrap();
        assert_eq!(prompted.stop_reason, Some(json!("end_turn")));
        assert_eq!(prompted.client_rebuilt, None);
        let odd = json!({"ok": true, "faults": "not a list"});
        let error = answer::<Retired>(odd.as_object().unwrap()).unwrap_err();
        assert!(error.to_string().contains("invalid type"), "{error}");
    }
}
