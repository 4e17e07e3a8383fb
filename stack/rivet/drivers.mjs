// continuity: the SessionPersistDriver the hosted SDK client keeps its
// sessions in, by name (the harness's --persist): the SDK's own in-memory
// driver, SQLite (better-sqlite3, as the SDK's persisting-sessions page and
// its example use) and Postgres (pg), both written to the SDK's documented
// contract because @sandbox-agent/persist-sqlite 0.4.2 on npm is a stub
// that throws on import and the Postgres one is not published, or the
// actor's own state (`rivet`, the default).
//
// Both SQL drivers keep the tables continuity's Rust drivers keep (records
// and payloads as text, so key order survives), so either client reads
// what the other wrote. A `(sessionId, eventIndex)` conflict is raised with
// the message the SDK matches to retry with the next index
// (`UNIQUE constraint failed: events.session_id, events.event_index`):
// without it, the SDK would drop the event instead of retrying.
//
// `counted` wraps any driver with what the harness's integrity check
// reads: how many distinct events the SDK asked to store, and how many of
// those writes failed (the SDK only logs a failed insertEvent).
import { InMemorySessionPersistDriver } from "sandbox-agent";

const DEFAULT_LIMIT = 100;
const CONFLICT = "UNIQUE constraint failed: events.session_id, events.event_index";

function offsetOf(cursor) {
	const n = cursor == null || cursor === "" ? 0 : Number.parseInt(String(cursor), 10);
	return Number.isFinite(n) && n > 0 ? n : 0;
}

function limitOf(limit) {
	const n = Number(limit);
	return Number.isFinite(n) && n >= 1 ? Math.floor(n) : DEFAULT_LIMIT;
}

function listPage(items, offset, total) {
	const next = offset + items.length;
	return next < total ? { items, nextCursor: String(next) } : { items };
}

function decodeEvent(row) {
	return {
		id: row.id,
		eventIndex: Number(row.event_index),
		sessionId: row.session_id,
		createdAt: Number(row.created_at),
		connectionId: row.connection_id,
		sender: row.sender,
		payload: JSON.parse(row.payload),
	};
}

/** SQLite through better-sqlite3: one file, WAL, shared by any process that opens it. */
export class SQLiteSessionPersistDriver {
	constructor(db) {
		this.db = db;
		db.pragma("journal_mode = WAL");
		db.pragma("busy_timeout = 5000");
		db.exec(`CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, record TEXT NOT NULL);
			CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, event_index INTEGER NOT NULL,
				created_at INTEGER NOT NULL, connection_id TEXT NOT NULL, sender TEXT NOT NULL, payload TEXT NOT NULL,
				UNIQUE (session_id, event_index));`);
	}
	static async open(filename) {
		let Database;
		try {
			Database = (await import("better-sqlite3")).default;
		} catch (error) {
			throw Object.assign(new Error(`the sqlite driver needs better-sqlite3's native module: ${error.message}`), {
				name: "PersistDriverUnavailable",
			});
		}
		return new SQLiteSessionPersistDriver(new Database(filename));
	}
	async getSession(id) {
		const row = this.db.prepare("SELECT record FROM sessions WHERE id = ?").get(id);
		return row ? JSON.parse(row.record) : undefined;
	}
	async listSessions(request = {}) {
		const offset = offsetOf(request?.cursor);
		const total = this.db.prepare("SELECT COUNT(*) AS n FROM sessions").get().n;
		const rows = this.db
			.prepare("SELECT record FROM sessions ORDER BY created_at, id LIMIT ? OFFSET ?")
			.all(limitOf(request?.limit), offset);
		return listPage(rows.map((r) => JSON.parse(r.record)), offset, total);
	}
	async updateSession(session) {
		this.db
			.prepare(
				"INSERT INTO sessions (id, created_at, record) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET created_at = excluded.created_at, record = excluded.record",
			)
			.run(session.id, session.createdAt, JSON.stringify(session));
	}
	async listEvents(request) {
		const offset = offsetOf(request?.cursor);
		const total = this.db.prepare("SELECT COUNT(*) AS n FROM events WHERE session_id = ?").get(request.sessionId).n;
		const rows = this.db
			.prepare(
				"SELECT id, event_index, session_id, created_at, connection_id, sender, payload FROM events WHERE session_id = ? ORDER BY event_index, id LIMIT ? OFFSET ?",
			)
			.all(request.sessionId, limitOf(request?.limit), offset);
		return listPage(rows.map(decodeEvent), offset, total);
	}
	async insertEvent(sessionId, event) {
		try {
			this.db
				.prepare(
					"INSERT INTO events (id, session_id, event_index, created_at, connection_id, sender, payload) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
				)
				.run(event.id, sessionId, event.eventIndex, event.createdAt, event.connectionId, event.sender, JSON.stringify(event.payload));
		} catch (error) {
			if (String(error?.code) === "SQLITE_CONSTRAINT_UNIQUE") throw new Error(`${CONFLICT} (${error.message})`);
			throw error;
		}
	}
	async close() {
		this.db.close();
	}
}

function validSchema(schema) {
	return /^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema);
}

/** Postgres through a pg Pool: a schema of its own; a query on a lost connection fails, the next gets a new one. */
export class PostgresSessionPersistDriver {
	constructor({ pool, schema }) {
		if (!validSchema(schema)) throw new Error(`invalid schema name ${JSON.stringify(schema)}`);
		this.pool = pool;
		this.schema = schema;
		// An idle client the server dropped (a restart) must not crash the process.
		pool.on("error", (error) => console.error(`continuity-sdk: postgres pool: ${error.message}`));
		this.ready = null;
	}
	static async open({ connectionString, schema }) {
		let pg;
		try {
			pg = (await import("pg")).default;
		} catch (error) {
			throw Object.assign(new Error(`the postgres driver needs the pg package: ${error.message}`), {
				name: "PersistDriverUnavailable",
			});
		}
		return new PostgresSessionPersistDriver({
			pool: new pg.Pool({ connectionString, max: 4, connectionTimeoutMillis: 5000 }),
			schema,
		});
	}
	table(name) {
		return `"${this.schema}".${name}`;
	}
	/** The tables, made once; a failure is tried again on the next call. */
	async init() {
		this.ready ??= this.pool
			.query(
				`CREATE SCHEMA IF NOT EXISTS "${this.schema}";
				CREATE TABLE IF NOT EXISTS ${this.table("sessions")} (id TEXT PRIMARY KEY, created_at BIGINT NOT NULL, record TEXT NOT NULL);
				CREATE TABLE IF NOT EXISTS ${this.table("events")} (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, event_index BIGINT NOT NULL,
					created_at BIGINT NOT NULL, connection_id TEXT NOT NULL, sender TEXT NOT NULL, payload TEXT NOT NULL,
					UNIQUE (session_id, event_index));`,
			)
			.catch((error) => {
				this.ready = null;
				if (error?.code === "23505") return; // another store made the schema first
				throw error;
			});
		await this.ready;
	}
	async query(sql, params) {
		await this.init();
		return this.pool.query(sql, params);
	}
	async getSession(id) {
		const { rows } = await this.query(`SELECT record FROM ${this.table("sessions")} WHERE id = $1`, [id]);
		return rows.length ? JSON.parse(rows[0].record) : undefined;
	}
	async listSessions(request = {}) {
		const offset = offsetOf(request?.cursor);
		const total = Number((await this.query(`SELECT COUNT(*) AS n FROM ${this.table("sessions")}`)).rows[0].n);
		const { rows } = await this.query(
			`SELECT record FROM ${this.table("sessions")} ORDER BY created_at, id LIMIT $1 OFFSET $2`,
			[limitOf(request?.limit), offset],
		);
		return listPage(rows.map((r) => JSON.parse(r.record)), offset, total);
	}
	async updateSession(session) {
		await this.query(
			`INSERT INTO ${this.table("sessions")} (id, created_at, record) VALUES ($1, $2, $3)
			 ON CONFLICT (id) DO UPDATE SET created_at = EXCLUDED.created_at, record = EXCLUDED.record`,
			[session.id, session.createdAt, JSON.stringify(session)],
		);
	}
	async listEvents(request) {
		const offset = offsetOf(request?.cursor);
		const total = Number(
			(await this.query(`SELECT COUNT(*) AS n FROM ${this.table("events")} WHERE session_id = $1`, [request.sessionId])).rows[0].n,
		);
		const { rows } = await this.query(
			`SELECT id, event_index, session_id, created_at, connection_id, sender, payload FROM ${this.table("events")}
			 WHERE session_id = $1 ORDER BY event_index, id LIMIT $2 OFFSET $3`,
			[request.sessionId, limitOf(request?.limit), offset],
		);
		return listPage(rows.map(decodeEvent), offset, total);
	}
	async insertEvent(sessionId, event) {
		try {
			await this.query(
				`INSERT INTO ${this.table("events")} (id, session_id, event_index, created_at, connection_id, sender, payload)
				 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
				[event.id, sessionId, event.eventIndex, event.createdAt, event.connectionId, event.sender, JSON.stringify(event.payload)],
			);
		} catch (error) {
			if (error?.code === "23505") throw new Error(`${CONFLICT} (${error.message})`);
			throw error;
		}
	}
	async close() {
		await this.pool.end();
	}
}

/**
 * The driver `spec` names ({driver: "memory"|"sqlite"|"postgres"|"rivet", …});
 * `actorState` makes the actor-state driver for `rivet` (and no spec).
 */
export async function openDriver(spec, actorState) {
	switch (spec?.driver ?? "rivet") {
		case "memory":
			return new InMemorySessionPersistDriver();
		case "sqlite":
			return SQLiteSessionPersistDriver.open(String(spec.filename));
		case "postgres":
			return PostgresSessionPersistDriver.open({ connectionString: spec.connectionString, schema: spec.schema });
		case "rivet":
			return actorState();
		default:
			throw Object.assign(new Error(`unknown persist driver ${JSON.stringify(spec.driver)}`), { name: "UserError" });
	}
}

/** `driver`, counting into `tally` ({inserted: {sessionId: n}, failed: {sessionId: n}}) the SDK's writes. */
export function counted(driver, tally, save) {
	const seen = new Set();
	return {
		getSession: (id) => driver.getSession(id),
		listSessions: (request) => driver.listSessions(request),
		updateSession: (session) => driver.updateSession(session),
		listEvents: (request) => driver.listEvents(request),
		async insertEvent(sessionId, event) {
			try {
				await driver.insertEvent(sessionId, event);
				if (!seen.has(event.id)) {
					seen.add(event.id);
					tally.inserted[sessionId] = (tally.inserted[sessionId] ?? 0) + 1;
				}
			} catch (error) {
				// A conflict is retried by the SDK with the next index: not a lost write.
				if (!String(error?.message).startsWith(CONFLICT)) {
					tally.failed[sessionId] = (tally.failed[sessionId] ?? 0) + 1;
					tally.failures.push(`${error?.name ?? "Error"}: ${error?.message ?? error}`.slice(0, 300));
				}
				throw error;
			} finally {
				await save().catch(() => {});
			}
		},
		close: () => driver.close?.(),
	};
}

/** Every event of a session, each as its JSON text (see the harness's `history`). */
export async function allEvents(driver, sessionId) {
	const out = [];
	let cursor;
	for (;;) {
		const page = await driver.listEvents({ sessionId, cursor, limit: 500 });
		out.push(...page.items.map((e) => JSON.stringify(e)));
		if (!page.nextCursor) return out;
		cursor = page.nextCursor;
	}
}
