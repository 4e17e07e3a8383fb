#!/usr/bin/env node
// continuity's test suite: a stand-in for the local stack's nginx gateway
// (run by setting CONTINUITY_NGINX to this file), to feed the always-on
// checker event streams no real gateway sends. It reads the nginx.conf the
// stack wrote (`-c`), listens where nginx would, strips `/sandbox` and
// forwards to the same upstream (the agent hop), an event stream event by
// event. Started again by the `gateway` target, it misbehaves once per
// start after its first (so after each restart), on the first SSE event
// that carries a `session/update`, as STANDIN_GATEWAY says:
//
//   duplicate  passes that event on twice
//   reorder    holds it back and passes it on after the event that follows
//   drop       never passes it on
//   pass       nothing: the control, every byte as it came
//
// What it did is appended to standin.log in the gateway's folder. It is
// not nginx: no WebSocket upgrades, no reload (SIGHUP is ignored).

import fs from "node:fs";
import http from "node:http";
import path from "node:path";

const args = process.argv.slice(2);
const conf = args[args.indexOf("-c") + 1];
const prefix = path.dirname(conf);
const text = fs.readFileSync(conf, "utf8");
const listen = Number(/listen 127\.0\.0\.1:(\d+);/.exec(text)[1]);
const upstream = Number(/proxy_pass http:\/\/127\.0\.0\.1:(\d+)\/;/.exec(text)[1]);
const mode = process.env.STANDIN_GATEWAY ?? "pass";
const startsFile = path.join(prefix, "standin-starts");
const starts = Number(fs.existsSync(startsFile) ? fs.readFileSync(startsFile, "utf8") : 0) + 1;
fs.writeFileSync(startsFile, String(starts));
fs.writeFileSync(path.join(prefix, "nginx.pid"), String(process.pid));
let armed = mode !== "pass" && starts >= 2;

function log(line) {
	fs.appendFileSync(path.join(prefix, "standin.log"), `${new Date().toISOString()} start ${starts}: ${line}\n`);
}
log(`listening on ${listen}, forwarding to ${upstream}, mode ${mode}${armed ? " (armed)" : ""}`);

/** Hop-by-hop headers, which each side of a proxy sets for itself. */
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"]);

function endToEnd(headers) {
	return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP.has(name.toLowerCase())));
}

/** Passes an event stream on event by event, misbehaving once when armed. */
function relay(from, to) {
	let buffer = "";
	let held = null;
	const pass = (event) => {
		if (held !== null) {
			to.write(event);
			to.write(held);
			held = null;
			log("reordered: passed the held event on after the next one");
			return;
		}
		if (armed && event.includes('"session/update"')) {
			armed = false;
			const id = /^id:\s*(.*)$/m.exec(event)?.[1] ?? "?";
			log(`${mode}: the event with id ${id}`);
			if (mode === "duplicate") {
				to.write(event);
				to.write(event);
				return;
			}
			if (mode === "drop") return;
			if (mode === "reorder") {
				held = event;
				return;
			}
		}
		to.write(event);
	};
	from.setEncoding("utf8");
	from.on("data", (chunk) => {
		buffer += chunk;
		for (;;) {
			const end = /\r?\n\r?\n/.exec(buffer);
			if (!end) break;
			const cut = end.index + end[0].length;
			pass(buffer.slice(0, cut));
			buffer = buffer.slice(cut);
		}
	});
	from.on("end", () => {
		if (held !== null) to.write(held);
		if (buffer) to.write(buffer);
		to.end();
	});
	from.on("error", () => to.destroy());
}

const server = http.createServer((req, res) => {
	if (!req.url.startsWith("/sandbox/")) {
		res.writeHead(404).end();
		return;
	}
	const forwarded = http.request(
		{
			host: "127.0.0.1",
			port: upstream,
			method: req.method,
			path: req.url.slice("/sandbox".length),
			headers: { ...endToEnd(req.headers), "x-forwarded-prefix": "/sandbox" },
		},
		(answer) => {
			res.writeHead(answer.statusCode, endToEnd(answer.headers));
			if ((answer.headers["content-type"] ?? "").includes("text/event-stream")) {
				res.flushHeaders();
				relay(answer, res);
			} else {
				answer.pipe(res);
			}
		},
	);
	forwarded.on("error", () => {
		if (!res.headersSent) res.writeHead(502);
		res.end();
	});
	res.on("close", () => forwarded.destroy());
	req.pipe(forwarded);
});
server.keepAliveTimeout = 75_000;
server.listen(listen, "127.0.0.1");
for (const signal of ["SIGTERM", "SIGQUIT", "SIGINT"]) process.on(signal, () => process.exit(0));
process.on("SIGHUP", () => log("SIGHUP ignored (no reload)"));
