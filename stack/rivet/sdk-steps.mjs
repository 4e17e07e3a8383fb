// continuity: the scenario steps beyond sessions, taken through the real
// sandbox-agent SDK's own calls, shared by its two hosts (the `sdkClient`
// actor, sdk-client.mjs, and the browser page, page.mjs): turns that run on
// across phases (`session.prompt` left pending while the target restarts,
// its chunks counted from the SDK's own `onEvent`), the sandbox (probe,
// files, processes, logs) and the process terminal socket. Every answer is
// what the SDK call returned, as plain data; an SDK error is thrown as is
// (the host turns it into `{ ok: false, error }`).
//
// One `SdkSteps` per host: it holds the running turns and open terminals,
// which live only in memory (a woken actor or a reloaded page has none).

/** How long the probe's `pwd` may take (the reconnect design's limit). */
export const PROBE_LIMIT_MS = 5_000;
/** How many of a turn's chunk texts an answer carries at most. */
const MAX_CHUNKS = 2_000;
/** How long `processStatus` waits for `logsContain` to show up in the logs. */
const LOG_SETTLE_MS = 1_000;
/** How often a wait looks again. */
const POLL_MS = 25;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function named(name, message, extra = {}) {
	return Object.assign(new Error(message), { name, ...extra });
}

/** The text of an `agent_message_chunk` event the SDK delivered, if it is one. */
function chunkText(event) {
	const update = event?.payload?.params?.update;
	if (update?.sessionUpdate !== "agent_message_chunk") return null;
	const text = update?.content?.text;
	return typeof text === "string" ? text : null;
}

function utf8(bytes) {
	return new TextDecoder().decode(bytes);
}

/** A process log entry's bytes as text (`base64` or `utf8`, as the server says). */
function entryText(entry) {
	if (entry?.encoding === "base64") {
		const raw = atob(String(entry.data ?? ""));
		return utf8(Uint8Array.from(raw, (c) => c.charCodeAt(0)));
	}
	return String(entry?.data ?? "");
}

export class SdkSteps {
	/**
	 * `WebSocketImpl`: the WebSocket class the SDK's terminal socket uses
	 * (Node 20 has none built in); `describeError`: the host's error as data.
	 */
	constructor({ WebSocketImpl, describeError }) {
		this.WebSocketImpl = WebSocketImpl;
		this.describeError = describeError;
		this.turns = new Map();
		this.terminals = new Map();
		// Each await's way to stop waiting now (continuity's hang detector
		// found its turn's prompt with nothing in flight: `cutWaits`).
		this.cuts = new Set();
	}

	/** Every wait of this host's own (a turn's await) ends now; how many did. */
	cutWaits() {
		const n = this.cuts.size;
		for (const cut of this.cuts) cut();
		this.cuts.clear();
		return n;
	}

	// --- Turns ----------------------------------------------------------

	/**
	 * `session.prompt` started and left running as turn `turn`: what the
	 * SDK delivers meanwhile through `session.onEvent` is kept with it.
	 */
	startTurn(session, text, turn) {
		const chunks = [];
		let events = 0;
		const off = session.onEvent((event) => {
			events += 1;
			const chunk = chunkText(event);
			if (chunk !== null && chunks.length < MAX_CHUNKS) chunks.push(chunk);
		});
		const started = Date.now();
		const entry = { started, chunks, events: () => events, settled: null };
		entry.done = session.prompt([{ type: "text", text }]).then(
			(response) => (entry.settled = { outcome: "completed", stopReason: response?.stopReason ?? null }),
			(error) => (entry.settled = { outcome: "failed", error }),
		);
		entry.off = off;
		this.turns.set(turn, entry);
		return { startedAt: started };
	}

	/**
	 * Turn `turn`'s outcome, waiting up to `waitMs` (or until `cutWaits`): `completed` with the
	 * SDK's stop reason, `failed` with its error as data, or `lost` (the prompt still pending: the SDK has no
	 * call that cancels one turn, `session/cancel` by hand is refused).
	 */
	async awaitTurn(turn, waitMs) {
		const entry = this.turns.get(turn);
		if (!entry) {
			throw named(
				"TurnNotStarted",
				`turn \`${turn}\` is not running on this host: it was never started here, or this host (the SDK's process) restarted since and the turn's promise went with it`,
			);
		}
		let cut;
		const cutShort = new Promise((resolve) => {
			cut = resolve;
			this.cuts.add(resolve);
		});
		await Promise.race([entry.done, sleep(Math.max(0, waitMs)), cutShort]);
		this.cuts.delete(cut);
		const seen = {
			startedAt: entry.started,
			turnMs: Date.now() - entry.started,
			eventsSeen: entry.events(),
			chunks: [...entry.chunks],
		};
		if (entry.settled === null) return { turnOutcome: "lost", ...seen };
		entry.off();
		if (entry.settled.outcome === "failed") {
			return { turnOutcome: "failed", error: this.describeError(entry.settled.error), ...seen };
		}
		return { turnOutcome: "completed", stopReason: entry.settled.stopReason, ...seen };
	}

	// --- Sandbox --------------------------------------------------------

	/** The probe: `runProcess` of `pwd`, as the SDK returns it. */
	async probe(sdk) {
		return { run: await sdk.runProcess({ command: "pwd", timeoutMs: PROBE_LIMIT_MS }) };
	}

	/** `mkdirFs` of the file's folder, then `writeFsFile`. */
	async writeFile(sdk, path, content) {
		const folder = path.slice(0, path.lastIndexOf("/"));
		if (folder) await sdk.mkdirFs({ path: folder });
		return { written: await sdk.writeFsFile({ path }, new TextEncoder().encode(content)) };
	}

	/** `readFsFile`: the bytes as text, and whether the file is listed by `listFsEntries`. */
	async readFile(sdk, path) {
		const folder = path.slice(0, path.lastIndexOf("/")) || "/";
		const name = path.slice(path.lastIndexOf("/") + 1);
		const bytes = await sdk.readFsFile({ path });
		const entries = await sdk.listFsEntries({ path: folder }).catch(() => null);
		const listed = Array.isArray(entries) ? entries.some((e) => e?.name === name || e?.path === path) : null;
		return { content: utf8(bytes), bytes: bytes.length, listed };
	}

	/** `createProcess`: the SDK's ProcessInfo. */
	async spawnProcess(sdk, { command, args, tty, env }) {
		return { process: await sdk.createProcess({ command, args, tty, interactive: tty, env }) };
	}

	/**
	 * `listProcesses`, `getProcess`, `getProcessLogs` (again within a second
	 * while `logsContain` is not there yet): each as the SDK returned it; a
	 * failing `getProcess` comes back as `processError`, not thrown.
	 */
	async processStatus(sdk, id, logsContain) {
		const listed = ((await sdk.listProcesses())?.processes ?? []).some((p) => p?.id === id);
		let info;
		try {
			info = await sdk.getProcess(id);
		} catch (error) {
			return { listed, processError: this.describeError(error) };
		}
		const until = Date.now() + LOG_SETTLE_MS;
		for (;;) {
			const logs = await sdk.getProcessLogs(id);
			const entries = logs?.entries ?? [];
			const text = entries.map(entryText).join("");
			if (!logsContain || text.includes(logsContain) || Date.now() >= until) {
				return { listed, process: info, logEntries: entries.length, logText: text };
			}
			await sleep(POLL_MS * 2);
		}
	}

	// --- Terminals ------------------------------------------------------

	/** `connectProcessTerminal`, waited on until the server's `ready` frame (or its end). */
	async terminalAttach(sdk, label, processId, waitMs) {
		const old = this.terminals.get(label);
		if (old) old.term.close();
		const term = sdk.connectProcessTerminal(processId, this.WebSocketImpl ? { WebSocket: this.WebSocketImpl } : {});
		const entry = { term, processId, output: "", mark: 0, sent: [], closed: null, error: null, ready: false };
		term.onData((data) => (entry.output += typeof data === "string" ? data : utf8(data)));
		term.onError((error) => (entry.error = error?.message ?? String(error?.error ?? error)));
		term.socket.addEventListener("close", (e) => {
			entry.closed = { code: Number(e?.code ?? 1006), reason: String(e?.reason ?? ""), clean: Boolean(e?.wasClean) };
		});
		const ready = new Promise((resolve) => term.onReady(() => resolve("ready")));
		const ended = term.closed.then(() => "closed");
		const outcome = await Promise.race([ready, ended, sleep(waitMs).then(() => "timeout")]);
		this.terminals.set(label, entry);
		if (outcome !== "ready") {
			throw this.terminalError(entry, outcome === "timeout" ? `no ready frame within ${waitMs} ms` : null);
		}
		entry.ready = true;
		return { processId, ready: true };
	}

	/** The terminal's end as an error the report classifies: its close code leads. */
	terminalError(entry, fallback) {
		if (entry.closed) {
			const { code, reason } = entry.closed;
			return named("TerminalClosed", `ws close ${code}${reason ? ` (${reason})` : ""}`, { closeCode: code });
		}
		if (entry.error) return named("TerminalError", entry.error);
		return named("TerminalError", fallback ?? "the terminal is not open");
	}

	entry(label) {
		const entry = this.terminals.get(label);
		if (!entry) {
			throw named(
				"NotAttached",
				`terminal \`${label}\` is not attached on this host: its attach failed, or this host (the SDK's process) restarted since and the socket went with it`,
			);
		}
		return entry;
	}

	/** `sendInput` of a line; the output before it is where `terminalExpect` starts looking. */
	terminalSend(label, text) {
		const entry = this.entry(label);
		entry.mark = entry.output.length;
		entry.sent.push(text);
		if (entry.closed) throw this.terminalError(entry);
		entry.term.sendInput(`${text}\n`);
		return { bytes: text.length + 1 };
	}

	/** Waits up to `waitMs` for `text` (default: the line last sent) in what the socket delivered since. */
	async terminalExpect(label, text, waitMs) {
		const entry = this.entry(label);
		const wanted = text ?? entry.sent.at(-1);
		if (wanted == null) throw named("NothingSent", `nothing was sent on terminal \`${label}\` to expect back`);
		const until = Date.now() + waitMs;
		for (;;) {
			const since = entry.output.slice(entry.mark);
			if (since.includes(wanted)) return { expected: wanted, bytesSeen: since.length };
			if (entry.closed || Date.now() >= until) {
				throw Object.assign(this.terminalError(entry, `${JSON.stringify(wanted)} did not come back within ${waitMs} ms`), {
					output: since.slice(-512),
				});
			}
			await sleep(POLL_MS);
		}
	}

	/**
	 * The old socket's fate (closed with its code, still open, or gone with
	 * a restart of this host), then a new `connectProcessTerminal` for the
	 * same process (`processId`, the executor's record, when this host has
	 * none), and whether it replays the first line ever sent (scrollback;
	 * unknown when this host forgot what was sent).
	 */
	async terminalReattach(sdk, label, waitMs, scrollbackMs, processId) {
		const old = this.terminals.get(label) ?? (processId ? null : this.entry(label));
		const fate = !old
			? { oldSocket: "gone" }
			: old.closed
				? { oldSocket: "closed", oldCloseCode: old.closed.code, oldCloseClean: old.closed.clean, oldCloseReason: old.closed.reason }
				: { oldSocket: "open" };
		old?.term.close();
		const sent = old?.sent ?? [];
		await this.terminalAttach(sdk, label, old?.processId ?? processId, waitMs);
		const fresh = this.terminals.get(label);
		fresh.sent = sent;
		const until = Date.now() + scrollbackMs;
		while (!(sent[0] && fresh.output.includes(sent[0])) && Date.now() < until) await sleep(10);
		// No `undefined` in an answer: the Rivet Engine's encoding keeps it as a value no JSON reader takes.
		const kept = sent[0] ? { scrollbackKept: fresh.output.includes(sent[0]) } : {};
		const answer = { ...fate, scrollbackBytes: fresh.output.length, ...kept };
		fresh.mark = fresh.output.length;
		return answer;
	}

	/** Every terminal closed, every turn's listener removed: the host is going. */
	close() {
		for (const entry of this.terminals.values()) entry.term.close();
		this.terminals.clear();
		for (const entry of this.turns.values()) entry.off?.();
		this.turns.clear();
	}
}
