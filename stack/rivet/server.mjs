// continuity: RivetKit actor app that stores sandbox-agent SDK session
// records and events in actor state (actor `persist`, mirrors the SDK's
// SessionPersistDriver), and hosts the real SDK client (actor `sdkClient`,
// sdk-client.mjs) for the harness's `--client ts-sdk`.
//
// Env:
//   RIVET_ENDPOINT           engine guard URL, e.g. http://127.0.0.1:<guard port> (required)
//   RIVET_RUN_SERVICES=0     do not start the first-party Services host (set by this file if unset)
//   CONTINUITY_RIVET_SAVE    immediate (default) | deferred
//   CONTINUITY_RIVET_SAVE_INTERVAL_MS  optional: actor stateSaveInterval for deferred
//                            mode (RivetKit default 1000 when unset)
//   CONTINUITY_RIVET_SHUTDOWN_GRACE_MS  SIGTERM drain bound (default 5000, min 1000;
//                            RivetKit's own default is the engine's actor stop threshold)
//
// Prints "continuity-rivet: ready ..." on stdout once the envoy is registered
// with the engine; exits non-zero if registration fails.
import { actor, setup, UserError } from "rivetkit";
import { cmp, page, plain } from "./records.mjs";
import { sdkClientActor } from "./sdk-client.mjs";

if (process.env.RIVET_RUN_SERVICES === undefined) process.env.RIVET_RUN_SERVICES = "0";
if (!process.env.RIVET_ENDPOINT) {
	console.error("continuity-rivet: RIVET_ENDPOINT is required (e.g. http://127.0.0.1:6420)");
	process.exit(2);
}
const SAVE = process.env.CONTINUITY_RIVET_SAVE ?? "immediate";
if (SAVE !== "immediate" && SAVE !== "deferred") {
	console.error(`continuity-rivet: CONTINUITY_RIVET_SAVE must be immediate|deferred, got ${SAVE}`);
	process.exit(2);
}
const SAVE_INTERVAL = process.env.CONTINUITY_RIVET_SAVE_INTERVAL_MS
	? Number.parseInt(process.env.CONTINUITY_RIVET_SAVE_INTERVAL_MS, 10)
	: undefined;
const GRACE_MS = Math.max(1000, Number.parseInt(process.env.CONTINUITY_RIVET_SHUTDOWN_GRACE_MS ?? "5000", 10) || 5000);

async function persistNow(c) {
	if (SAVE === "immediate") await c.saveState({ immediate: true });
}

const persist = actor({
	createState: () => ({ sessions: {}, events: {} }),
	options: SAVE_INTERVAL > 0 ? { stateSaveInterval: SAVE_INTERVAL } : {},
	actions: {
		getSession: (c, id) => plain(c.state.sessions[id] ?? null),

		listSessions: (c, req = {}) => {
			const all = Object.values(c.state.sessions).sort(
				(a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id),
			);
			return page(all, req?.cursor, req?.limit);
		},

		updateSession: async (c, record) => {
			if (!record || typeof record.id !== "string") throw new UserError("updateSession: record.id (string) required", { code: "invalid_args" });
			c.state.sessions[record.id] = record;
			await persistNow(c);
			return null;
		},

		listEvents: (c, req = {}) => {
			const all = [...(c.state.events[req?.sessionId] ?? [])].sort(
				(a, b) => cmp(a.eventIndex, b.eventIndex) || cmp(a.id, b.id),
			);
			return page(all, req?.cursor, req?.limit);
		},

		insertEvent: async (c, sessionId, event) => {
			if (typeof sessionId !== "string" || !event || typeof event.id !== "string") {
				throw new UserError("insertEvent: sessionId and event.id (strings) required", { code: "invalid_args" });
			}
			const list = c.state.events[sessionId] ?? [];
			// Idempotent: re-inserting an event with the same id replaces it.
			const at = list.findIndex((e) => e.id === event.id);
			if (at >= 0) list[at] = event;
			else list.push(event);
			c.state.events[sessionId] = list;
			await persistNow(c);
			return null;
		},
	},
});

const sdkClient = sdkClientActor({
	persistNow,
	options: SAVE_INTERVAL > 0 ? { stateSaveInterval: SAVE_INTERVAL } : {},
});

export const registry = setup({ use: { persist, sdkClient }, shutdown: { gracePeriodMs: GRACE_MS } });

const t0 = Date.now();
registry
	.startAndWait()
	.then(() => {
		console.log(
			`continuity-rivet: ready endpoint=${process.env.RIVET_ENDPOINT} actors=persist,sdkClient save=${SAVE} save_interval_ms=${SAVE_INTERVAL ?? "default"} pid=${process.pid} startup_ms=${Date.now() - t0}`,
		);
	})
	.catch((err) => {
		console.error(`continuity-rivet: failed to start: ${err?.stack ?? err}`);
		process.exit(1);
	});
