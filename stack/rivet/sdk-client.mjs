// continuity: actor `sdkClient`, the real sandbox-agent TypeScript SDK hosted
// where its users run it (sandbox-agent's "Multiplayer" guidance, Rivet's
// sandbox-coding-agent example): one actor per workspace (here: per cell)
// owns the live `SandboxAgent` clients and their `Session` handles in vars,
// recreated when the actor wakes (after a runner restart), and keeps session
// records and events where the harness's --persist says (drivers.mjs): in
// its own state through a SessionPersistDriver of ours (`rivet`, the same
// contract as the `persist` actor), the SDK's in-memory driver, SQLite or
// Postgres.
//
// Every action takes `{ phase, client, ... }` and answers `{ ok: true, ... }`
// or `{ ok: false, error }`: an SDK error comes back as data (name, message,
// HTTP status and problem, JSON-RPC code, cause chain), never as an actor
// error. Unhandled promise rejections (the SDK raises them around restarts)
// are recorded with the phase that was running instead of killing the runner.
//
// The SDK's wire is recorded (wire.mjs): its `fetch` and its persist driver
// are wrapped, and every answer carries the records continuity has not yet
// acknowledged (`wireAck` in the args), which it writes into the cell's trace.
import { pathToFileURL } from "node:url";
import { actor, UserError } from "rivetkit";
import { SandboxAgent, SandboxDestroyedError } from "sandbox-agent";
import { Agent as UndiciAgent } from "undici";
import { allEvents, counted, openDriver } from "./drivers.mjs";
import { cmp, DEFAULT_LIMIT, page, plain } from "./records.mjs";
import { callsSince, reattachSandbox, sandboxProvider, startSandbox } from "./sandbox-provider.mjs";
import { SdkSteps } from "./sdk-steps.mjs";
import { listen } from "./ledger.mjs";
import { epochMs, recordingFetch, recordingPersist, RETIRE_DRAIN_MS, trackedWebSocket, WireLog } from "./wire.mjs";

// The SDK's process terminal socket needs a WebSocket class: Node 20 has
// none built in, so `ws` (already in the app's install, through RivetKit).
const WebSocketImpl = globalThis.WebSocket ?? (await import("ws")).WebSocket;

// The SDK a client runs is its cell's point of the SDK axis: `connect`
// names the module (another registry version, a candidate build), loaded
// once per runner; without one, the app's own pinned SDK.
const sdkModules = new Map();
async function sdkModule(module) {
	if (!module) return { SandboxAgent, SandboxDestroyedError };
	if (!sdkModules.has(module)) sdkModules.set(module, import(pathToFileURL(module).href));
	return sdkModules.get(module);
}
async function sdkClass(module) {
	return (await sdkModule(module)).SandboxAgent;
}

/** How long a woken actor's clients wait for sandbox-agent's health. */
const HEALTH_WAIT_MS = 30_000;
/** Actions are bounded by the harness's phase deadline, plus this. */
const ACTION_MARGIN_MS = 5_000;
const MAX_CAUSES = 6;

// Rejections land here first (the handler knows no actor); each actor moves
// its own into its state on its next action. `active` says which cell and
// phase were running: the last action to start in this process.
const pendingRejections = [];
let active = { key: null, phase: null };

function recordProcessFault(kind, reason) {
	const entry = { kind, phase: active.phase, key: active.key, at: Date.now(), error: describeError(reason) };
	pendingRejections.push(entry);
	// The runner log keeps it even if the runner is killed before the actor saves it.
	console.error(`continuity-sdk: ${kind} during ${active.phase ?? "no phase"}: ${entry.error.name}: ${entry.error.message}`);
}
process.on("unhandledRejection", (reason) => recordProcessFault("unhandledRejection", reason));
process.on("uncaughtException", (error) => recordProcessFault("uncaughtException", error));

/** An error as plain data: what the SDK says, as precisely as it says it. */
export function describeError(error, depth = 0) {
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
	if (error.data !== undefined && typeof error.code === "number") out.data = plainJson(error.data);
	if (error.cause !== undefined && depth < MAX_CAUSES) out.cause = describeError(error.cause, depth + 1);
	return out;
}

function plainJson(v) {
	try {
		return JSON.parse(JSON.stringify(v, (_, x) => (typeof x === "bigint" ? Number(x) : x)));
	} catch {
		return String(v);
	}
}

/** The SDK's ListPage: no `nextCursor` on the last page. */
function sdkPage({ items, nextCursor }) {
	return nextCursor == null ? { items } : { items, nextCursor };
}

/** SessionPersistDriver over this actor's state: the `persist` actor's contract. */
class ActorStatePersistDriver {
	constructor(c, save) {
		this.c = c;
		this.save = save;
	}
	async getSession(id) {
		const s = this.c.state.sessions[id];
		return s ? plain(s) : undefined;
	}
	async listSessions(request = {}) {
		const all = Object.values(this.c.state.sessions).sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id));
		return sdkPage(page(all, request?.cursor, request?.limit));
	}
	async updateSession(session) {
		this.c.state.sessions[session.id] = plainJson(session);
		await this.save();
	}
	async listEvents(request) {
		const all = [...(this.c.state.events[request.sessionId] ?? [])].sort(
			(a, b) => cmp(a.eventIndex, b.eventIndex) || cmp(a.id, b.id),
		);
		return sdkPage(page(all, request?.cursor, request?.limit));
	}
	async insertEvent(sessionId, event) {
		const list = this.c.state.events[sessionId] ?? [];
		const at = list.findIndex((e) => e.id === event.id);
		if (at >= 0) list[at] = plainJson(event);
		else list.push(plainJson(event));
		this.c.state.events[sessionId] = list;
		await this.save();
	}
}

/** A driver whose opening (an import, a pool) finishes before its first call does. */
function lazyDriver(opening) {
	const call =
		(method) =>
		async (...args) =>
			(await opening)[method](...args);
	return {
		getSession: call("getSession"),
		listSessions: call("listSessions"),
		updateSession: call("updateSession"),
		listEvents: call("listEvents"),
		insertEvent: call("insertEvent"),
		close: async () => (await opening.catch(() => null))?.close?.(),
	};
}

/**
 * Node's `fetch` with undici's `headersTimeout` (300 s by default) lowered
 * the way a user lowers it: an undici Agent of their own, passed as
 * `fetch`'s `dispatcher` option (undici pinned to the version Node 20
 * bundles). Without a limit, Node's `fetch` as it is.
 */
function fetchWithHeadersTimeout(headersTimeoutMs) {
	if (!(Number(headersTimeoutMs) > 0)) return { fetch: globalThis.fetch.bind(globalThis), dispatcher: null };
	const dispatcher = new UndiciAgent({ headersTimeout: Number(headersTimeoutMs) });
	return { fetch: (input, init = {}) => globalThis.fetch(input, { ...init, dispatcher }), dispatcher };
}

/** What every SDK client of the actor is made with: its recorded fetch (with its header timeout, if any) and its store. */
function clientOptions(c, settings, save) {
	c.state.tally ??= { inserted: {}, failed: {}, failures: [] };
	const opening = openDriver(settings.persist, () => new ActorStatePersistDriver(c, save));
	// A driver that cannot open fails each call with its reason, never the process.
	opening.catch(() => {});
	const persist = counted(lazyDriver(opening), c.state.tally, save);
	const { fetch, dispatcher } = fetchWithHeadersTimeout(settings.headersTimeoutMs);
	const options = {
		headers: settings.headers ?? undefined,
		fetch: recordingFetch(c.vars.wire, fetch),
		persist: recordingPersist(c.vars.wire, persist, settings.persist?.driver ?? "rivet"),
	};
	return { options, persist, dispatcher };
}

async function newClient(c, name, settings, save) {
	// The host's own work (loading an SDK module the first time): in flight.
	const made = c.vars.wire.flight.begin("host", `making SDK client ${name}`);
	try {
		const Sdk = await sdkClass(settings.sdk);
		const { options, persist, dispatcher } = clientOptions(c, settings, save);
		return {
			dispatcher,
			sdk: new Sdk({ baseUrl: settings.baseUrl, ...options, waitForHealth: { timeoutMs: HEALTH_WAIT_MS } }),
			persist,
			sessions: new Map(),
			name,
		};
	} finally {
		made();
	}
}

/**
 * The provider client `name` goes (an app replacing it), and a provider
 * for the next one, calling the harness's sandbox service.
 */
async function providerFor(c, args) {
	const old = c.vars.clients.get(args.client);
	if (old) {
		c.vars.clients.delete(args.client);
		await old.sdk.dispose().catch(() => {});
		await old.persist.close?.().catch(() => {});
	}
	const mod = await sdkModule(args.sdk ?? null);
	const box = sandboxProvider({
		serviceUrl: String(args.serviceUrl),
		DestroyedError: mod.SandboxDestroyedError,
		flight: c.vars.wire.flight,
	});
	c.vars.boxes.set(args.client, box);
	return { Sdk: mod.SandboxAgent, box };
}

/** The live client `name`; after a wake it is recreated from what state recorded. */
async function clientFor(c, name, save) {
	const live = c.vars.clients.get(name);
	if (live) return { client: live, rebuilt: false };
	const settings = c.state.clients[name];
	if (!settings) throw Object.assign(new Error(`client \`${name}\` is not connected`), { name: "NotConnected" });
	const client = await newClient(c, name, settings, save);
	c.vars.clients.set(name, client);
	return { client, rebuilt: true };
}

/**
 * What the SDK hands the application for session `id` goes into the wire
 * log (`onSessionEvent`, before the session is made or fetched, so its
 * first events are heard).
 */
function listening(c, client, id) {
	listen(client.sdk, id, c.vars.wire, epochMs);
}

/** The session handle; one the actor lost when it slept is fetched again from the persisted record. */
async function handleFor(c, client, id) {
	listening(c, client, id);
	const held = client.sessions.get(id);
	if (held) return { session: held, handle: "held" };
	const session = await client.sdk.getSession(id);
	if (!session) throw Object.assign(new Error(`session '${id}' not found`), { name: "SessionNotFound" });
	client.sessions.set(id, session);
	return { session, handle: "fetched after the actor woke" };
}

/**
 * `promise`, or an ActorTimeout after `ms`, or an ActorRetired when the cell
 * ends first: `inflight` holds a way to end each running action at once.
 */
function bounded(promise, ms, what, inflight) {
	let timer;
	let retire;
	const limit = new Promise((_, reject) => {
		timer = setTimeout(
			() => reject(Object.assign(new Error(`${what}: no answer within ${ms} ms`), { name: "ActorTimeout" })),
			ms,
		);
		retire = () => reject(Object.assign(new Error(`${what}: the cell ended first`), { name: "ActorRetired" }));
	});
	inflight.add(retire);
	return Promise.race([promise, limit]).finally(() => {
		clearTimeout(timer);
		inflight.delete(retire);
	});
}

export function sdkClientActor({ persistNow, options }) {
	// One action: sets the phase for fault attribution, moves this process's
	// recorded faults into state, answers ok or the error as data, with the
	// wire records continuity has not acknowledged.
	async function act(c, args, body) {
		const phase = String(args?.phase ?? "");
		active = { key: c.key?.join?.(",") ?? String(c.key ?? ""), phase };
		const save = () => persistNow(c);
		c.vars.wire.acknowledge(args?.wireAck);
		adoptFaults(c);
		const deadline = Number(args?.timeoutMs) > 0 ? Number(args.timeoutMs) + ACTION_MARGIN_MS : 120_000;
		let answer;
		let finished;
		const done = new Promise((resolve) => (finished = resolve));
		c.vars.acting.add(done);
		// Running, for continuity's hang detector, until it has answered.
		const acted = c.vars.wire.flight.act(phase);
		try {
			const result = await bounded(body(save), deadline, phase || "action", c.vars.inflight);
			answer = { ok: true, ...result };
		} catch (error) {
			answer = { ok: false, error: describeError(error) };
		}
		const saved = c.vars.wire.flight.begin("host", "saving the actor's state");
		try {
			adoptFaults(c);
			await save().catch(() => {});
			return { ...answer, wire: c.vars.wire.pending() };
		} finally {
			saved();
			acted();
			finished();
			c.vars.acting.delete(done);
		}
	}

	function adoptFaults(c) {
		const key = c.key?.join?.(",") ?? String(c.key ?? "");
		for (let i = pendingRejections.length - 1; i >= 0; i--) {
			if (pendingRejections[i].key === key || pendingRejections[i].key === null) {
				c.state.faults.push(pendingRejections[i]);
				pendingRejections.splice(i, 1);
			}
		}
		c.state.faults.sort((a, b) => cmp(a.at, b.at));
	}

	return actor({
		createState: () => ({
			sessions: {},
			events: {},
			tally: { inserted: {}, failed: {}, failures: [] },
			clients: {},
			faults: [],
			wakes: 0,
			// The application's persisted sandbox state: each client's `sdk.sandboxId`.
			sandboxes: {},
		}),
		// inflight: a way to end each running action; acting: each action until it has answered.
		createVars: () => {
			const wire = new WireLog();
			return {
				clients: new Map(),
				stores: new Map(),
				wire,
				inflight: new Set(),
				acting: new Set(),
				// Each provider client's SandboxProvider and its call log.
				boxes: new Map(),
				// Turns and terminals: in memory only, as an app holds them;
				// each terminal socket in flight while open.
				steps: new SdkSteps({ WebSocketImpl: trackedWebSocket(WebSocketImpl, wire.flight), describeError }),
			};
		},
		options: { actionTimeout: 300_000, ...options },
		// The examples' shape: the SDK clients the actor had are made again
		// when it wakes (the runner restarted), each with its health wait.
		onWake: async (c) => {
			c.state.wakes += 1;
			for (const [name, settings] of Object.entries(c.state.clients)) {
				if (!c.vars.clients.has(name)) {
					c.vars.clients.set(name, await newClient(c, name, settings, () => persistNow(c)));
				}
			}
		},
		actions: {
			connect: (c, args) =>
				act(c, args, async (save) => {
					if (typeof args?.baseUrl !== "string") throw new UserError("connect: baseUrl (string) required");
					const old = c.vars.clients.get(args.client);
					if (old) {
						await old.sdk.dispose().catch(() => {});
						await old.persist.close?.().catch(() => {});
						await old.dispatcher?.destroy().catch(() => {});
					}
					// No token: the hosted client runs against the local stack only.
					c.state.clients[args.client] = {
						baseUrl: args.baseUrl,
						headers: args.headers ?? null,
						persist: args.persist ?? null,
						sdk: args.sdk ?? null,
						headersTimeoutMs: args.headersTimeoutMs ?? null,
					};
					c.vars.clients.set(args.client, await newClient(c, args.client, c.state.clients[args.client], save));
					return {};
				}),

			createSession: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					listening(c, client, args.id);
					const session = await client.sdk.createSession({
						id: args.id,
						agent: args.agent,
						sessionInit: { cwd: args.cwd ?? "/", mcpServers: [] },
					});
					client.sessions.set(session.id, session);
					return { sessionId: session.id, agentSessionId: session.agentSessionId };
				}),

			prompt: (c, args) =>
				act(c, args, async (save) => {
					const { client, rebuilt } = await clientFor(c, args.client, save);
					const { session, handle } = await handleFor(c, client, args.id);
					const response = await session.prompt([{ type: "text", text: String(args.text ?? "") }]);
					return { stopReason: response?.stopReason ?? null, handle, clientRebuilt: rebuilt };
				}),

			getEvents: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					const listed = await client.sdk.getEvents({ sessionId: args.id, limit: args.limit ?? DEFAULT_LIMIT });
					// The whole stored history, for the integrity check.
					const all = (await allEvents(client.persist, args.id)).map((text) => {
						const e = JSON.parse(text);
						// The payload too: the integrity check matches the agent's sent
						// chunks against it (without it, no chunk is ever missing).
						return { id: e.id, eventIndex: Number(e.eventIndex), payload: e.payload };
					});
					const tally = c.state.tally ?? { inserted: {}, failed: {}, failures: [] };
					return {
						eventsObserved: listed.items.length,
						history: all,
						recorded: tally.inserted[args.id] ?? 0,
						writeFailures: tally.failed[args.id] ?? 0,
						firstWriteFailure: tally.failures[0] ?? null,
					};
				}),

			/** Every stored event of a session, each as its JSON text (the replay check reads payloads byte for byte). */
			history: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					return { events: await allEvents(client.persist, args.id) };
				}),

			resumeSession: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					const before = c.state.sessions[args.id] ? plain(c.state.sessions[args.id]) : null;
					listening(c, client, args.id);
					const session = await client.sdk.resumeSession(args.id);
					client.sessions.set(session.id, session);
					const same =
						before !== null &&
						before.agentSessionId === session.agentSessionId &&
						before.lastConnectionId === session.lastConnectionId;
					return { action: same ? "same_handle" : "recreated", agentSessionId: session.agentSessionId };
				}),

			destroySession: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					listening(c, client, args.id);
					await client.sdk.destroySession(args.id);
					client.sessions.delete(args.id);
					return {};
				}),

			/** `session.prompt` started and left running as turn `turn` (across phases, across a restart). */
			startTurn: (c, args) =>
				act(c, args, async (save) => {
					const { client, rebuilt } = await clientFor(c, args.client, save);
					const { session, handle } = await handleFor(c, client, args.id);
					const started = c.vars.steps.startTurn(session, String(args.text ?? ""), String(args.turn));
					return { ...started, handle, clientRebuilt: rebuilt };
				}),

			/** The turn's outcome, and from the SDK's wire how its answer came and where its stream stood. */
			awaitTurn: (c, args) =>
				act(c, args, async () => {
					const awaited = await c.vars.steps.awaitTurn(String(args.turn), Number(args.waitMs) || 0);
					return { ...awaited, ...c.vars.wire.turnChannel(awaited.startedAt) };
				}),

			probe: (c, args) =>
				act(c, args, async (save) => c.vars.steps.probe((await clientFor(c, args.client, save)).client.sdk)),

			writeFile: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					return c.vars.steps.writeFile(client.sdk, String(args.path), String(args.content ?? ""));
				}),

			readFile: (c, args) =>
				act(c, args, async (save) => c.vars.steps.readFile((await clientFor(c, args.client, save)).client.sdk, String(args.path))),

			spawnProcess: (c, args) =>
				act(c, args, async (save) => c.vars.steps.spawnProcess((await clientFor(c, args.client, save)).client.sdk, args)),

			processStatus: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					return c.vars.steps.processStatus(client.sdk, String(args.processId), args.logsContain ?? null);
				}),

			terminalAttach: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					return c.vars.steps.terminalAttach(client.sdk, String(args.terminal), String(args.processId), Number(args.waitMs) || 0);
				}),

			terminalSend: (c, args) => act(c, args, async () => c.vars.steps.terminalSend(String(args.terminal), String(args.text))),

			terminalExpect: (c, args) =>
				act(c, args, async () => c.vars.steps.terminalExpect(String(args.terminal), args.text ?? null, Number(args.waitMs) || 0)),

			terminalReattach: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					const wait = Number(args.waitMs) || 0;
					const processId = args.processId ? String(args.processId) : null;
					return c.vars.steps.terminalReattach(client.sdk, String(args.terminal), wait, Number(args.scrollbackMs) || 0, processId);
				}),

			/** `SandboxAgent.start({ sandbox })`: a new sandbox, `sdk.sandboxId` persisted in the actor's state. */
			startSandbox: (c, args) =>
				act(c, args, async (save) => {
					const { Sdk, box } = await providerFor(c, args);
					const settings = { headers: args.headers ?? null, persist: args.persist ?? null };
					const { options, persist } = clientOptions(c, settings, save);
					const { sdk, sandboxId } = await startSandbox({ Sdk, box, options });
					c.vars.clients.set(args.client, { sdk, persist, sessions: new Map(), name: args.client });
					c.state.sandboxes ??= {};
					c.state.sandboxes[args.client] = sandboxId;
					await save();
					return { sandboxId, calls: callsSince(box, 0) };
				}),

			/** The reconnect route on the persisted `sandboxId`: `no_sandbox`, `connected` or `expired` (then forgotten). */
			reattachSandbox: (c, args) =>
				act(c, args, async (save) => {
					const sandboxId = c.state.sandboxes?.[args.client] ?? null;
					const { Sdk, box } = await providerFor(c, args);
					const settings = { headers: args.headers ?? null, persist: args.persist ?? null };
					const { options, persist } = clientOptions(c, settings, save);
					const probeMs = Number(args.probeMs) || 15_000;
					const found = await reattachSandbox({ Sdk, box, sandboxId, options, probeMs });
					if (found.status === "connected") {
						c.vars.clients.set(args.client, { sdk: found.sdk, persist, sessions: new Map(), name: args.client });
					} else if (found.status === "expired") {
						delete c.state.sandboxes[args.client];
						await save();
					}
					return {
						status: found.status,
						sandboxId,
						reattachMs: found.reattachMs ?? null,
						probe: found.probe ? plainJson(found.probe) : null,
						reason: found.reason ? describeError(found.reason) : null,
						calls: callsSince(box, 0),
					};
				}),

			/** `destroySandbox()`: the provider's `destroy`; the persisted id stays, as an app's database keeps it. */
			destroySandbox: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					const box = c.vars.boxes.get(args.client);
					const from = box?.calls.length ?? 0;
					c.vars.clients.delete(args.client);
					await client.sdk.destroySandbox();
					await client.persist.close?.().catch(() => {});
					return { calls: box ? callsSince(box, from) : [] };
				}),

			health: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					return { health: plainJson(await client.sdk.getHealth()) };
				}),

			dispose: (c, args) =>
				act(c, args, async () => {
					const live = c.vars.clients.get(args.client);
					c.vars.clients.delete(args.client);
					delete c.state.clients[args.client];
					if (live) {
						await live.sdk.dispose();
						await live.persist.close?.().catch(() => {});
						await live.dispatcher?.destroy().catch(() => {});
					}
					return {};
				}),

			/**
			 * One SessionPersistDriver call (`call`, its arguments as a JSON
			 * text in `argsJson`) on the driver `persist` names: the harness
			 * runs its persist contract through this against the Node drivers.
			 * Arguments and result travel as JSON texts, so the engine's
			 * re-encoding (sorted keys) never touches what the driver sees.
			 */
			store: (c, args) =>
				act(c, args, async (save) => {
					const key = JSON.stringify(args.persist ?? null);
					let driver = c.vars.stores.get(key);
					if (!driver) {
						const opening = openDriver(args.persist, () => new ActorStatePersistDriver(c, save));
						opening.catch(() => {});
						driver = lazyDriver(opening);
						c.vars.stores.set(key, driver);
					}
					const known = ["getSession", "listSessions", "updateSession", "listEvents", "insertEvent"];
					if (!known.includes(args.call)) throw new UserError(`store: unknown call ${args.call}`);
					const result = await driver[args.call](...JSON.parse(String(args.argsJson ?? "[]")));
					return { resultJson: result === undefined ? null : JSON.stringify(result) };
				}),

			/**
			 * The cell is over: close every SDK client and destroy this actor;
			 * answers with the faults recorded for it and the last wire records.
			 */
			retire: async (c, args) => {
				c.vars.wire.acknowledge(args?.wireAck);
				// An action the harness gave up on (a prompt the SDK left pending) still
				// holds its request open: ended first, so the actor is not destroyed
				// under it (RivetKit then waits out its shutdown grace, and the runner
				// did not place actors again for the next cells on the stack).
				for (const end of [...c.vars.inflight]) end();
				const drainedBy = epochMs() + RETIRE_DRAIN_MS;
				const acting = Promise.allSettled([...c.vars.acting]);
				await Promise.race([acting, new Promise((resolve) => setTimeout(resolve, RETIRE_DRAIN_MS))]);
				// A disposed SDK client still writes the events it had queued, and
				// hands each to the application after its write: the answer waits
				// for them, or continuity would judge them lost on its own cut.
				await c.vars.wire.flight.quiet("store", Math.max(0, drainedBy - epochMs()));
				c.vars.steps.close();
				for (const store of c.vars.stores.values()) await store.close?.().catch(() => {});
				c.vars.stores.clear();
				for (const live of c.vars.clients.values()) {
					await live.sdk.dispose().catch(() => {});
					await live.persist.close?.().catch(() => {});
					await live.dispatcher?.destroy().catch(() => {});
				}
				c.vars.clients.clear();
				adoptFaults(c);
				const answer = { ok: true, faults: plain(c.state.faults), wakes: c.state.wakes, wire: c.vars.wire.pending() };
				// Destroyed once the answer is on its way: asked inside the action,
				// the engine held the answer until the actor had stopped (0 to 55 ms
				// more), the cell's own time spent waiting on continuity's cleanup.
				setTimeout(() => c.destroy(), 0);
				return answer;
			},

			/** Unhandled rejections and uncaught exceptions recorded for this actor, with their phase. */
			faults: (c, args) => {
				c.vars.wire.acknowledge(args?.wireAck);
				adoptFaults(c);
				return { ok: true, faults: plain(c.state.faults), wakes: c.state.wakes, wire: c.vars.wire.pending() };
			},

			/**
			 * continuity found the running phase's call hung: this host's own
			 * waits (a turn's await) end now, so that action answers with what
			 * it saw. Answers how many waits it ended.
			 */
			cutWaits: (c, args) => {
				c.vars.wire.acknowledge(args?.wireAck);
				return { ok: true, cut: c.vars.steps.cutWaits(), wire: c.vars.wire.pending() };
			},

			/**
			 * The wire records continuity has not acknowledged (after a phase it
			 * gave up on, and polled while a call is pending) and what is in
			 * flight in this host now.
			 */
			wire: (c, args) => {
				c.vars.wire.acknowledge(args?.wireAck);
				return { ok: true, wire: c.vars.wire.pending(), flight: c.vars.wire.flight.report() };
			},
		},
	});
}
