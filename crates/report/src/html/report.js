"use strict";
(function () {
  function reportError(message) {
    var box = document.getElementById("jserror");
    if (!box) {
      box = document.createElement("div");
      box.id = "jserror";
      document.body.appendChild(box);
    }
    box.textContent += message + "\n";
  }
  window.addEventListener("error", function (e) {
    reportError("error: " + e.message + " at " + (e.lineno || "?") + ":" + (e.colno || "?"));
  });

  var SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function sv(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function setAttrs(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      if (attrs[k] !== null && attrs[k] !== undefined) node.setAttribute(k, String(attrs[k]));
    });
  }
  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
  function tip(text) { return sv("title", null, text); }

  // A v2 cell is one point of the matrix and holds all its attempts; its
  // row label (the target and every axis value it names) comes with the data.
  function label(c) { return c.label; }
  function cellKey(c) { return label(c).replace(/ /g, "") + "/" + c.scenario; }
  function expectationText(c) {
    var x = c.expectation;
    if (!x) return "";
    return x.outcome + (x.reason ? ": " + x.reason : "");
  }
  function attemptsText(c) {
    if (!c.attempts || c.attempts.length < 2) return null;
    return c.attempts.map(function (a) {
      return "#" + a.attempt + (a.retry ? " (retry)" : "") + " " + a.verdict + (a.failureBoundary ? " @ " + a.failureBoundary : "");
    }).join(", ") + (c.passRate !== null && c.passRate !== undefined ? " — pass rate " + Math.round(c.passRate * 100) + "%" : "");
  }
  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "–";
    return ms >= 1000 ? (ms / 1000).toFixed(ms >= 10000 ? 1 : 2) + " s" : Math.round(ms) + " ms";
  }
  function causeShort(c) {
    if (!c) return null;
    if (c.httpStatus !== null && c.httpStatus !== undefined) return "http " + c.httpStatus + (c.problemType ? " " + c.problemType : "");
    if (c.error) return c.error.replace(/_/g, " ");
    return c.kind.replace(/_/g, " ");
  }
  function sigShort(s) {
    if (!s) return "";
    if (s.kind === "http") return "http " + (s.httpStatus === null ? "" : s.httpStatus) + (s.problemType ? " " + s.problemType : "");
    if (s.kind === "rpc") return "rpc " + (s.rpcCode === null ? "" : s.rpcCode);
    if (s.kind === "not_back") return "not back" + (s.cause ? ": " + causeShort(s.cause) : "");
    return s.kind.replace(/_/g, " ");
  }
  // The marks are drawn, not typed: a page without an emoji font (a CI
  // screenshot, a minimal Chromium) shows them all the same. Each is a
  // 16-unit square of SVG shapes; the words beside it say the same.
  var MARKS = {
    pass: [["circle", { cx: 8, cy: 8, r: 7.5, "class": "mk-fill" }], ["path", { d: "M4.3 8.4 7 11 11.8 5.4", "class": "mk-line" }]],
    fail: [["circle", { cx: 8, cy: 8, r: 7.5, "class": "mk-fill" }], ["path", { d: "M5 5 11 11M11 5 5 11", "class": "mk-line" }]],
    error: [["path", { d: "M8 .8 15.4 14.6H.6Z", "class": "mk-fill" }], ["path", { d: "M8 5.4V9.6M8 11.6V12.2", "class": "mk-line" }]],
    skipped: [["circle", { cx: 8, cy: 8, r: 6.8, "class": "mk-ring" }], ["path", { d: "M4.8 8H11.2", "class": "mk-stroke" }]],
    not_applicable: [["circle", { cx: 8, cy: 8, r: 6.8, "class": "mk-ring" }], ["path", { d: "M4.6 11.4 11.4 4.6", "class": "mk-stroke" }]],
    flaky: [["circle", { cx: 8, cy: 8, r: 7.5, "class": "mk-fill" }], ["path", { d: "M3.6 9.2Q5.8 5 8 8T12.4 6.8", "class": "mk-line" }]],
    interrupted: [["circle", { cx: 8, cy: 8, r: 7.5, "class": "mk-fill" }], ["path", { d: "M6.2 5V11M9.8 5V11", "class": "mk-line" }]],
    timeout: [["circle", { cx: 8, cy: 8, r: 6.8, "class": "mk-ring" }], ["path", { d: "M8 4.4V8.2L10.6 10", "class": "mk-stroke" }]]
  };
  function mark(kind) {
    var shapes = MARKS[kind] || [["circle", { cx: 8, cy: 8, r: 3, "class": "mk-fill" }]];
    return sv("svg", { "class": "mk mk-" + (MARKS[kind] ? kind : "other"), viewBox: "0 0 16 16", width: 14, height: 14, role: "img", "aria-label": kind },
      shapes.map(function (s) { return sv(s[0], s[1]); }));
  }
  function phaseText(p) {
    if (!p) return "–";
    if (p.outcome === "ok") return mark("pass");
    if (p.outcome === "not_run") return "–";
    if (p.outcome === "not_applicable") return [mark("not_applicable"), " n/a"];
    if (p.outcome === "interrupted") return [mark("interrupted"), " interrupted"];
    if (p.outcome === "timeout") {
      var cause = p.signature && causeShort(p.signature.cause);
      return [mark(cause ? "timeout" : "fail"), " " + (cause || "timeout")];
    }
    return [mark("fail"), " " + sigShort(p.signature)];
  }
  function verdictWords(c) {
    var text = c.verdict.replace(/_/g, " ");
    if (c.failureBoundary) text += " @ " + c.failureBoundary;
    else if (c.reason) text += ": " + c.reason.split("\n")[0];
    return text;
  }
  function verdictText(c) {
    return [mark(c.verdict), " " + verdictWords(c)];
  }

  // Phase times from the trace's boundaries, or laid end to end from durations.
  function phaseTimes(cell) {
    var starts = {}, ends = {}, byName = {};
    (cell.events || []).forEach(function (e) {
      if (e.ev === "phase_start") starts[e.phase] = e.t;
      if (e.ev === "phase_end") ends[e.phase] = e.t;
    });
    var t = 0;
    return cell.phases.map(function (p) {
      var start = p.name in starts ? starts[p.name] : t;
      var end = p.name in ends ? ends[p.name] : start + p.durationMs;
      t = end;
      byName[p.name] = true;
      return { phase: p, start: start, end: end };
    });
  }

  function restartWindows(cell, times) {
    var windows = [], open = null;
    (cell.events || []).forEach(function (e) {
      if (e.ev === "restart_start") open = e.t;
      if (e.ev === "restart_end" && open !== null) { windows.push([open, e.t, e]); open = null; }
    });
    if (windows.length === 0) {
      times.forEach(function (x) {
        if (x.phase.step === "restart" && x.phase.outcome !== "not_run") windows.push([x.start, x.end, null]);
      });
    }
    return windows;
  }

  // fault_start to fault_end (or to the cell's end, when the trace has none).
  function faultWindows(cell, span) {
    var windows = [], open = null;
    (cell.events || []).forEach(function (e) {
      if (e.ev === "fault_start") open = e;
      if (e.ev === "fault_end" && open !== null) { windows.push([open.t, e.t, open, e]); open = null; }
    });
    if (open !== null) windows.push([open.t, span, open, null]);
    return windows;
  }

  function markClass(e) {
    if (e.ev === "http") {
      if (e.error) return "mark-fail";
      if (e.closedBy === "client" && e.status === undefined) return "mark-info";
      if (e.purpose === "terminal" && e.status === 101) return "mark-ok";
      return e.status >= 200 && e.status < 300 ? "mark-ok" : "mark-fail";
    }
    if (e.ev === "ws_close") return e.clean === false ? "mark-fail" : "mark-info";
    if (e.ev === "stream_end") return e.error ? "mark-fail" : "mark-info";
    if (e.ev === "ready_probe") return e.error || (e.status && (e.status < 200 || e.status >= 300)) ? "mark-fail" : "mark-ok";
    if (e.ev === "restart_end") return e.ok ? "mark-ok" : "mark-fail";
    if (e.ev === "store") return e.ok ? "mark-ok" : "mark-fail";
    if (e.ev === "fault_action" || e.ev === "fault_start") return "mark-fail";
    if (e.ev === "fault_end") return e.ok ? "mark-ok" : "mark-fail";
    if (e.ev === "sdk") return e.ok ? "mark-ok" : "mark-fail";
    return "mark-info";
  }
  function markText(e) {
    var at = " (t=" + fmtMs(e.t) + ")";
    if (e.ev === "http") {
      var result = e.status !== undefined ? "HTTP " + e.status : "";
      if (e.error) result += (result ? ", " : "") + e.error;
      if (e.problemType) result += " " + e.problemType;
      if (!result && e.closedBy === "client") result = "closed by the client";
      var attempt = e.attempt ? " attempt " + e.attempt : "";
      return e.method + " " + e.url + attempt + " → " + (result || "?") + " in " + fmtMs(e.ms) + at;
    }
    if (e.ev === "sse") return "SSE event " + (e.id || "") + " " + (e.method || ("response id " + e.rpcId)) + at;
    if (e.ev === "rpc") return (e.dir === "out" ? "→ " : "← ") + (e.method || "response") + (e.rpcId !== undefined ? " id " + e.rpcId : "") + " via " + e.via + at;
    if (e.ev === "stream_end") return (e.closedBy === "client" && !e.error ? "event stream closed by the client" : "event stream ended" + (e.error ? ": " + e.error : "")) + at;
    if (e.ev === "ready_probe") return "readiness " + e.probe + " attempt " + e.attempt + " → " + (e.status !== undefined ? "HTTP " + e.status : "") + (e.error ? " " + e.error : "") + at;
    if (e.ev === "component_stop") return e.component + " stopped" + (e.exitCode !== undefined && e.exitCode !== null ? " (exit " + e.exitCode + ")" : "") + (e.signal ? " (" + e.signal + ")" : "") + at;
    if (e.ev === "component_start") return e.component + " started" + (e.pid ? " (pid " + e.pid + ")" : "") + at;
    if (e.ev === "restart_start") return "restart started" + at;
    if (e.ev === "restart_end") return "restart " + (e.ok ? "ready" : "failed") + at;
    if (e.ev === "fault_start") return "fault on the " + e.hop + " hop: " + (e.fault || e.toxic) + at;
    if (e.ev === "fault_action") return "the fault proxy " + e.action + " connection " + e.conn + " on the " + e.hop + " hop (" + e.toxic + ")" + at;
    if (e.ev === "fault_end") return "fault on the " + e.hop + " hop healed" + (e.ok ? "" : ": " + (e.detail || "the proxy failed")) + at;
    if (e.ev === "store") return "store " + e.call + " (" + e.driver + ") → " + (e.ok ? "ok" : "failed" + (e.error ? ": " + e.error : "")) + " in " + fmtMs(e.ms) + at;
    if (e.ev === "ws") return "terminal " + e.process + (e.dir === "out" ? " → input" : " ← " + e.frame) + " (" + e.bytes + " bytes)" + at;
    if (e.ev === "ws_open") return "terminal " + e.process + " open" + at;
    if (e.ev === "ws_close") return "terminal " + e.process + " closed: ws close " + e.code + (e.clean === false ? " (no close frame)" : "") + at;
    if (e.ev === "window") return "watched " + fmtMs(e.ms) + " for " + e.what + at;
    if (e.ev === "cleanup_wait") return "waited " + fmtMs(e.ms) + " for the previous cell's DELETEs" + at;
    if (e.ev === "sdk") return "hosted SDK " + e.call + " → " + (e.abandoned ? "no answer when its phase ended" : e.ok ? "ok" : "failed" + (e.error ? ": " + e.error : "")) + " in " + fmtMs(e.ms) + at;
    return e.ev + at;
  }
  var LANES = { sdk: "SDK", http: "HTTP", stream_end: "stream", sse: "stream", ws: "stream", ws_open: "stream", ws_close: "stream",
    rpc: "JSON-RPC", store: "store", window: "target", cleanup_wait: "target",
    ready_probe: "target", component_stop: "target", component_start: "target", restart_start: "target", restart_end: "target",
    fault_start: "target", fault_action: "target", fault_end: "target" };

  function timeline(cell) {
    var times = phaseTimes(cell);
    var events = cell.events || [];
    var span = Math.max(cell.durationMs || 0, 1);
    times.forEach(function (x) { span = Math.max(span, x.end); });
    events.forEach(function (e) { span = Math.max(span, e.t); });
    var W = 1000, L = 190, R = 12, rowH = 18, top = 22;
    var lanes = ["HTTP", "stream", "JSON-RPC", "store", "target"];
    // A hosted-client cell: its SDK actions get a lane above their exchanges.
    if (events.some(function (e) { return e.ev === "sdk"; })) lanes.unshift("SDK");
    var rows = times.length + lanes.length;
    var H = top + rows * rowH + 8;
    var x = function (t) { return L + (t / span) * (W - L - R); };
    var root = sv("svg", { "class": "timeline", viewBox: "0 0 " + W + " " + H, role: "img", "data-cell": cellKey(cell) });
    var step = niceStep(span);
    for (var t = 0; t <= span + 1e-6; t += step) {
      root.appendChild(sv("line", { "class": "grid", x1: x(t), x2: x(t), y1: top - 4, y2: H - 6 }));
      root.appendChild(sv("text", { "class": "label", x: x(t), y: 12, "text-anchor": "middle" }, fmtMs(t)));
    }
    faultWindows(cell, span).forEach(function (w) {
      var end = w[3] ? "healed after " + fmtMs(w[1] - w[0]) : "not healed in the trace";
      root.appendChild(sv("rect", { "class": "fault-window", x: x(w[0]), y: top - 4, width: Math.max(2, x(w[1]) - x(w[0])), height: H - top }, tip("fault on the " + w[2].hop + " hop: " + (w[2].fault || w[2].toxic) + ", " + end)));
    });
    restartWindows(cell, times).forEach(function (w) {
      var detail = w[2] ? " (" + (w[2].ok ? "ready" : "failed") + (w[2].readyMs !== undefined && w[2].readyMs !== null ? ", ready after " + fmtMs(w[2].readyMs) : "") + ")" : "";
      root.appendChild(sv("rect", { "class": "restart-window", x: x(w[0]), y: top - 4, width: Math.max(2, x(w[1]) - x(w[0])), height: H - top }, tip("restart " + fmtMs(w[1] - w[0]) + detail)));
    });
    times.forEach(function (item, i) {
      var p = item.phase, y = top + i * rowH;
      root.appendChild(sv("text", { "class": "label", x: L - 6, y: y + 12, "text-anchor": "end" }, p.name + (p.cleanup ? " (cleanup)" : "")));
      var isBoundary = cell.failureBoundary === p.name;
      var cls = "bar bar-" + p.outcome + (isBoundary ? " boundary" : "");
      var sig = p.signature ? "\n" + p.signature.message + (p.signature.pending ? "\npending: " + p.signature.pending : "") : "";
      root.appendChild(sv("rect", { "class": cls, x: x(item.start), y: y + 2, width: Math.max(2, x(item.end) - x(item.start)), height: rowH - 5, rx: 2, "data-phase": p.name, "data-boundary": isBoundary ? "true" : null },
        tip(p.name + ": " + p.outcome + " in " + fmtMs(item.end - item.start) + " (deadline " + fmtMs(p.deadlineMs) + ")" + sig)));
    });
    lanes.forEach(function (lane, j) {
      var y = top + (times.length + j) * rowH;
      root.appendChild(sv("text", { "class": "label", x: L - 6, y: y + 12, "text-anchor": "end" }, lane));
      root.appendChild(sv("line", { "class": "axis", x1: L, x2: W - R, y1: y + 9, y2: y + 9 }));
    });
    events.forEach(function (e) {
      var lane = lanes.indexOf(LANES[e.ev]);
      if (lane < 0) return;
      var y = top + (times.length + lane) * rowH;
      var spans = e.ev === "http" || e.ev === "store" || e.ev === "sdk" || e.ev === "window" || e.ev === "cleanup_wait";
      var start = spans && e.ms ? Math.max(0, e.t - e.ms) : e.t;
      root.appendChild(sv("rect", { "class": "mark " + markClass(e), x: x(start) - 1, y: y + 3, width: Math.max(3, x(e.t) - x(start) + 1), height: rowH - 7 }, tip(markText(e))));
    });
    // What the always-on checker found: a marker at the offending event's
    // time, across the lanes, its invariant and evidence on hover.
    violations(cell).forEach(function (v) {
      var cx = x(Math.min(v.t, span));
      root.appendChild(sv("line", { "class": "violation-line", x1: cx, x2: cx, y1: top - 4, y2: H - 6 }));
      root.appendChild(sv("path", { "class": "violation", d: "M" + cx + " " + (top - 8) + " l5 5 l-5 5 l-5 -5 z", "data-invariant": v.invariant, "data-hop": v.hop },
        tip(violationText(v))));
    });
    return root;
  }
  function violations(cell) { return (cell.checked && cell.checked.violations) || []; }
  function violationText(v) {
    var where = [v.invariant + " " + v.breach + " at the " + v.hop + (v.since ? " (right at the " + v.since + ")" : "")];
    if (v.ids && v.ids.length) where.push("ids " + v.ids.join(", "));
    if (v.stream) where.push("stream " + v.stream);
    if (v.session) where.push("session " + v.session);
    if (v.eventIndex !== undefined && v.eventIndex !== null) where.push("event index " + v.eventIndex);
    return where.join(", ") + "\n" + v.detail + "\n" + fmtMs(v.t) + (v.phase ? " in " + v.phase : "");
  }
  function violationTable(cell) {
    var list = violations(cell);
    if (!list.length) return null;
    return el("div", { "class": "scroll" }, el("table", { "class": "violations" },
      el("thead", null, el("tr", null, ["invariant", "breach", "first at", "right at", "phase", "at", "evidence"].map(function (h) { return el("th", null, h); }))),
      el("tbody", null, list.map(function (v) {
        return el("tr", { "data-invariant": v.invariant },
          el("td", null, v.invariant), el("td", null, v.breach), el("td", null, v.hop), el("td", null, v.since || "–"),
          el("td", null, v.phase || "–"), el("td", null, fmtMs(v.t)), el("td", { "class": "mono" }, v.detail));
      }))));
  }
  function niceStep(span) {
    var raw = span / 8, pow = Math.pow(10, Math.floor(Math.log10(raw)));
    var n = raw / pow;
    return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * pow;
  }

  function signatureTable(cell) {
    var rows = cell.phases.filter(function (p) { return p.signature; });
    if (rows.length === 0) return el("p", { "class": "note" }, "No failure signatures.");
    return el("div", { "class": "scroll" }, el("table", { "class": "signatures" },
      el("thead", null, el("tr", null, ["phase", "outcome", "kind", "cause", "message", "pending", "observed"].map(function (h) { return el("th", null, h); }))),
      el("tbody", null, rows.map(function (p) {
        var s = p.signature;
        return el("tr", { "class": cell.failureBoundary === p.name ? "boundary-row" : null },
          el("td", null, p.name + (cell.failureBoundary === p.name ? " (boundary)" : "")),
          el("td", null, p.outcome), el("td", null, s.kind), el("td", null, causeShort(s.cause) || "–"),
          el("td", { "class": "mono" }, s.message), el("td", { "class": "mono" }, s.pending || "–"),
          el("td", { "class": "mono" }, s.observed || "–"));
      }))));
  }

  function restartTable(cell) {
    if (!cell.restarts.length) return null;
    return el("div", { "class": "scroll" }, el("table", { "class": "restarts" },
      el("thead", null, el("tr", null, ["phase", "action", "ok", "restart", "ready after", "detail"].map(function (h) { return el("th", null, h); }))),
      el("tbody", null, cell.restarts.map(function (r) {
        return el("tr", null, el("td", null, r.phase), el("td", null, r.action), el("td", null, r.ok ? "yes" : "no"),
          el("td", null, fmtMs(r.restartMs)), el("td", null, fmtMs(r.readyMs)), el("td", { "class": "mono" }, r.detail || "–"));
      }))));
  }

  function links(cell, run) {
    var items = [];
    if (cell.trace) items.push(el("a", { href: cell.trace }, "trace.jsonl"));
    (run.logs || []).forEach(function (log) { items.push(el("a", { href: log.path }, log.name + " log")); });
    if (!items.length) return null;
    var p = el("p", { "class": "links" }, "Files: ");
    items.forEach(function (a, i) { if (i) p.appendChild(document.createTextNode(" · ")); p.appendChild(a); });
    return p;
  }

  function cellDetail(cell, run) {
    var details = el("details", { "class": "cell v-" + cell.verdict, id: "cell-" + cellKey(cell), "data-cell-detail": cellKey(cell) },
      el("summary", null, cell.scenario + " × " + label(cell) + " — ", verdictText(cell), " (" + fmtMs(cell.durationMs) + ")"));
    if (cell.reason) details.appendChild(el("p", null, "Reason: ", el("span", { "class": "mono" }, cell.reason)));
    if (cell.expectation) details.appendChild(el("p", { "class": "expectation", "data-expectation": cell.expectation.outcome },
      "Expectation: " + expectationText(cell) + (cell.expectation.entry ? " (" + cell.expectation.entry + ")" : "")));
    var tries = attemptsText(cell);
    if (tries) details.appendChild(el("p", { "class": "attempts" }, "Attempts: " + tries + " (the timeline shows attempt #" + cell.attempt + ")"));
    if (cell.phases.length) {
      details.appendChild(timeline(cell));
      details.appendChild(el("div", { "class": "legend" },
        el("span", null, el("i", { style: "background:#aceebb" }), "phase ok"),
        el("span", null, el("i", { style: "background:#ffcecb" }), "phase failed"),
        el("span", null, el("i", { style: "background:#fff1c2" }), "restart window"),
        el("span", null, el("i", { style: "background:#cf222e" }), "failed request"),
        violations(cell).length ? el("span", null, el("i", { style: "background:#8250df" }), "invariant broken") : null,
        el("span", null, "hover a mark for status and latency")));
    }
    if (cell.traceProblem) details.appendChild(el("p", { "class": "note" }, "Trace not drawn: " + cell.traceProblem));
    if (cell.phases.length) {
      details.appendChild(el("h3", null, "Signatures"));
      details.appendChild(signatureTable(cell));
    }
    var broken = violationTable(cell);
    if (broken) { details.appendChild(el("h3", null, "Integrity")); details.appendChild(broken); }
    var restarts = restartTable(cell);
    if (restarts) { details.appendChild(el("h3", null, "Restarts")); details.appendChild(restarts); }
    var own = (rejections || []).filter(function (r) { return r.label === label(cell) && r.scenario === cell.scenario; });
    if (own.length) { details.appendChild(el("h3", null, "Unhandled rejections in the SDK")); details.appendChild(rejectionTable(own, false)); }
    append(details, links(cell, run));
    return details;
  }

  // The rejections no SDK caller could catch, which the SDK's host recorded.
  function rejectionTable(rows, withCell) {
    return el("table", { "class": "rejections" },
      el("thead", null, el("tr", null, (withCell ? ["cell", "phase", "error"] : ["phase", "error"]).map(function (h) { return el("th", null, h); }))),
      el("tbody", null, rows.map(function (r) {
        return el("tr", { "data-rejection": r.phase }, withCell ? el("td", null, r.label + " × " + r.scenario) : null,
          el("td", null, r.phase), el("td", { "class": "mono" }, r.error));
      })));
  }
  var rejections = null;

  function main() {
    var D = JSON.parse(document.getElementById("data").textContent);
    var R = D.report, run = R.run, app = document.getElementById("app");
    rejections = D.rejections;
    var rank = function (t) { var i = D.targets.indexOf(t); return i < 0 ? 1e9 : i; };
    app.appendChild(el("h1", null, "continuity run " + run.id));
    app.appendChild(el("p", { "class": "meta" }, run.baseUrl + " · agent " + run.agent + " · server " + (run.serverVersion || "unknown") + " · started " + run.startedAt + " · " + fmtMs(run.durationMs)));
    var t = R.totals;
    // Cells with no verdict on their restart are out of the count, named after it.
    var na = t.notApplicable || 0;
    app.appendChild(el("p", { "class": "totals" }, t.passed + "/" + (t.cells - na) + " cells passed (" + t.failed + " failed, " + t.errored + " errors, " + t.skipped + " skipped" + (na ? ", " + na + " not applicable" : "") + ")"));
    if (run.interrupted) app.appendChild(el("div", { "class": "banner interrupted", id: "interrupted" }, "This run was interrupted: the cell it cut short is marked interrupted (its cleanup ran); cells it never started are missing."));
    var firstFailed = null;
    D.scenarios.forEach(function (scenario) {
      var cells = R.cells.filter(function (c) { return c.scenario === scenario; })
        .sort(function (a, b) { return rank(a.target) - rank(b.target); });
      var judged = cells.some(function (c) { return c.expectation; });
      var columns = D.columns[scenario] || [];
      app.appendChild(el("h2", null, scenario));
      var body = el("tbody");
      // A wide matrix scrolls in its own box; its target column stays put.
      app.appendChild(el("div", { "class": "scroll" }, el("table", { "class": "matrix" },
        el("thead", null, el("tr", null, el("th", null, "target"), columns.map(function (c) { return el("th", null, c); }), el("th", null, "verdict"), judged ? el("th", null, "expectation") : null)), body)));
      var detailBox = el("div", { "class": "cells" });
      cells.forEach(function (cell) {
        var byName = {};
        cell.phases.forEach(function (p) { byName[p.name] = p; });
        var row = el("tr", { "data-cell": cellKey(cell) }, el("td", null, label(cell)),
          columns.map(function (name) {
            var p = byName[name];
            return el("td", { "class": p ? p.outcome : "not_run", title: p && p.signature ? p.signature.message : null }, phaseText(p));
          }),
          el("td", { "class": "v-" + cell.verdict }, verdictText(cell)),
          judged ? el("td", { "class": "x-" + (cell.expectation ? cell.expectation.outcome : "none") }, expectationText(cell)) : null);
        body.appendChild(row);
        var detail = cellDetail(cell, run);
        detailBox.appendChild(detail);
        row.addEventListener("click", function () { detail.open = true; detail.scrollIntoView({ block: "nearest" }); });
        if (!firstFailed && (cell.verdict === "fail" || cell.verdict === "error")) firstFailed = detail;
      });
      app.appendChild(detailBox);
    });
    if (rejections) {
      app.appendChild(el("h2", { id: "rejections" }, "Unhandled rejections in the SDK"));
      app.appendChild(rejections.length ? rejectionTable(rejections, true) : el("p", { "class": "note" }, "none recorded."));
    }
    if (firstFailed) firstFailed.open = true;
    selfCheck(R);
  }

  // What the browser test reads: how much of the report was drawn.
  function selfCheck(R) {
    var ran = R.cells.filter(function (c) { return c.phases.length > 0; });
    var bounded = ran.filter(function (c) { return c.failureBoundary && c.phases.some(function (p) { return p.name === c.failureBoundary; }); });
    var drawn = {
      cells: document.querySelectorAll("[data-cell-detail]").length,
      rows: document.querySelectorAll("table.matrix tr[data-cell]").length,
      timelines: document.querySelectorAll("svg.timeline").length,
      boundaries: document.querySelectorAll("svg.timeline [data-boundary=true]").length,
      violations: document.querySelectorAll("svg.timeline path.violation").length
    };
    // Every verdict cell of the matrix has its mark, drawn with a size; no
    // text on the page needs an emoji font; the page is no wider than its
    // window (a wide table scrolls in its own box).
    var verdicts = document.querySelectorAll("table.matrix td[class^='v-']");
    var marked = Array.prototype.filter.call(verdicts, function (td) {
      var m = td.querySelector("svg.mk"), box = m && m.getBoundingClientRect();
      return box && box.width > 0 && box.height > 0;
    });
    var emoji = (document.body.textContent.match(/[\u2600-\u27BF\u2B00-\u2BFF\u23E9-\u23FA\u3030\u303D]|\uD83C[\uDC00-\uDFFF]|\uD83D[\uDC00-\uDFFF]|\uD83E[\uDC00-\uDFFF]/g) || []).length;
    var overflow = document.documentElement.scrollWidth > document.documentElement.clientWidth;
    var scrolling = Array.prototype.filter.call(document.querySelectorAll(".scroll"), function (b) { return b.scrollWidth > b.clientWidth; }).length;
    // What sticks out past the window, outside the scrolling boxes: named for a failing test.
    var wide = overflow ? Array.prototype.filter.call(document.querySelectorAll("body *"), function (n) {
      return !n.closest(".scroll") && n.getBoundingClientRect().right > document.documentElement.clientWidth + 1;
    }).slice(0, 6).map(function (n) { return n.tagName.toLowerCase() + (n.getAttribute("class") ? "." + n.getAttribute("class").split(" ")[0] : ""); }).join(" ") : "";
    var broken = ran.reduce(function (n, c) { return n + violations(c).length; }, 0);
    var ok = drawn.cells === R.cells.length && drawn.rows === R.cells.length && drawn.timelines === ran.length && drawn.boundaries === bounded.length && drawn.violations === broken
      && marked.length === verdicts.length && emoji === 0;
    var box = el("div", { id: "selfcheck", "data-status": ok ? "ok" : "mismatch", "data-cells": drawn.cells, "data-rows": drawn.rows,
      "data-verdict-marks": marked.length, "data-verdict-cells": verdicts.length, "data-emoji": emoji, "data-page-overflow": overflow ? "yes" : "no", "data-scrolling-tables": scrolling, "data-overflowing": wide,
      "data-timelines": drawn.timelines, "data-boundaries": drawn.boundaries, "data-expected-cells": R.cells.length,
      "data-expected-timelines": ran.length, "data-expected-boundaries": bounded.length,
      "data-violations": drawn.violations, "data-expected-violations": broken });
    document.body.appendChild(box);
  }

  try { main(); } catch (e) { reportError("exception: " + (e && e.stack ? e.stack : e)); }
})();
