//! Where the next call to one Rivet actor goes, for every caller of an
//! actor continuity owns (the session store's `persist`, the hosted SDK's
//! `sdkClient`). The first call goes through the key
//! (`/gateway/NAME/action/X?rvt-method=getOrCreate&rvt-key=K`), which costs
//! the engine a lookup on every request (on loopback with Engine 2.3.19,
//! ~25 ms a call against ~12 ms); its answer names the actor
//! (`x-rivet-actor`), and later calls go to `/gateway/{actorId}/action/X`
//! directly — what a RivetKit 2.3.19 app gets from `handle.resolve()` and
//! `client.getForId()`. An answer saying the id is stale (the lifecycle and
//! scheduling errors on which RivetKit's handle drops a resolved id, see
//! [`super::answer`]) forgets the id, and the call goes through the key again.

use super::answer::{self, EngineError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long to let an actor that is starting or stopping settle before
/// resolving its key again (RivetKit's retry window).
const SETTLE: Duration = Duration::from_millis(100);

/// Where one call goes: through the key, or straight to the actor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    Key,
    Actor(String),
}

/// One actor of the stack's RivetKit app, by name and key, and the id an
/// answer named. Clones share the id they learnt.
#[derive(Debug, Clone)]
pub(crate) struct ActorRoute {
    /// The engine's guard endpoint, without a trailing `/`.
    endpoint: String,
    namespace: String,
    /// The actor's name in the app's registry.
    name: &'static str,
    key: String,
    id: Arc<Mutex<Option<String>>>,
}

impl ActorRoute {
    pub(crate) fn new(endpoint: &str, namespace: &str, name: &'static str, key: &str) -> Self {
        Self {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            namespace: namespace.to_string(),
            name,
            key: key.to_string(),
            id: Arc::new(Mutex::new(None)),
        }
    }

    /// The route the next call takes.
    pub(crate) fn current(&self) -> Route {
        match self.known_id() {
            Some(id) => Route::Actor(id),
            None => Route::Key,
        }
    }

    /// The URL of `action` by `route`.
    pub(crate) fn url(&self, route: &Route, action: &str) -> String {
        match route {
            Route::Key => self.key_url(action),
            Route::Actor(id) => format!(
                "{}/gateway/{}/action/{action}",
                self.endpoint,
                crate::http::encode_component(id)
            ),
        }
    }

    /// The URL of `action` through the key (what a readiness probe asks:
    /// the key must resolve, not only a known id answer).
    pub(crate) fn key_url(&self, action: &str) -> String {
        format!(
            "{}/gateway/{}/action/{action}?rvt-namespace={}&rvt-method=getOrCreate&rvt-pool=default&rvt-key={}",
            self.endpoint,
            self.name,
            self.namespace,
            crate::http::encode_component(&self.key)
        )
    }

    /// The actor id learnt so far.
    pub(crate) fn known_id(&self) -> Option<String> {
        self.slot().clone()
    }

    /// A call by `route` was answered with this `x-rivet-actor` header:
    /// later calls go to the actor it names (a header that is not an id
    /// is ignored).
    pub(crate) fn answered(&self, route: &Route, header: Option<&[u8]>) {
        if let Some(id) = answer::actor_id(header) {
            if *route != Route::Actor(id.clone()) {
                self.remember(id);
            }
        }
    }

    pub(crate) fn remember(&self, id: String) {
        *self.slot() = Some(id);
    }

    /// Forgets `stale`, unless another call has already learnt a newer id.
    pub(crate) fn forget(&self, stale: &str) {
        let mut slot = self.slot();
        if slot.as_deref() == Some(stale) {
            *slot = None;
        }
    }

    /// A call by `route` failed with `engine`'s error: when it says the id
    /// is stale, the id is forgotten (after a short settle when the actor
    /// is coming or going) and `true` says to go through the key now.
    pub(crate) async fn stale(&self, route: &Route, engine: Option<&EngineError>) -> bool {
        let (Route::Actor(id), Some(engine)) = (route, engine) else {
            return false;
        };
        if !engine.id_is_stale() {
            return false;
        }
        self.forget(id);
        if engine.is_settling() {
            tokio::time::sleep(SETTLE).await;
        }
        true
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.id.lock().unwrap_or_else(|p| p.into_inner())
    }
}
