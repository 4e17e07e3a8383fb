// continuity: the hosted SDK client's wire, recorded as continuity's own
// client records it in a cell's trace. `recordingFetch` wraps the `fetch`
// the SDK is given: every exchange becomes a record (method, path and query,
// status, start / headers / end times, bytes, the problem type of an error
// status, the kind of a transport error), every event of an SSE stream one
// too (id, event name, envelope method and id), and each stream's end. The
// JSON-RPC envelopes a POST carries out and back are recorded as `rpc`.
//
// Times are epoch milliseconds (`performance.timeOrigin + performance.now()`,
// sub-millisecond): continuity maps them onto its cell's clock, which also
// holds across runner restarts (a new process, the same system clock).
//
// Never recorded: request or response headers (Authorization lives there),
// bodies, or an `access_token` query value (replaced by `[redacted]`).
//
// Beside the records, `Flight` keeps what is in flight in this host right
// now (requests awaiting their answers, open streams and sockets, store
// calls, the host's own work) and the actions it is running: continuity
// polls it while a call is pending, so its hang detector sees the SDK's
// wire live (a record only exists once its exchange has ended).

import { digest, eventFacts, serverIdOf, sessionOf } from "./ledger.mjs";

/** Records kept between drains; past it they are counted, not kept. */
export const WIRE_LIMIT = 20_000;
/** Responses and prompts remembered for a turn's channel. */
const CHANNEL_LIMIT = 4096;
/** `Date.now()` and `performance` may disagree by a few milliseconds. */
const CLOCK_SLACK_MS = 50;
/** Longest text kept from a server's problem detail or an error message. */
const TEXT_LIMIT = 300;

/**
 * How long a host's `retire` lets the actions it ended finish answering,
 * and the store writes under way end, before it goes.
 */
export const RETIRE_DRAIN_MS = 2_000;

export function epochMs() {
	return performance.timeOrigin + performance.now();
}

/**
 * What is in flight in this host, for continuity's hang detector: each
 * thing that could still settle a pending call (kind `request`, `stream`,
 * `store` or `host`) from its start until its end, the actions running
 * (by phase), and the latest activity. Its report is plain data in epoch
 * milliseconds.
 */
export class Flight {
	constructor() {
		this.next = 0;
		this.open = new Map();
		this.acting = new Map();
		this.activeAt = null;
	}
	/** Something happened at `at`. */
	touch(at = epochMs()) {
		if (this.activeAt === null || at > this.activeAt) this.activeAt = at;
	}
	/** `what` in flight from now until the returned function is called (once is enough). */
	begin(kind, what) {
		return this.#enter(this.open, { kind, what: cut(what) });
	}
	/** An action of phase `phase` running from now until the returned function is called. */
	act(phase) {
		return this.#enter(this.acting, { phase: String(phase ?? "") });
	}
	#enter(map, entry) {
		const id = ++this.next;
		const since = epochMs();
		map.set(id, { ...entry, since });
		this.touch(since);
		let done = false;
		return () => {
			if (done) return;
			done = true;
			map.delete(id);
			this.touch();
		};
	}
	report() {
		return { now: epochMs(), activeAt: this.activeAt, open: [...this.open.values()], acting: [...this.acting.values()] };
	}
	/**
	 * Resolves once nothing of `kind` is in flight, seen so twice a timer
	 * tick apart (the SDK starts its next queued store write as the last one
	 * ends), or after `boundMs`; `true` when quiet.
	 */
	async quiet(kind, boundMs) {
		const until = epochMs() + boundMs;
		const busy = () => [...this.open.values()].some((entry) => entry.kind === kind);
		let idle = 0;
		while (idle < 2) {
			if (epochMs() >= until) return false;
			idle = busy() ? 0 : idle + 1;
			if (idle < 2) await new Promise((resolve) => setTimeout(resolve, busy() ? 2 : 0));
		}
		return true;
	}
}

/**
 * The records of one actor's SDK clients until continuity has them. Each
 * record gets a sequence number; an answer carries every record after the
 * one continuity acknowledged (`ack`), so an answer continuity never read
 * (a phase it gave up on at its deadline) loses nothing: the next one
 * carries the same records again, and continuity keeps each once. `origin`
 * names this log: a restarted runner starts a new one, and its numbers.
 */
export class WireLog {
	constructor(limit = WIRE_LIMIT) {
		this.limit = limit;
		this.origin = `${globalThis.process?.pid ?? "page"}-${Math.random().toString(36).slice(2, 10)}`;
		this.records = [];
		this.seq = 0;
		this.dropped = 0;
		this.flight = new Flight();
		// A turn's channel, kept apart from the records (which continuity
		// acknowledges and so empties): how each response first arrived,
		// each prompt sent, and the last stream event id per ACP path.
		this.answers = new Map();
		this.prompts = [];
		this.lastEventIds = new Map();
	}
	/** A JSON-RPC response's first arrival: `post`, `stream` or `resumed stream`. */
	noteAnswer(rpcId, via) {
		const key = String(rpcId);
		if (this.answers.has(key)) return;
		this.answers.set(key, via);
		if (this.answers.size > CHANNEL_LIMIT) this.answers.delete(this.answers.keys().next().value);
	}
	/** A `session/prompt` POSTed to `path` at `at`, with the last stream event id the client had then. */
	notePrompt(rpcId, path, at) {
		this.prompts.push({ rpcId: String(rpcId), path, at, lastEventId: this.lastEventIds.get(path) ?? null });
		if (this.prompts.length > CHANNEL_LIMIT) this.prompts.shift();
	}
	noteEventId(path, id) {
		this.lastEventIds.set(path, id);
	}
	/**
	 * The first `session/prompt` sent from `since` (epoch ms) on: its ACP
	 * server id, the last stream event id the client had when it went out,
	 * and how its answer arrived (`null`: it never did).
	 */
	turnChannel(since) {
		const prompt = this.prompts.find((p) => p.at >= since - CLOCK_SLACK_MS);
		if (!prompt) return {};
		const tail = prompt.path.split("/v1/acp/")[1] ?? "";
		return {
			serverId: tail ? decodeURIComponent(tail) : null,
			lastEventId: prompt.lastEventId,
			answeredVia: this.answers.get(prompt.rpcId) ?? null,
		};
	}
	push(record) {
		this.flight.touch(record.at ?? epochMs());
		if (this.records.length >= this.limit) {
			this.dropped += 1;
			return;
		}
		this.seq += 1;
		this.records.push({ seq: this.seq, ...record });
	}
	/** Forgets what continuity has: records up to `ack.seq` of this origin. */
	acknowledge(ack) {
		if (!ack || ack.origin !== this.origin) return;
		const upTo = Number(ack.seq);
		if (!Number.isFinite(upTo)) return;
		let n = 0;
		while (n < this.records.length && this.records[n].seq <= upTo) n += 1;
		if (n > 0) this.records.splice(0, n);
	}
	/** The records continuity does not have yet, oldest first. */
	pending() {
		return { origin: this.origin, records: this.records.slice(), dropped: this.dropped };
	}
}

/** `/v1/acp/x?agent=mock` from any URL, with an `access_token` value redacted. */
export function tracedUrl(input) {
	const raw = typeof input === "string" ? input : input instanceof URL ? input.href : String(input?.url ?? input);
	let path;
	let query;
	try {
		const u = new URL(raw);
		path = u.pathname;
		query = u.search.replace(/^\?/, "");
	} catch {
		[path, query = ""] = raw.split("?", 2);
	}
	if (!query) return path;
	const parts = query
		.split("&")
		.map((pair) => (/^access_token=/i.test(pair) ? `${pair.split("=", 1)[0]}=[redacted]` : pair));
	return `${path}?${parts.join("&")}`;
}

/** What an exchange is for, in the names continuity's trace uses. */
export function purposeOf(method, path) {
	if (path.endsWith("/v1/health")) return "health";
	if (path.includes("/v1/acp/")) {
		if (method === "GET") return "stream";
		if (method === "DELETE") return "delete";
		return "acp";
	}
	if (path.includes("/v1/processes")) return "process";
	if (path.includes("/v1/fs/")) return "fs";
	return "api";
}

function cut(text) {
	const s = String(text ?? "");
	return s.length <= TEXT_LIMIT ? s : `${s.slice(0, TEXT_LIMIT - 1)}…`;
}

/** A transport failure in continuity's kinds: refused, reset, closed, dns, tls, timeout, other. */
export function errorKind(error) {
	const codes = [];
	for (let e = error, depth = 0; e && depth < 6; e = e.cause, depth++) {
		if (e.code) codes.push(String(e.code));
		if (e.name) codes.push(String(e.name));
	}
	const has = (...names) => codes.some((c) => names.includes(c));
	if (has("ECONNREFUSED")) return "refused";
	if (has("ECONNRESET", "EPIPE")) return "reset";
	if (has("UND_ERR_SOCKET", "UND_ERR_CLOSED")) return "closed";
	if (has("ENOTFOUND", "EAI_AGAIN")) return "dns";
	if (has("TimeoutError", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "ETIMEDOUT")) {
		return "timeout";
	}
	if (codes.some((c) => c.startsWith("ERR_TLS") || c.includes("CERT"))) return "tls";
	return "other";
}

function describe(error) {
	const parts = [];
	for (let e = error, depth = 0; e && depth < 4; e = e.cause, depth++) {
		parts.push(`${e.name ?? "Error"}: ${e.message ?? e}${e.code ? ` (${e.code})` : ""}`);
	}
	return cut(parts.join("; cause: "));
}

function isAbort(error) {
	return error?.name === "AbortError";
}

/** An envelope's method, id, error code and agent session, as continuity's `rpc` and `sse` events carry them. */
function envelopeFields(envelope) {
	const out = {};
	if (!envelope || typeof envelope !== "object") return out;
	if (typeof envelope.method === "string") out.method = envelope.method;
	if (envelope.id !== undefined && envelope.id !== null) out.rpcId = envelope.id;
	if (envelope.error && envelope.error.code !== undefined) out.errorCode = envelope.error.code;
	const session = sessionOf(envelope);
	if (session) out.session = session;
	return out;
}

/** A JSON-RPC response (an id, and a result or an error), not a request. */
function isResponse(envelope) {
	return (
		envelope !== null &&
		typeof envelope === "object" &&
		envelope.id !== undefined &&
		envelope.id !== null &&
		envelope.method === undefined &&
		("result" in envelope || "error" in envelope)
	);
}

function parseJson(text) {
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}

function bodyText(body) {
	if (typeof body === "string") return body;
	if (body instanceof Uint8Array) return new TextDecoder().decode(body);
	if (body instanceof ArrayBuffer) return new TextDecoder().decode(new Uint8Array(body));
	return undefined;
}

function bodyLength(body) {
	if (body == null) return 0;
	if (typeof body === "string") return new TextEncoder().encode(body).length;
	if (body.byteLength !== undefined) return body.byteLength;
	return 0;
}

/** Statuses whose Response can carry no body. */
const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * A `fetch` that records each exchange into `log` and otherwise behaves as
 * `inner`: non-stream bodies are read in full (their end time and size) and
 * handed on unchanged; an event stream is passed through as it arrives.
 */
export function recordingFetch(log, inner = globalThis.fetch.bind(globalThis)) {
	return async function fetch(input, init = {}) {
		const method = String(init.method ?? input?.method ?? "GET").toUpperCase();
		const url = tracedUrl(input);
		const path = url.split("?", 1)[0];
		const purpose = purposeOf(method, path);
		const start = epochMs();
		// In flight until its answer is read (a stream: until it ends), whichever way.
		const landed = log.flight?.begin(purpose === "stream" ? "stream" : "request", `${method} ${url}`) ?? (() => {});
		const sentText = bodyText(init.body);
		const base = { kind: "http", method, url, purpose, start, sent: bodyLength(init.body) };
		if (method === "POST" && sentText !== undefined) {
			const envelope = parseJson(sentText);
			if (envelope && typeof envelope === "object") {
				log.push({ kind: "rpc", at: start, dir: "out", via: "post", ...envelopeFields(envelope) });
				if (envelope.method === "session/prompt") log.notePrompt?.(envelope.id, path, start);
			}
		}
		let response;
		try {
			response = await inner(input, init);
		} catch (error) {
			// The SDK aborting its own request (it closed the transport) is no failure of the wire.
			const outcome = isAbort(error) ? { closedBy: "client" } : { error: { kind: errorKind(error), detail: describe(error) } };
			log.push({ ...base, at: epochMs(), received: 0, ...outcome });
			landed();
			throw error;
		}
		const headersAt = epochMs();
		const stream = (response.headers.get("content-type") ?? "").includes("text/event-stream");
		if (stream && response.ok && response.body) {
			const lastEventId = new Headers(init.headers ?? {}).get("last-event-id");
			const resumed = lastEventId !== null;
			log.push({ ...base, at: headersAt, headersAt, status: response.status, received: 0, ...(resumed ? { lastEventId } : {}) });
			return new Response(recordedStream(response.body, log, url, resumed, landed), {
				status: response.status,
				statusText: response.statusText,
				headers: response.headers,
			});
		}
		let bytes;
		try {
			bytes = new Uint8Array(await response.arrayBuffer());
		} catch (error) {
			log.push({ ...base, at: epochMs(), headersAt, status: response.status, received: 0, error: { kind: errorKind(error), detail: describe(error) } });
			landed();
			throw error;
		}
		landed();
		const record = { ...base, at: epochMs(), headersAt, status: response.status, received: bytes.length };
		const text = bytes.length > 0 ? new TextDecoder().decode(bytes) : "";
		if (!response.ok) {
			const problem = parseJson(text);
			if (problem && typeof problem === "object") {
				if (typeof problem.type === "string") record.problemType = cut(problem.type);
				const detail = problem.detail ?? problem.title;
				if (typeof detail === "string") record.detail = cut(detail);
			}
		}
		log.push(record);
		if (method === "POST" && response.status === 200 && text.trim()) {
			const envelope = parseJson(text);
			if (envelope && typeof envelope === "object") {
				log.push({ kind: "rpc", at: record.at, dir: "in", via: "post", ...envelopeFields(envelope) });
				if (isResponse(envelope)) log.noteAnswer?.(envelope.id, "post");
			}
		}
		return new Response(NULL_BODY.has(response.status) ? null : bytes, {
			status: response.status,
			statusText: response.statusText,
			headers: response.headers,
		});
	};
}

/**
 * `body` passed through as it arrives, each SSE event recorded (split as
 * acp-http-client splits them: blank-line separated, CRLF read as LF) and
 * the stream's end: clean, broken (with the error's kind) or closed by the
 * SDK itself (it aborts its GET when it closes the transport).
 */
function recordedStream(body, log, url, resumed, landed = () => {}) {
	const path = url.split("?", 1)[0];
	const reader = body.getReader();
	const decoder = new TextDecoder();
	let buffer = "";
	let events = 0;
	let received = 0;
	let ended = false;
	const end = (error) => {
		if (ended) return;
		ended = true;
		const record = { kind: "stream_end", at: epochMs(), url, events, received };
		if (error && isAbort(error)) record.closedBy = "client";
		else if (error) record.error = { kind: errorKind(error), detail: describe(error) };
		log.push(record);
		landed();
	};
	const event = (chunk) => {
		if (!chunk.trim()) return;
		let name = "message";
		let id = "";
		const data = [];
		for (const line of chunk.split("\n")) {
			if (!line || line.startsWith(":")) continue;
			if (line.startsWith("event:")) name = line.slice(6).trim();
			else if (line.startsWith("id:")) id = line.slice(3).trim();
			else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
		}
		const payload = data.join("\n");
		const bytes = new TextEncoder().encode(payload).length;
		events += 1;
		received += bytes;
		const record = { kind: "sse", at: epochMs(), event: name, bytes };
		if (id) {
			record.id = id;
			log.noteEventId?.(path, id);
		}
		const stream = serverIdOf(path);
		if (stream) record.stream = stream;
		if (name === "message" && payload.trim()) {
			const envelope = parseJson(payload);
			Object.assign(record, envelopeFields(envelope));
			if (envelope !== undefined) record.digest = digest(envelope);
			if (isResponse(envelope)) log.noteAnswer?.(envelope.id, resumed ? "resumed stream" : "stream");
		}
		log.push(record);
	};
	return new ReadableStream({
		async pull(controller) {
			let next;
			try {
				next = await reader.read();
			} catch (error) {
				end(error);
				controller.error(error);
				return;
			}
			if (next.done) {
				end(null);
				controller.close();
				return;
			}
			buffer += decoder.decode(next.value, { stream: true }).replace(/\r\n/g, "\n");
			let at = buffer.indexOf("\n\n");
			while (at !== -1) {
				event(buffer.slice(0, at));
				buffer = buffer.slice(at + 2);
				at = buffer.indexOf("\n\n");
			}
			controller.enqueue(next.value);
		},
		cancel(reason) {
			end(Object.assign(new Error(String(reason ?? "cancelled")), { name: "AbortError" }));
			return reader.cancel(reason);
		},
	});
}

/** Wraps a SessionPersistDriver so each call is recorded as a `store` record. */
export function recordingPersist(log, driver, name = "actor-state") {
	const calls = ["getSession", "listSessions", "updateSession", "listEvents", "insertEvent"];
	const wrapped = {};
	for (const call of calls) {
		wrapped[call] = async (...args) => {
			const start = epochMs();
			// An insertEvent's event, as the checker follows it.
			const facts = call === "insertEvent" ? eventFacts(args[1]) : {};
			const landed = log.flight?.begin("store", `${name}: ${call}`) ?? (() => {});
			try {
				const out = await driver[call](...args);
				log.push({ kind: "store", start, at: epochMs(), call, driver: name, ok: true, ...facts });
				return out;
			} catch (error) {
				log.push({ kind: "store", start, at: epochMs(), call, driver: name, ok: false, error: describe(error), ...facts });
				throw error;
			} finally {
				landed();
			}
		};
	}
	return wrapped;
}

/**
 * `Impl` (the WebSocket class the SDK's terminal uses) with each socket in
 * `flight` from its creation until it closes, and each message activity.
 */
export function trackedWebSocket(Impl, flight) {
	if (!Impl) return Impl;
	return class TrackedWebSocket extends Impl {
		constructor(url, ...rest) {
			super(url, ...rest);
			const closed = flight.begin("stream", `WebSocket ${tracedUrl(url)}`);
			this.addEventListener("close", () => closed());
			this.addEventListener("message", () => flight.touch());
		}
	};
}
