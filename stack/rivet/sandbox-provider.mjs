// continuity: a sandbox provider of the stack's own, written against the
// real SDK's `SandboxProvider` interface (sandbox-agent 0.4.2, its
// `types-*.d.ts`) as a user writes one for their own infrastructure, and
// the application's side of the reconnect design (the seed's
// `/api/sandbox/reconnect` route: `no_sandbox`, `connected`, `expired`).
// Shared by the SDK's two hosts: the `sdkClient` actor and the browser page.
//
// The provider's back end is the harness's sandbox service on loopback
// (src/stack/sandboxes.rs): a sandbox is a real sandbox-agent server of
// its own. The provider only calls it, as a cloud provider's SDK calls
// its API; `ensureServer` asks it to start the server again when it does
// not answer. Every call the SDK makes is logged with what the back end
// answered, and with who called: `SandboxAgent.start` itself (`start`),
// the client's health wait after three failed checks (`health-wait`), or
// the client otherwise (`client`: `destroySandbox`).

/** The provider's name: the prefix of the SDK's `sandboxId` (`continuity/sbx-…`). */
export const PROVIDER = "continuity";

/** A failure of the provider's back end, with its HTTP status. */
function serviceError(call, status, body) {
	const why = body?.error ?? `HTTP ${status}`;
	return Object.assign(new Error(`sandbox service ${call}: ${why}`), { name: "SandboxServiceError", status });
}

/**
 * The provider, its call log, and `during(who)`: the host says whether
 * the SDK is inside `SandboxAgent.start` (`start`) or past it (`health-wait`).
 * With `flight` (the actor's `Flight`, wire.mjs), each call is in flight
 * until it has its answer.
 */
export function sandboxProvider({ serviceUrl, DestroyedError, fetchImpl = (...args) => globalThis.fetch(...args), flight = null }) {
	const calls = [];
	let caller = "client";
	async function service(call, method, path, sandboxId) {
		// Past `SandboxAgent.start`, only the client's health wait calls `ensureServer` (0.4.2).
		const who = caller === "client" && call === "ensureServer" ? "health-wait" : caller;
		const entry = { call, sandboxId: sandboxId ?? null, caller: who, at: Date.now() };
		calls.push(entry);
		// In flight for continuity's hang detector (the host's `Flight`), when it keeps one.
		const landed = flight?.begin("request", `${method} the sandbox service: ${call}`) ?? (() => {});
		let response;
		let text;
		try {
			response = await fetchImpl(`${serviceUrl}${path}`, { method });
			text = await response.text();
		} finally {
			landed();
		}
		const body = text ? JSON.parse(text) : null;
		entry.status = response.status;
		entry.answer = body;
		entry.ms = Date.now() - entry.at;
		return { status: response.status, body };
	}
	const provider = {
		name: PROVIDER,
		defaultCwd: "/",
		async create() {
			const { status, body } = await service("create", "POST", "/sandboxes");
			if (status !== 201) throw serviceError("create", status, body);
			return String(body.id);
		},
		async destroy(sandboxId) {
			const { status, body } = await service("destroy", "DELETE", `/sandboxes/${sandboxId}`, sandboxId);
			// Destroying what is already gone is done.
			if (status !== 204 && status !== 404) throw serviceError("destroy", status, body);
		},
		/** Is this sandbox still there? A destroyed one is the SDK's SandboxDestroyedError, as e2b's and Sprites' providers throw it. */
		async reconnect(sandboxId) {
			const { status, body } = await service("reconnect", "GET", `/sandboxes/${sandboxId}`, sandboxId);
			if (status === 404) throw new DestroyedError(sandboxId, PROVIDER, { cause: serviceError("reconnect", status, body) });
			if (status !== 200) throw serviceError("reconnect", status, body);
		},
		async getUrl(sandboxId) {
			const { status, body } = await service("getUrl", "GET", `/sandboxes/${sandboxId}`, sandboxId);
			if (status !== 200) throw serviceError("getUrl", status, body);
			return String(body.url);
		},
		/** Start sandbox-agent again if it is down (a no-op when it answers). */
		async ensureServer(sandboxId) {
			const { status, body } = await service("ensureServer", "POST", `/sandboxes/${sandboxId}/server`, sandboxId);
			if (status !== 200) throw serviceError("ensureServer", status, body);
		},
	};
	return {
		provider,
		calls,
		during(who) {
			caller = who;
		},
	};
}

/** The log's calls from `from` on, as plain data. */
export function callsSince(box, from) {
	return box.calls.slice(from).map((c) => ({ ...c }));
}

/**
 * `SandboxAgent.start({ sandbox })`: a new sandbox and a client on it;
 * `sandboxId` is what the application persists.
 */
export async function startSandbox({ Sdk, box, options }) {
	box.during("start");
	try {
		const sdk = await Sdk.start({ sandbox: box.provider, ...options });
		return { sdk, sandboxId: sdk.sandboxId };
	} finally {
		box.during("client");
	}
}

/** Whether an error says the sandbox is gone (the seed's 404 / 410). */
function unavailable(error) {
	for (let e = error; e; e = e.cause) {
		if (e?.name === "SandboxDestroyedError" || e?.status === 404 || e?.status === 410) return true;
	}
	return false;
}

/**
 * The reconnect route: nothing persisted is `no_sandbox`; otherwise
 * `SandboxAgent.start({ sandbox, sandboxId })` (the provider's `reconnect`
 * and `ensureServer`, then the client's health wait) and the `pwd` probe
 * within `probeMs`: `connected`, or `expired` when the sandbox is gone.
 * Any other failure is thrown.
 */
export async function reattachSandbox({ Sdk, box, sandboxId, options, probeMs }) {
	if (!sandboxId) return { status: "no_sandbox" };
	const started = Date.now();
	let sdk;
	box.during("start");
	try {
		sdk = await Sdk.start({ sandbox: box.provider, sandboxId, ...options });
	} catch (error) {
		if (unavailable(error)) return { status: "expired", reason: error, reattachMs: Date.now() - started };
		throw error;
	} finally {
		box.during("client");
	}
	try {
		const run = await sdk.runProcess({ command: "pwd", timeoutMs: probeMs });
		return { status: "connected", sdk, probe: run, reattachMs: Date.now() - started };
	} catch (error) {
		if (!unavailable(error)) {
			await sdk.dispose().catch(() => {});
			throw error;
		}
		await sdk.dispose().catch(() => {});
		return { status: "expired", reason: error, reattachMs: Date.now() - started };
	}
}
