//! The real SDK's provider path (`--client ts-sdk` and `--client browser`):
//! `SandboxAgent.start` with the stack's own `SandboxProvider`
//! (`stack/rivet/sandbox-provider.mjs`), whose back end is the harness's
//! sandbox service ([`crate::stack::sandboxes`]). A sandbox is started and
//! its `sandboxId` persisted by the client's host; after a restart the
//! host's reconnect route reattaches by that id and says the reconnect
//! design's status; `destroySandbox` ends it. Each phase records every call
//! the SDK made of the provider, with what the back end answered, and who
//! brought a server that was down back (an `ensureServer` of the SDK's).

use super::super::{RunningCell, StepFailure, StepResult};
use super::SdkClient;
use crate::client::hosted::SdkHost;
use crate::client::sdk_action::{self, ProviderCall, SdkAction};
use crate::diagnose;
use crate::report::detail::{Detail, ProviderCallDetail, SandboxDetail};
use crate::report::SignatureKind;
use crate::scenario::SandboxStatus;
use serde_json::{Map, Value};

/// The reconnect design's limit on the `pwd` probe.
const PROBE_LIMIT_MS: u64 = 15_000;

/// The calls as the phase records them.
fn call_details(calls: &[ProviderCall]) -> Vec<ProviderCallDetail> {
    calls
        .iter()
        .map(|c| {
            let field = |key: &str| c.answer.as_ref().and_then(|a| a.get(key));
            let text = |key: &str| field(key).and_then(Value::as_str).map(str::to_string);
            ProviderCallDetail {
                call: c.call.clone(),
                caller: c.caller.clone(),
                status: c.status,
                action: text("action"),
                pid: field("pid").and_then(Value::as_u64),
                was_down: text("wasDown"),
                ready_ms: field("readyMs").and_then(Value::as_u64),
            }
        })
        .collect()
}

/// Which of the SDK's `ensureServer` calls found the server down and
/// brought it back (the back end answered `started`): its caller.
fn brought_back_by(calls: &[ProviderCallDetail]) -> Option<String> {
    calls
        .iter()
        .find(|c| c.call == "ensureServer" && c.action.as_deref() == Some("started"))
        .map(|c| format!("ensureServer ({})", c.caller))
}

impl<H: SdkHost> SdkClient<H> {
    /// Where the provider calls the harness: the stack's sandbox service.
    fn service_url(cell: &RunningCell<'_>) -> Result<String, StepFailure> {
        match &cell.settings.sandboxes {
            Some(sandboxes) => Ok(sandboxes.url().to_string()),
            None => Err(StepFailure::new(diagnose::other(
                SignatureKind::Harness,
                "this stack runs no sandbox service (only the local stack has the provider's back end)",
            ))),
        }
    }

    fn headers(cell: &RunningCell<'_>) -> Option<Map<String, Value>> {
        let headers = &cell.settings.headers;
        (!headers.is_empty()).then(|| {
            headers
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect()
        })
    }

    pub(super) async fn sdk_start_sandbox(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
    ) -> StepResult {
        let action = SdkAction::StartSandbox {
            phase: self.phase(),
            client: client.into(),
            service_url: Self::service_url(cell)?,
            sdk: self.sdk_module.as_ref().map(|m| m.display().to_string()),
            persist: self.store.clone(),
            headers: Self::headers(cell),
        };
        let started: sdk_action::SandboxStarted = self.act_as(cell, action).await?;
        self.connected_set().insert(client.to_string());
        Ok(SandboxDetail {
            sandbox_id: started.sandbox_id,
            provider_calls: call_details(&started.calls),
            ..SandboxDetail::default()
        }
        .to_map())
    }

    pub(super) async fn sdk_reattach_sandbox(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
        expect: Option<SandboxStatus>,
    ) -> StepResult {
        let action = SdkAction::ReattachSandbox {
            phase: self.phase(),
            client: client.into(),
            service_url: Self::service_url(cell)?,
            sdk: self.sdk_module.as_ref().map(|m| m.display().to_string()),
            persist: self.store.clone(),
            headers: Self::headers(cell),
            probe_ms: PROBE_LIMIT_MS,
        };
        let found: sdk_action::SandboxReattached = self.act_as(cell, action).await?;
        let status = found.status.clone().unwrap_or_default();
        if status == SandboxStatus::Connected.name() {
            self.connected_set().insert(client.to_string());
        }
        let calls = call_details(&found.calls);
        let detail = SandboxDetail {
            sandbox_id: found.sandbox_id,
            status: Some(status.clone()),
            reattach_ms: found.reattach_ms,
            probe_stdout: found.probe.as_ref().and_then(|p| p.get("stdout")).cloned(),
            expired_because: found.reason.as_ref().map(|r| r.describe()),
            server_brought_back_by: brought_back_by(&calls),
            provider_calls: calls,
        };
        match expect {
            Some(wanted) if wanted.name() != status => Err(StepFailure::new(diagnose::other(
                SignatureKind::Client,
                format!(
                    "the reattach's status is {status}, the scenario expects {}",
                    wanted.name()
                ),
            ))
            .with_detail(detail)),
            _ => Ok(detail.to_map()),
        }
    }

    pub(super) async fn sdk_destroy_sandbox(
        &self,
        cell: &mut RunningCell<'_>,
        client: &str,
    ) -> StepResult {
        let action = SdkAction::DestroySandbox {
            phase: self.phase(),
            client: client.into(),
        };
        let destroyed: sdk_action::SandboxDestroyed = self.act_as(cell, action).await?;
        self.connected_set().remove(client);
        Ok(SandboxDetail {
            provider_calls: call_details(&destroyed.calls),
            ..SandboxDetail::default()
        }
        .to_map())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_server_was_brought_back_by_the_ensure_server_call_that_started_it() {
        let call = |call: &str, caller: &str, answer: Value| ProviderCall {
            call: call.into(),
            caller: caller.into(),
            status: Some(200),
            answer: Some(answer),
            ..ProviderCall::default()
        };
        let calls = call_details(&[
            call("reconnect", "start", json!({"id": "sbx-1"})),
            call(
                "ensureServer",
                "start",
                json!({"action": "running", "pid": 7}),
            ),
            call(
                "ensureServer",
                "health-wait",
                json!({"action": "started", "pid": 9}),
            ),
        ]);
        assert_eq!(calls[1].action.as_deref(), Some("running"));
        assert_eq!(calls[2].pid, Some(9));
        assert_eq!(
            brought_back_by(&calls).as_deref(),
            Some("ensureServer (health-wait)")
        );
        assert_eq!(brought_back_by(&calls[..2]), None);
    }
}
