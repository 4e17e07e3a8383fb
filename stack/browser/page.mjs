// continuity: the browser client, the real sandbox-agent SDK running in a
// page of headless Chromium, as a browser app runs it. The harness drives
// it over the DevTools protocol through one page API,
// `window.continuity.call(action, args)`, with the actions and answers of
// the hosted Node client (stack/rivet/sdk-client.mjs): `{ ok: true, … }`,
// or `{ ok: false, error }` with the SDK's error as data.
//
// The page keeps what an app would keep across a reload in sessionStorage
// (which clients it connected, with which store; the write tally the
// integrity check reads; unhandled rejections). The SDK clients themselves
// live in page memory: after a reload (the `client` target) each is a fresh
// `SandboxAgent` over the same store, which must restore its sessions by
// replay. Sessions live in IndexedDB (`indexeddb`, one database per cell
// attempt) or in the SDK's own in-memory driver (`memory`, lost on reload).
import { InMemorySessionPersistDriver, SandboxAgent, SandboxDestroyedError } from "sandbox-agent";
import { allEvents, counted } from "./drivers.mjs";
import { IndexedDbSessionPersistDriver } from "./indexeddb.mjs";
import { DEFAULT_LIMIT } from "./records.mjs";
import { callsSince, reattachSandbox, sandboxProvider, startSandbox } from "./sandbox-provider.mjs";
import { SdkSteps } from "./sdk-steps.mjs";
import { listen } from "./ledger.mjs";
import { epochMs, recordingPersist, RETIRE_DRAIN_MS, WireLog } from "./wire.mjs";

const HEALTH_WAIT_MS = 30_000;
const MAX_CAUSES = 6;
const KEPT = "continuity";

const kept = JSON.parse(sessionStorage.getItem(KEPT) ?? "null") ?? {
	clients: {},
	tally: { inserted: {}, failed: {}, failures: [] },
	faults: [],
	loads: 0,
};
kept.loads += 1;
const live = new Map();
const stores = new Map();
let phase = null;
// What the SDK handed the application and wrote to its store, until
// continuity has it (its network is traced over DevTools, not here).
// Kept in sessionStorage too, so a reload loses none of it.
const WIRE = "continuity.wire";
const wire = Object.assign(new WireLog(), JSON.parse(sessionStorage.getItem(WIRE) ?? "null") ?? {});
const push = wire.push.bind(wire);
wire.push = (record) => {
	push(record);
	keepWire();
};
function keepWire() {
	const { origin, records, seq, dropped } = wire;
	sessionStorage.setItem(WIRE, JSON.stringify({ origin, records, seq, dropped }));
}

function keep() {
	sessionStorage.setItem(KEPT, JSON.stringify(kept));
}
keep();

function recordFault(kind, reason) {
	kept.faults.push({ kind, phase, at: Date.now(), error: describeError(reason) });
	keep();
}
window.addEventListener("unhandledrejection", (e) => recordFault("unhandledRejection", e.reason));
window.addEventListener("error", (e) => recordFault("uncaughtException", e.error ?? e.message));

/** An error as plain data: what the SDK says, as precisely as it says it. */
function describeError(error, depth = 0) {
	if (error === null || typeof error !== "object") {
		return { name: typeof error, message: String(error) };
	}
	const out = {
		name: String(error.name ?? error.constructor?.name ?? "Error"),
		message: String(error.message ?? ""),
	};
	if (typeof error.status === "number") out.status = error.status;
	if (error.problem && typeof error.problem === "object") out.problem = plainJson(error.problem);
	if (typeof error.code === "number" || typeof error.code === "string") out.code = error.code;
	if (error.cause !== undefined && depth < MAX_CAUSES) out.cause = describeError(error.cause, depth + 1);
	return out;
}

function plainJson(v) {
	try {
		return JSON.parse(JSON.stringify(v));
	} catch {
		return String(v);
	}
}

async function openStore(spec) {
	switch (spec?.driver ?? "memory") {
		case "memory":
			return new InMemorySessionPersistDriver();
		case "indexeddb":
			return IndexedDbSessionPersistDriver.open(String(spec.database));
		default:
			throw Object.assign(new Error(`the browser client has no persist driver ${JSON.stringify(spec.driver)}`), {
				name: "UserError",
			});
	}
}

/** The application's durable sandbox state, as a browser app keeps it: each client's `sdk.sandboxId`. */
const SANDBOXES = "continuity.sandboxes";
function persistedSandboxes() {
	return JSON.parse(localStorage.getItem(SANDBOXES) ?? "{}");
}
function persistSandbox(client, sandboxId) {
	const all = persistedSandboxes();
	if (sandboxId) all[client] = sandboxId;
	else delete all[client];
	localStorage.setItem(SANDBOXES, JSON.stringify(all));
}
/** Each provider client's SandboxProvider and its call log. */
const boxes = new Map();

/** The provider client `name` goes (an app replacing it), and a provider for the next one. */
async function providerFor(args) {
	const old = live.get(args.client);
	if (old) {
		live.delete(args.client);
		await old.sdk.dispose().catch(() => {});
		await old.persist.close?.().catch(() => {});
	}
	const box = sandboxProvider({ serviceUrl: String(args.serviceUrl), DestroyedError: SandboxDestroyedError });
	boxes.set(args.client, box);
	return box;
}

function newClient(name, settings) {
	const { options, persist } = clientOptions(settings);
	return {
		sdk: new SandboxAgent({ baseUrl: settings.baseUrl, ...options, waitForHealth: { timeoutMs: HEALTH_WAIT_MS } }),
		persist,
		sessions: new Map(),
	};
}

/** What every SDK client of the page is made with: its store, counted. */
function clientOptions(settings) {
	const opening = openStore(settings.persist);
	opening.catch(() => {});
	const lazy = (method) => async (...args) => (await opening)[method](...args);
	const driver = {
		getSession: lazy("getSession"),
		listSessions: lazy("listSessions"),
		updateSession: lazy("updateSession"),
		listEvents: lazy("listEvents"),
		insertEvent: lazy("insertEvent"),
		close: async () => (await opening.catch(() => null))?.close?.(),
	};
	const persist = counted(driver, kept.tally, async () => keep());
	const recorded = recordingPersist(wire, persist, settings.persist?.driver ?? "memory");
	return { options: { headers: settings.headers ?? undefined, persist: recorded }, persist };
}

/** The live client `name`; after a reload it is made again from what the page kept. */
function clientFor(name) {
	const held = live.get(name);
	if (held) return { client: held, rebuilt: false };
	const settings = kept.clients[name];
	if (!settings) throw Object.assign(new Error(`client \`${name}\` is not connected`), { name: "NotConnected" });
	const client = newClient(name, settings);
	live.set(name, client);
	return { client, rebuilt: true };
}

/** What the SDK hands the application for session `id` goes into the wire log (before it is made or fetched). */
function listening(client, id) {
	listen(client.sdk, id, wire, epochMs);
}

async function handleFor(client, id) {
	listening(client, id);
	const held = client.sessions.get(id);
	if (held) return { session: held, handle: "held" };
	const session = await client.sdk.getSession(id);
	if (!session) throw Object.assign(new Error(`session '${id}' not found`), { name: "SessionNotFound" });
	client.sessions.set(id, session);
	return { session, handle: "fetched after the page reloaded" };
}

// Turns and terminals: in page memory, gone with a reload, as an app's.
const steps = new SdkSteps({ WebSocketImpl: globalThis.WebSocket, describeError });

const actions = {
	async connect(args) {
		if (typeof args?.baseUrl !== "string") throw new Error("connect: baseUrl (string) required");
		const old = live.get(args.client);
		if (old) {
			await old.sdk.dispose().catch(() => {});
			await old.persist.close?.().catch(() => {});
		}
		kept.clients[args.client] = { baseUrl: args.baseUrl, headers: args.headers ?? null, persist: args.persist ?? null };
		keep();
		live.set(args.client, newClient(args.client, kept.clients[args.client]));
		return {};
	},
	async createSession(args) {
		const { client } = clientFor(args.client);
		listening(client, args.id);
		const session = await client.sdk.createSession({
			id: args.id,
			agent: args.agent,
			sessionInit: { cwd: args.cwd ?? "/", mcpServers: [] },
		});
		client.sessions.set(session.id, session);
		return { sessionId: session.id, agentSessionId: session.agentSessionId };
	},
	async prompt(args) {
		const { client, rebuilt } = clientFor(args.client);
		const { session, handle } = await handleFor(client, args.id);
		const response = await session.prompt([{ type: "text", text: String(args.text ?? "") }]);
		return { stopReason: response?.stopReason ?? null, handle, clientRebuilt: rebuilt };
	},
	async getEvents(args) {
		const { client } = clientFor(args.client);
		const listed = await client.sdk.getEvents({ sessionId: args.id, limit: args.limit ?? DEFAULT_LIMIT });
		const all = (await allEvents(client.persist, args.id)).map((text) => {
			const e = JSON.parse(text);
			// The payload too: the integrity check matches the agent's sent
			// chunks against it (without it, no chunk is ever missing).
			return { id: e.id, eventIndex: Number(e.eventIndex), payload: e.payload };
		});
		return {
			eventsObserved: listed.items.length,
			history: all,
			recorded: kept.tally.inserted[args.id] ?? 0,
			writeFailures: kept.tally.failed[args.id] ?? 0,
			firstWriteFailure: kept.tally.failures[0] ?? null,
		};
	},
	async history(args) {
		const { client } = clientFor(args.client);
		return { events: await allEvents(client.persist, args.id) };
	},
	async resumeSession(args) {
		const { client } = clientFor(args.client);
		const before = await client.persist.getSession(args.id);
		listening(client, args.id);
		const session = await client.sdk.resumeSession(args.id);
		client.sessions.set(session.id, session);
		const same =
			before != null &&
			before.agentSessionId === session.agentSessionId &&
			before.lastConnectionId === session.lastConnectionId;
		return { action: same ? "same_handle" : "recreated", agentSessionId: session.agentSessionId };
	},
	async destroySession(args) {
		const { client } = clientFor(args.client);
		listening(client, args.id);
		await client.sdk.destroySession(args.id);
		client.sessions.delete(args.id);
		return {};
	},
	/** `session.prompt` started and left running as turn `turn` (across phases, across a restart). */
	async startTurn(args) {
		const { client, rebuilt } = clientFor(args.client);
		const { session, handle } = await handleFor(client, args.id);
		const started = steps.startTurn(session, String(args.text ?? ""), String(args.turn));
		return { ...started, handle, clientRebuilt: rebuilt };
	},
	async awaitTurn(args) {
		return steps.awaitTurn(String(args.turn), Number(args.waitMs) || 0);
	},
	async probe(args) {
		return steps.probe(clientFor(args.client).client.sdk);
	},
	async writeFile(args) {
		return steps.writeFile(clientFor(args.client).client.sdk, String(args.path), String(args.content ?? ""));
	},
	async readFile(args) {
		return steps.readFile(clientFor(args.client).client.sdk, String(args.path));
	},
	async spawnProcess(args) {
		return steps.spawnProcess(clientFor(args.client).client.sdk, args);
	},
	async processStatus(args) {
		return steps.processStatus(clientFor(args.client).client.sdk, String(args.processId), args.logsContain ?? null);
	},
	async terminalAttach(args) {
		const sdk = clientFor(args.client).client.sdk;
		return steps.terminalAttach(sdk, String(args.terminal), String(args.processId), Number(args.waitMs) || 0);
	},
	async terminalSend(args) {
		return steps.terminalSend(String(args.terminal), String(args.text));
	},
	async terminalExpect(args) {
		return steps.terminalExpect(String(args.terminal), args.text ?? null, Number(args.waitMs) || 0);
	},
	async terminalReattach(args) {
		const sdk = clientFor(args.client).client.sdk;
		const wait = Number(args.waitMs) || 0;
		const processId = args.processId ? String(args.processId) : null;
		return steps.terminalReattach(sdk, String(args.terminal), wait, Number(args.scrollbackMs) || 0, processId);
	},
	/** `SandboxAgent.start({ sandbox })`: a new sandbox, `sdk.sandboxId` persisted in localStorage. */
	async startSandbox(args) {
		const box = await providerFor(args);
		const { options, persist } = clientOptions({ headers: args.headers ?? null, persist: args.persist ?? null });
		const { sdk, sandboxId } = await startSandbox({ Sdk: SandboxAgent, box, options });
		live.set(args.client, { sdk, persist, sessions: new Map() });
		persistSandbox(args.client, sandboxId);
		return { sandboxId, calls: callsSince(box, 0) };
	},
	/** The reconnect route on the persisted `sandboxId`: `no_sandbox`, `connected` or `expired` (then forgotten). */
	async reattachSandbox(args) {
		const sandboxId = persistedSandboxes()[args.client] ?? null;
		const box = await providerFor(args);
		const { options, persist } = clientOptions({ headers: args.headers ?? null, persist: args.persist ?? null });
		const probeMs = Number(args.probeMs) || 15_000;
		const found = await reattachSandbox({ Sdk: SandboxAgent, box, sandboxId, options, probeMs });
		if (found.status === "connected") live.set(args.client, { sdk: found.sdk, persist, sessions: new Map() });
		else if (found.status === "expired") persistSandbox(args.client, null);
		return {
			status: found.status,
			sandboxId,
			reattachMs: found.reattachMs ?? null,
			probe: found.probe ? plainJson(found.probe) : null,
			reason: found.reason ? describeError(found.reason) : null,
			calls: callsSince(box, 0),
		};
	},
	/** `destroySandbox()`: the provider's `destroy`; the persisted id stays, as an app's storage keeps it. */
	async destroySandbox(args) {
		const { client } = clientFor(args.client);
		const box = boxes.get(args.client);
		const from = box?.calls.length ?? 0;
		live.delete(args.client);
		await client.sdk.destroySandbox();
		await client.persist.close?.().catch(() => {});
		return { calls: box ? callsSince(box, from) : [] };
	},
	async health(args) {
		const { client } = clientFor(args.client);
		return { health: plainJson(await client.sdk.getHealth()) };
	},
	async dispose(args) {
		const held = live.get(args.client);
		live.delete(args.client);
		delete kept.clients[args.client];
		keep();
		if (held) {
			await held.sdk.dispose();
			await held.persist.close?.().catch(() => {});
		}
		return {};
	},
	/** One SessionPersistDriver call on the store `persist` names (the persist contract test). */
	async store(args) {
		const key = JSON.stringify(args.persist ?? null);
		let driver = stores.get(key);
		if (!driver) {
			driver = openStore(args.persist);
			stores.set(key, driver);
		}
		const known = ["getSession", "listSessions", "updateSession", "listEvents", "insertEvent"];
		if (!known.includes(args.call)) throw new Error(`store: unknown call ${args.call}`);
		const result = await (await driver)[args.call](...JSON.parse(String(args.argsJson ?? "[]")));
		return { resultJson: result === undefined ? null : JSON.stringify(result) };
	},
	async retire() {
		// As the actor's retire: the store writes a disposed client still has
		// queued end first, and their events reach the application's records.
		await wire.flight.quiet("store", RETIRE_DRAIN_MS);
		steps.close();
		for (const held of live.values()) {
			await held.sdk.dispose().catch(() => {});
			await held.persist.close?.().catch(() => {});
		}
		live.clear();
		// As the actor's retire: the faults recorded for this page come back with it.
		return { faults: kept.faults, wakes: kept.loads - 1 };
	},
	async faults() {
		return { faults: kept.faults, wakes: kept.loads - 1 };
	},
	/** Nothing but the records continuity has not acknowledged (every answer carries them). */
	async wire() {
		return {};
	},
	/** continuity found the running phase's call hung: the page's own waits (a turn's await) end now. */
	async cutWaits() {
		return { cut: steps.cutWaits() };
	},
};

window.continuity = {
	ready: true,
	async call(action, args) {
		phase = String(args?.phase ?? action);
		wire.acknowledge(args?.wireAck);
		keepWire();
		const body = actions[action];
		if (!body) return { ok: false, error: { name: "UserError", message: `unknown action ${action}` }, wire: wire.pending() };
		try {
			return { ok: true, ...(await body(args ?? {})), wire: wire.pending() };
		} catch (error) {
			return { ok: false, error: describeError(error), wire: wire.pending() };
		}
	},
};
