// continuity: a SessionPersistDriver over the browser's IndexedDB, written
// to the SDK's documented contract (sandbox-agent's "Persisting Sessions"
// names an IndexedDB driver; none is published on the npm registry).
//
// One database per cell attempt: `sessions` keyed by id, `events` keyed by
// id with a unique (sessionId, eventIndex) index. A taken index raises the
// message the SDK matches to retry with the next index (SQLite's wording,
// as the SQL drivers of stack/rivet/drivers.mjs raise it): without it the
// SDK would drop the event. Each event is stored whole beside its keys, so
// a listed event is the object the SDK wrote, key order included.
import { cmp, page } from "./records.mjs";

const CONFLICT = "UNIQUE constraint failed: events.session_id, events.event_index";
const VERSION = 1;

function request(req) {
	return new Promise((resolve, reject) => {
		req.onsuccess = () => resolve(req.result);
		req.onerror = () => reject(req.error);
	});
}

function done(tx) {
	return new Promise((resolve, reject) => {
		tx.oncomplete = () => resolve();
		// The failed request's error (a taken unique index: ConstraintError)
		// reaches the transaction's handler first; `tx.error` is set only later.
		tx.onerror = (event) => reject(event.target?.error ?? tx.error ?? new Error("IndexedDB request failed"));
		tx.onabort = () => reject(tx.error ?? new Error("IndexedDB transaction aborted"));
	});
}

/** The SDK's ListPage: no `nextCursor` on the last page. */
function sdkPage({ items, nextCursor }) {
	return nextCursor == null ? { items } : { items, nextCursor };
}

export class IndexedDbSessionPersistDriver {
	static async open(name) {
		const opening = indexedDB.open(String(name), VERSION);
		opening.onupgradeneeded = () => {
			const db = opening.result;
			db.createObjectStore("sessions", { keyPath: "id" });
			const events = db.createObjectStore("events", { keyPath: "id" });
			events.createIndex("session", "sessionId");
			events.createIndex("sessionIndex", ["sessionId", "eventIndex"], { unique: true });
		};
		return new IndexedDbSessionPersistDriver(await request(opening));
	}

	constructor(db) {
		this.db = db;
	}

	async getSession(id) {
		const tx = this.db.transaction("sessions", "readonly");
		const found = await request(tx.objectStore("sessions").get(String(id)));
		return found ?? undefined;
	}

	async listSessions(req = {}) {
		const tx = this.db.transaction("sessions", "readonly");
		const all = (await request(tx.objectStore("sessions").getAll())).sort(
			(a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id),
		);
		return sdkPage(page(all, req?.cursor, req?.limit));
	}

	async updateSession(session) {
		const tx = this.db.transaction("sessions", "readwrite");
		tx.objectStore("sessions").put(session);
		await done(tx);
	}

	async listEvents(req) {
		const tx = this.db.transaction("events", "readonly");
		const rows = await request(tx.objectStore("events").index("session").getAll(IDBKeyRange.only(String(req.sessionId))));
		const all = rows.sort((a, b) => cmp(a.eventIndex, b.eventIndex) || cmp(a.id, b.id)).map((row) => row.event);
		return sdkPage(page(all, req?.cursor, req?.limit));
	}

	async insertEvent(sessionId, event) {
		const tx = this.db.transaction("events", "readwrite");
		const row = { id: event.id, sessionId: String(sessionId), eventIndex: Number(event.eventIndex), event };
		tx.objectStore("events").put(row);
		try {
			await done(tx);
		} catch (error) {
			if (error?.name === "ConstraintError") {
				throw Object.assign(new Error(`${CONFLICT} (${error.message})`), { name: "ConstraintError" });
			}
			throw error;
		}
	}

	close() {
		this.db.close();
	}
}
