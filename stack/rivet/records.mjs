// Session records and events as the SDK's SessionPersistDriver contract
// lists them, shared by the `persist` actor and the hosted client's
// in-actor driver: plain JSON values, a stable order, offset cursors.

/** The SDK's default page size for list calls. */
export const DEFAULT_LIMIT = 100;

// Actor state round-trips through CBOR; integers above 2^32 (e.g. createdAt in
// ms) come back from storage as BigInt, which the JSON encoding would render
// as ["$BigInt","..."]. Return plain JSON numbers to callers.
export function plain(v) {
	if (typeof v === "bigint") return Number(v);
	if (Array.isArray(v)) return v.map(plain);
	if (v && typeof v === "object") {
		const o = {};
		for (const [k, x] of Object.entries(v)) o[k] = plain(x);
		return o;
	}
	return v;
}

export function cmp(a, b) {
	return a < b ? -1 : a > b ? 1 : 0;
}

/** One page of `all` (already sorted) from an offset cursor; `nextCursor` is null on the last. */
export function page(all, cursor, limit) {
	const start = cursor == null || cursor === "" ? 0 : Number.parseInt(String(cursor), 10);
	const offset = Number.isFinite(start) && start > 0 ? start : 0;
	const n = Number.isFinite(Number(limit)) && Number(limit) > 0 ? Number(limit) : DEFAULT_LIMIT;
	const items = all.slice(offset, offset + n).map(plain);
	const next = offset + items.length;
	return { items, nextCursor: next < all.length ? String(next) : null };
}
