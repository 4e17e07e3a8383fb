// continuity: what the SDK handed its application and what it wrote to its
// store, each session event with its digest, for the always-on checker.
// Shared by the SDK's two hosts (the `sdkClient` actor, sdk-client.mjs, and
// the browser page, page.mjs).
//
// An envelope's digest is FNV-1a (64 bits) of its canonical JSON (object
// keys sorted by UTF-16 code units, no whitespace, numbers and strings as
// JSON.stringify writes them): the same digest continuity's Rust side
// computes (crates/trace/src/digest.rs), so one event is followed from the
// agent, through the server and the gateway, to the SDK and its store.
// Records never hold a body: the digest, the method, the JSON-RPC id and the
// sessions only.

const encoder = new TextEncoder();
const MASK = 0xffffffffffffffffn;
const PRIME = 0x100000001b3n;
const OFFSET = 0xcbf29ce484222325n;

/** The canonical JSON text of `value`. */
export function canonical(value) {
	if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
	if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
	const keys = Object.keys(value)
		.filter((k) => value[k] !== undefined)
		.sort();
	return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
}

/** The envelope's digest: 16 lowercase hex digits. */
export function digest(envelope) {
	let hash = OFFSET;
	for (const byte of encoder.encode(canonical(envelope))) {
		hash = ((hash ^ BigInt(byte)) * PRIME) & MASK;
	}
	return hash.toString(16).padStart(16, "0");
}

/** The agent's session an envelope names: `params.sessionId`, else `result.sessionId`. */
export function sessionOf(envelope) {
	const id = envelope?.params?.sessionId ?? envelope?.result?.sessionId;
	return typeof id === "string" && id !== "" ? id : undefined;
}

/** The ACP server id of a URL or path (`/sandbox/v1/acp/sdk-mock-1?agent=mock` → `sdk-mock-1`). */
export function serverIdOf(url) {
	const tail = String(url ?? "").split("/v1/acp/")[1];
	if (tail === undefined) return undefined;
	const id = tail.split(/[/?#]/, 1)[0];
	return id === "" ? undefined : id;
}

/** What a record says of an envelope: its method, id, agent session and digest. */
export function envelopeFacts(envelope) {
	const out = {};
	if (!envelope || typeof envelope !== "object") return out;
	if (typeof envelope.method === "string") out.method = envelope.method;
	if (envelope.id !== undefined && envelope.id !== null) out.rpcId = envelope.id;
	const agentSession = sessionOf(envelope);
	if (agentSession) out.agentSession = agentSession;
	out.digest = digest(envelope);
	return out;
}

/** A SessionEvent of the SDK as a record's fields (the local session, its index, sender, connection). */
export function eventFacts(event) {
	const out = { ...envelopeFacts(event?.payload) };
	if (typeof event?.sessionId === "string") out.session = event.sessionId;
	if (Number.isFinite(Number(event?.eventIndex))) out.eventIndex = Number(event.eventIndex);
	if (typeof event?.sender === "string") out.sender = event.sender;
	if (typeof event?.connectionId === "string") out.conn = event.connectionId;
	return out;
}

const listened = new WeakMap();

/**
 * Listens to session `id` of `sdk` (once per SDK client and session) with
 * the SDK's own `onSessionEvent`, which it calls after its store write:
 * each event it hands the application becomes an `app` record in `log`.
 * Call it before the session is made, so its first events are heard.
 */
export function listen(sdk, id, log, now) {
	if (!sdk || typeof sdk.onSessionEvent !== "function" || typeof id !== "string") return;
	let ids = listened.get(sdk);
	if (!ids) listened.set(sdk, (ids = new Set()));
	if (ids.has(id)) return;
	ids.add(id);
	sdk.onSessionEvent(id, (event) => log.push({ kind: "app", at: now(), via: "listener", ...eventFacts(event) }));
}
