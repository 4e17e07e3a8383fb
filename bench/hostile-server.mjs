// A hostile sandbox-agent stand-in for bench/memory.sh: healthy, but with
// HOSTILE=post every ACP POST answers 200 with a BODY_MB megabyte JSON body
// (the event stream stays open and quiet);
// with HOSTILE=stream every POST is accepted (202, the answer "comes on the
// stream") and every event stream sends one BODY_MB megabyte SSE line. Both
// are streamed in 64 KiB chunks without Content-Length, so only a reader
// that refuses while streaming stays small. Prints its port on stdout.
import http from "node:http";

const MB = Number(process.env.BODY_MB || 100);
const STREAM = process.env.HOSTILE === "stream";
const chunk = Buffer.alloc(64 * 1024, "a");

function pour(res, head, total, tail) {
  res.write(head);
  let sent = 0;
  const more = () => {
    while (sent < total) {
      sent += chunk.length;
      if (!res.write(chunk)) return res.once("drain", more);
    }
    res.end(tail);
  };
  more();
}

const server = http.createServer((req, res) => {
  req.resume();
  res.on("error", () => {});
  if (req.url.startsWith("/v1/health")) {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end('{"status":"ok"}');
  }
  if (req.url.startsWith("/v1/acp/") && req.method === "POST" && STREAM) {
    res.writeHead(202);
    return res.end();
  }
  if (req.url.startsWith("/v1/acp/") && req.method === "POST") {
    res.writeHead(200, { "content-type": "application/json" });
    return pour(res, '{"jsonrpc":"2.0","id":0,"result":{"pad":"', MB * 1024 * 1024, '"}}');
  }
  if (req.url.startsWith("/v1/acp/") && req.method === "GET" && !STREAM) {
    // Only the POST bodies are hostile: an open, quiet stream.
    res.writeHead(200, { "content-type": "text/event-stream" });
    return res.write(": open\n\n");
  }
  if (req.url.startsWith("/v1/acp/") && req.method === "GET") {
    res.writeHead(200, { "content-type": "text/event-stream" });
    return pour(res, "id: 1\nevent: message\ndata: ", MB * 1024 * 1024, "\n\n");
  }
  res.writeHead(204);
  res.end();
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
