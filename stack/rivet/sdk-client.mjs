// continuity: actor `sdkClient`, the real sandbox-agent TypeScript SDK hosted
// where its users run it (sandbox-agent's "Multiplayer" guidance, Rivet's
// sandbox-coding-agent example): one actor per workspace (here: per cell)
// owns the live `SandboxAgent` clients and their `Session` handles in vars,
// recreated when the actor wakes (after a runner restart), and keeps session
// records and events in its own state through a SessionPersistDriver of ours
// (the same contract as the `persist` actor).
//
// Every action takes `{ phase, client, ... }` and answers `{ ok: true, ... }`
// or `{ ok: false, error }`: an SDK error comes back as data (name, message,
// HTTP status and problem, JSON-RPC code, cause chain), never as an actor
// error. Unhandled promise rejections (the SDK raises them around restarts)
// are recorded with the phase that was running instead of killing the runner.
import { pathToFileURL } from "node:url";
import { actor, UserError } from "rivetkit";
import { SandboxAgent } from "sandbox-agent";
import { cmp, DEFAULT_LIMIT, page, plain } from "./records.mjs";

// The SDK a client runs is its cell's point of the SDK axis: `connect`
// names the module (another registry version, a candidate build), loaded
// once per runner; without one, the app's own pinned SDK.
const sdkClasses = new Map();
async function sdkClass(module) {
	if (!module) return SandboxAgent;
	if (!sdkClasses.has(module)) sdkClasses.set(module, import(pathToFileURL(module).href).then((m) => m.SandboxAgent));
	return sdkClasses.get(module);
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
		else {
			list.push(plainJson(event));
			// Distinct events the SDK asked to store, to tell a dropped write.
			this.c.state.inserted[sessionId] = (this.c.state.inserted[sessionId] ?? 0) + 1;
		}
		this.c.state.events[sessionId] = list;
		await this.save();
	}
}

async function newClient(c, name, settings, save) {
	const Sdk = await sdkClass(settings.sdk);
	return {
		sdk: new Sdk({
			baseUrl: settings.baseUrl,
			headers: settings.headers ?? undefined,
			persist: new ActorStatePersistDriver(c, save),
			waitForHealth: { timeoutMs: HEALTH_WAIT_MS },
		}),
		sessions: new Map(),
		name,
	};
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

/** The session handle; one the actor lost when it slept is fetched again from the persisted record. */
async function handleFor(client, id) {
	const held = client.sessions.get(id);
	if (held) return { session: held, handle: "held" };
	const session = await client.sdk.getSession(id);
	if (!session) throw Object.assign(new Error(`session '${id}' not found`), { name: "SessionNotFound" });
	client.sessions.set(id, session);
	return { session, handle: "fetched after the actor woke" };
}

function bounded(promise, ms, what) {
	let timer;
	const limit = new Promise((_, reject) => {
		timer = setTimeout(
			() => reject(Object.assign(new Error(`${what}: no answer within ${ms} ms`), { name: "ActorTimeout" })),
			ms,
		);
	});
	return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

export function sdkClientActor({ persistNow, options }) {
	// One action: sets the phase for fault attribution, moves this process's
	// recorded faults into state, answers ok or the error as data.
	async function act(c, args, body) {
		const phase = String(args?.phase ?? "");
		active = { key: c.key?.join?.(",") ?? String(c.key ?? ""), phase };
		const save = () => persistNow(c);
		adoptFaults(c);
		const deadline = Number(args?.timeoutMs) > 0 ? Number(args.timeoutMs) + ACTION_MARGIN_MS : 120_000;
		try {
			const result = await bounded(body(save), deadline, phase || "action");
			return { ok: true, ...result };
		} catch (error) {
			return { ok: false, error: describeError(error) };
		} finally {
			adoptFaults(c);
			await save().catch(() => {});
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
		createState: () => ({ sessions: {}, events: {}, inserted: {}, clients: {}, faults: [], wakes: 0 }),
		createVars: () => ({ clients: new Map() }),
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
					if (old) await old.sdk.dispose().catch(() => {});
					// No token: the hosted client runs against the local stack only.
					c.state.clients[args.client] = { baseUrl: args.baseUrl, headers: args.headers ?? null, sdk: args.sdk ?? null };
					c.vars.clients.set(args.client, await newClient(c, args.client, c.state.clients[args.client], save));
					return {};
				}),

			createSession: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
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
					const { session, handle } = await handleFor(client, args.id);
					const response = await session.prompt([{ type: "text", text: String(args.text ?? "") }]);
					return { stopReason: response?.stopReason ?? null, handle, clientRebuilt: rebuilt };
				}),

			getEvents: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					const listed = await client.sdk.getEvents({ sessionId: args.id, limit: args.limit ?? DEFAULT_LIMIT });
					// The whole stored history, for the integrity check.
					const all = (c.state.events[args.id] ?? []).map((e) => ({ id: e.id, eventIndex: Number(e.eventIndex) }));
					return {
						eventsObserved: listed.items.length,
						history: all,
						recorded: c.state.inserted[args.id] ?? 0,
					};
				}),

			resumeSession: (c, args) =>
				act(c, args, async (save) => {
					const { client } = await clientFor(c, args.client, save);
					const before = c.state.sessions[args.id] ? plain(c.state.sessions[args.id]) : null;
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
					await client.sdk.destroySession(args.id);
					client.sessions.delete(args.id);
					return {};
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
					if (live) await live.sdk.dispose();
					return {};
				}),

			/** The cell is over: close every SDK client and destroy this actor. */
			retire: async (c) => {
				for (const live of c.vars.clients.values()) await live.sdk.dispose().catch(() => {});
				c.vars.clients.clear();
				c.destroy();
				return { ok: true };
			},

			/** Unhandled rejections and uncaught exceptions recorded for this actor, with their phase. */
			faults: (c) => {
				adoptFaults(c);
				return { ok: true, faults: plain(c.state.faults), wakes: c.state.wakes };
			},
		},
	});
}
