// The taskring console: one script, no framework, no build step. Pages are routed by the
// URL's #hash and refresh themselves every few seconds from the node's bounded JSON
// endpoints only (the operations API, /api/live, /api/stats). Everything shown from the
// server is put in the page as text (textContent, createTextNode), never as HTML.
"use strict";

(function () {
  const REFRESH_MS = 4000;          // 3-5 s: live enough, light on the node
  const PAGE_SIZE = 20;
  const SVG = "http://www.w3.org/2000/svg";

  // ---------------------------------------------------------------- the token and the API

  // The console works on a session cookie (HttpOnly: this script never holds the token).
  // A token comes from the sign-in form, or from the ?token= of a link, which is traded for
  // the cookie and then taken out of the address bar, the history and any bookmark.
  const CSRF = {"X-Requested-By": "taskring-console"};

  async function signIn(token) {
    const response = await fetch("/api/session", {method: "POST", cache: "no-store",
                                                   headers: {"Authorization": "Bearer " + token}});
    if (!response.ok) throw new ApiError(response.status, response.status === 401 ? "that token is not known here"
                                                                                  : response.status + " " + response.statusText);
    return response.json();
  }

  class ApiError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  async function api(method, path, body) {
    const headers = {...CSRF};
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {method, headers, cache: "no-store",
                                        body: body === undefined ? undefined : JSON.stringify(body)});
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) {
      const why = data && data.error ? data.error : response.status + " " + response.statusText;
      if (response.status === 401) showSignIn(true);
      throw new ApiError(response.status, why);
    }
    return data;
  }

  function query(params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
    const s = q.toString();
    return s ? "?" + s : "";
  }

  // ---------------------------------------------------------------- building the page as text

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === "testid") node.dataset.testid = v;
      else if (k === "class") node.className = v;
      else if (k === "onclick") node.addEventListener("click", v);
      else node.setAttribute(k, v);
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function $(id) { return document.getElementById(id); }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

  function fill(node, ...children) { clear(node); for (const c of children.flat(Infinity)) if (c) node.appendChild(c); }

  function tbody(table) { return table.tBodies[0]; }

  function td(value, cls) { return el("td", {class: cls}, value === null || value === undefined ? "" : value); }

  function num(value) { return td(value === null || value === undefined ? "–" : value, "num"); }

  function card(label, value, testid) {
    return el("div", {class: "card", testid},
              el("div", {class: "value"}, value === null || value === undefined ? "–" : String(value)),
              el("div", {class: "label"}, label));
  }

  function kv(dl, pairs) {
    clear(dl);
    for (const [k, v] of pairs) {
      dl.appendChild(el("dt", {}, k));
      dl.appendChild(el("dd", {testid: "kv-" + k.replace(/\W+/g, "-")}, v === null || v === undefined ? "" : String(v)));
    }
  }

  function say(text, kind) {
    const box = $("message");
    box.textContent = text;
    box.className = kind || "ok";
    box.hidden = !text;
  }

  function sayError(err) { say(err && err.message ? err.message : String(err), "error"); }

  function pct(rate) { return rate === null || rate === undefined ? "–" : (rate * 100).toFixed(1) + " %"; }

  function shortTime(rfc3339) { return rfc3339 ? String(rfc3339).replace("T", " ").replace(/(\.\d+)?Z$/, "") : ""; }

  // ---------------------------------------------------------------- charts (inline SVG)

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  const COLORS = {submitted: "#2563eb", succeeded: "#16a34a", failed: "#f59e0b", dead_lettered: "#dc2626",
                  kafka: "#7c3aed", mysql: "#0891b2"};

  // Bars of one value per point; labels[i] names bar i in its tooltip.
  function barChart(title, values, labels, color, testid, width = 560, height = 150) {
    const max = Math.max(1, ...values);
    const pad = 24, w = width - pad - 4, h = height - 30;
    const chart = svg("svg", {width, height, viewBox: `0 0 ${width} ${height}`, role: "img"});
    chart.appendChild(svg("text", {x: 2, y: 10, "font-size": 10}, String(max)));
    chart.appendChild(svg("line", {x1: pad, y1: 4 + h, x2: pad + w, y2: 4 + h, stroke: "#999"}));
    const step = values.length ? w / values.length : w;
    values.forEach((v, i) => {
      const bh = (v / max) * h;
      const bar = svg("rect", {x: pad + i * step + 1, y: 4 + h - bh, width: Math.max(1, step - 2), height: bh,
                               fill: color});
      bar.appendChild(svg("title", {}, `${labels[i]}: ${v}`));
      chart.appendChild(bar);
    });
    if (labels.length) {
      chart.appendChild(svg("text", {x: pad, y: height - 6, "font-size": 10}, labels[0]));
      chart.appendChild(svg("text", {x: pad + w, y: height - 6, "font-size": 10, "text-anchor": "end"},
                            labels[labels.length - 1]));
    }
    return el("div", {class: "chart", testid}, el("div", {class: "title"}, title), chart);
  }

  // Lines, one per key of the series' points.
  function lineChart(title, series, keys, testid, width = 560, height = 150) {
    const max = Math.max(1, ...series.flatMap(p => keys.map(k => p[k] || 0)));
    const pad = 24, w = width - pad - 4, h = height - 30;
    const chart = svg("svg", {width, height, viewBox: `0 0 ${width} ${height}`, role: "img"});
    chart.appendChild(svg("text", {x: 2, y: 10, "font-size": 10}, String(max)));
    chart.appendChild(svg("line", {x1: pad, y1: 4 + h, x2: pad + w, y2: 4 + h, stroke: "#999"}));
    const x = i => pad + (series.length > 1 ? (i * w) / (series.length - 1) : w / 2);
    for (const k of keys) {
      const points = series.map((p, i) => `${x(i).toFixed(1)},${(4 + h - ((p[k] || 0) / max) * h).toFixed(1)}`);
      chart.appendChild(svg("polyline", {points: points.join(" "), fill: "none", stroke: COLORS[k] || "#333",
                                         "stroke-width": 2}));
    }
    if (series.length) {
      chart.appendChild(svg("text", {x: pad, y: height - 6, "font-size": 10}, shortTime(series[0].minute).slice(11, 16)));
      chart.appendChild(svg("text", {x: pad + w, y: height - 6, "font-size": 10, "text-anchor": "end"},
                            shortTime(series[series.length - 1].minute).slice(11, 16)));
    }
    const legend = el("div", {class: "legend"},
                      keys.map(k => el("span", {style: `color:${COLORS[k] || "#333"}`}, "■ " + k)));
    return el("div", {class: "chart", testid}, el("div", {class: "title"}, title), chart, legend);
  }

  // ---------------------------------------------------------------- statistics (GET /api/stats)

  // A node without the statistics endpoint answers 404: the pages then say so and show
  // what they have from the other endpoints.
  async function loadStats(hours = 1) {
    try {
      return await api("GET", "/api/stats" + query({hours}));
    } catch (err) {
      if (err.status === 404) return null;
      throw err;
    }
  }

  // The series has only the minutes in which something happened: spread it over every minute
  // of the last `hours` hours up to the node's now (its clock, not the browser's), zeros between.
  function perMinute(series, hours, nowSeconds) {
    const byMinute = new Map(series.map(p => [Math.floor(Date.parse(p.minute) / 60000), p]));
    const end = nowSeconds ? Math.floor(nowSeconds / 60) : Math.max(...byMinute.keys());
    if (!Number.isFinite(end)) return [];
    const dense = [];
    for (let m = end - hours * 60 + 1; m <= end; m++) {
      dense.push(byMinute.get(m) || {minute: new Date(m * 60000).toISOString().replace(".000Z", "Z"),
                                      submitted: 0, succeeded: 0, failed: 0, dead_lettered: 0});
    }
    return dense;
  }

  function noStats() { return el("p", {class: "muted", testid: "stats-missing"}, "no statistics yet"); }

  // ---------------------------------------------------------------- Overview

  const overview = {
    async refresh() {
      const [stats, groups, live] = await Promise.all([
        loadStats(1), api("GET", "/api/dead-letters/groups"), api("GET", "/api/live")]);
      fill($("overview-cards"),
           card("dead letters now", groups.total, "card-dead-letters"),
           card("failure groups", groups.groups.length, "card-groups"),
           card("queue depth (Kafka + MySQL)", live.totals.queue_depth, "card-queue-depth"),
           card("nodes", live.nodes.filter(n => n.member).length, "card-nodes"));
      if (stats === null) {
        fill($("overview-stats"), noStats());
        fill($("overview-charts"));
        return;
      }
      const types = stats.day && stats.day.types ? stats.day.types : [];
      const rows = types.map(t => el("tr", {testid: "stats-row"},
        td(t.namespace), td(t.task_type), num(t.submitted), num(t.succeeded), num(t.failed), num(t.dead_lettered),
        num(pct(t.success_rate)), num(t.duration_p50_ms), num(t.duration_p99_ms)));
      fill($("overview-stats"),
           el("p", {class: "muted"}, "since " + shortTime(stats.day && stats.day.since)),
           el("table", {id: "stats-table", testid: "stats-table"},
              el("thead", {}, el("tr", {}, ["namespace", "task type", "submitted", "succeeded", "failed",
                                              "dead-lettered", "success rate", "p50 ms", "p99 ms"]
                                              .map(h => el("th", {}, h)))),
              el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", {colspan: 9}, "nothing today")))));
      const series = perMinute(stats.series || [], 1, live.generated_at);
      const labels = series.map(p => shortTime(p.minute).slice(11, 16));
      fill($("overview-charts"),
           barChart("submitted per minute", series.map(p => p.submitted || 0), labels, COLORS.submitted,
                    "chart-submitted"),
           lineChart("outcomes per minute", series, ["succeeded", "failed", "dead_lettered"], "chart-outcomes"));
    },
  };

  // ---------------------------------------------------------------- Live

  const live = {
    async refresh() {
      const [data, stats] = await Promise.all([api("GET", "/api/live"), loadStats(1)]);
      const me = data.this_node || {};
      const series = stats && stats.series ? perMinute(stats.series, 1, data.generated_at).slice(-15) : [];
      const last = series.length ? series[series.length - 1] : null;
      fill($("live-cards"),
           card("Kafka path: lag", data.totals.kafka_lag, "live-kafka-lag"),
           card("MySQL path: pending", data.totals.mysql_pending, "live-mysql-pending"),
           card("in flight here", me.in_flight, "live-in-flight"),
           card("in the heap here", me.heap_size, "live-heap"),
           card("finished / min", last ? (last.succeeded || 0) + (last.failed || 0) + (last.dead_lettered || 0)
                                       : null, "live-throughput-now"),
           card("slots moving", data.totals.moving, "live-moving"));
      fill($("live-throughput"), stats === null ? noStats()
           : lineChart("throughput, last 15 minutes", series, ["submitted", "succeeded", "failed"], "chart-throughput"));
      fill(tbody($("live-nodes")), data.nodes.map(n => el("tr", {testid: "live-node", "data-node": n.node},
        td(n.node + (n.member ? "" : " (not a member)")), num(n.slots.length), td(n.slots.join(", ")),
        num(n.kafka_lag), num(n.mysql_pending))));
      fill(tbody($("live-slots")), data.slots.map(s => el("tr", {testid: "live-slot", "data-slot": s.slot},
        num(s.slot), td(s.owner === null ? "(none)" : s.owner), num(s.kafka_lag), num(s.mysql_pending),
        td(s.moving ? "moving to " + s.desired_owner : ""))));
      fill($("live-slot-chart"),
           barChart("MySQL pending per slot", data.slots.map(s => s.mysql_pending), data.slots.map(s => "slot " + s.slot),
                    COLORS.mysql, "chart-pending", 380, 120),
           barChart("Kafka lag per slot", data.slots.map(s => s.kafka_lag), data.slots.map(s => "slot " + s.slot),
                    COLORS.kafka, "chart-lag", 380, 120));
    },
  };

  // ---------------------------------------------------------------- Failures

  function dlqFilter() {
    return {namespace: $("dlq-namespace").value.trim(), task_type: $("dlq-task-type").value.trim(),
            error_class: $("dlq-error-class").value.trim()};
  }

  const failures = {
    group: "",          // the open group's error_group, "" for none
    cursors: [],        // the `before` of each page seen, to go back to newer ones
    next: null,
    job: null,          // the bulk replay being watched

    enter(args) {
      const group = args[0] ? decodeURIComponent(args[0]) : "";
      if (group !== this.group) { this.group = group; this.cursors = [""]; }
    },

    filter() { return {...dlqFilter(), error_group: this.group}; },

    async refresh() {
      const where = dlqFilter();
      const data = await api("GET", "/api/dead-letters/groups" + query(where));
      const n = data.groups.length;
      $("dlq-summary").textContent = `${data.total} dead letters in ${n} group${n === 1 ? "" : "s"}`;
      fill(tbody($("dlq-groups")), data.groups.map(g => el("tr", {
        class: "link" + (g.error_group === this.group ? " active" : ""), testid: "dlq-group",
        "data-group": g.error_group, onclick: () => { location.hash = "#failures/" + encodeURIComponent(g.error_group); }},
        num(g.count), td(g.namespace), td(g.task_type), td(g.error_class), td(g.error_shape), td(shortTime(g.last_at), "time"))));
      const f = this.filter();
      $("bulk-filter").textContent = "filter: " + (Object.entries(f).filter(([, v]) => v)
        .map(([k, v]) => `${k}=${v}`).join(", ") || "every dead letter");
      $("dlq-group-view").hidden = !this.group;
      if (this.group) await this.page();
      if (this.job !== null) await this.watch();
    },

    async page() {
      const before = this.cursors[this.cursors.length - 1];
      const data = await api("GET", "/api/dead-letters" + query({...this.filter(), before, limit: PAGE_SIZE}));
      const first = data.items[0];
      $("dlq-group-title").textContent = first ? `${first.error_class || "error"}: ${first.task_type}` : "no dead letters";
      fill(tbody($("dlq-list")), data.items.map(d => el("tr", {
        class: "link", testid: "dlq-row", "data-task-id": d.task_id,
        onclick: () => { location.hash = "#dead-letter/" + encodeURIComponent(d.task_id); }},
        td(d.task_id), td(d.namespace), td(d.task_type), num(d.attempts), td(d.last_error), td(shortTime(d.dead_lettered_at), "time"))));
      this.next = data.next;
      $("dlq-older").disabled = !data.next;
      $("dlq-newer").disabled = this.cursors.length <= 1;
    },

    async startBulk() {
      const job = await api("POST", "/api/bulk-replays", {
        reason: $("bulk-reason").value, rate_per_s: $("bulk-rate").value, retries: $("bulk-retries").value,
        filter: Object.fromEntries(Object.entries(this.filter()).filter(([, v]) => v))});
      this.job = job.id;
      say(`bulk replay ${job.id} started: ${job.total} dead letters`);
      this.showJob(job);
    },

    async change(action) {
      if (this.job === null) return;
      const job = await api("POST", `/api/bulk-replays/${this.job}/${action}`, {reason: $("bulk-reason").value});
      say(`bulk replay ${job.id}: ${job.state}`);
      this.showJob(job);
    },

    async watch() { this.showJob(await api("GET", `/api/bulk-replays/${this.job}`)); },

    showJob(job) {
      $("bulk-job").hidden = false;
      const done = job.replayed + job.skipped;
      $("bulk-bar").style.width = (job.total ? Math.min(100, (100 * done) / job.total) : 100) + "%";
      const p = $("bulk-progress");
      p.textContent = `job ${job.id} ${job.state}: ${done} of ${job.total} (replayed ${job.replayed},` +
                      ` skipped ${job.skipped}) at ${job.rate_per_s}/s`;
      p.dataset.state = job.state;
      const over = job.state === "done" || job.state === "cancelled";
      $("bulk-pause").disabled = over || job.state === "paused";
      $("bulk-resume").disabled = over || job.state !== "paused";
      $("bulk-cancel").disabled = over;
    },
  };

  // ---------------------------------------------------------------- one dead letter

  function historyList(ol, history) {
    fill(ol, history.map(e => el("li", {testid: "history-entry"},
      el("span", {class: "state"}, e.state), el("span", {class: "at"}, shortTime(e.at)),
      e.node ? el("span", {class: "muted"}, e.node + " ") : null,
      e.attempt ? el("span", {class: "muted"}, "attempt " + e.attempt + " ") : null,
      e.detail ? el("div", {class: "detail"}, e.detail) : null)));
  }

  function attemptsTable(box, attempts) {
    if (!attempts.length) { fill(box, el("p", {class: "muted"}, "no attempts yet")); return; }
    fill(box, el("table", {testid: "attempts"},
      el("thead", {}, el("tr", {}, ["attempt", "node", "dispatched", "ended", "outcome", "error"].map(h => el("th", {}, h)))),
      el("tbody", {}, attempts.map(a => [
        el("tr", {testid: "attempt"}, num(a.attempt), td(a.node), td(shortTime(a.dispatched_at), "time"), td(shortTime(a.ended_at), "time"),
           td(a.outcome), td(a.error)),
        a.stack_trace ? el("tr", {}, el("td", {colspan: 6}, el("pre", {testid: "stack-trace"}, a.stack_trace))) : null,
      ]))));
  }

  function diffView(pre, diff) {
    fill(pre, diff.split("\n").map(line => el("span", {
      class: line.startsWith("+") && !line.startsWith("+++") ? "add"
           : line.startsWith("-") && !line.startsWith("---") ? "del" : ""}, line + "\n")));
    pre.hidden = false;
  }

  const deadLetter = {
    id: "",
    digest: null,

    async enter(args) {
      this.id = decodeURIComponent(args[0] || "");
      this.digest = null;
      $("dl-confirm").disabled = true;
      $("dl-diff").hidden = true;
      $("dl-result").textContent = "";
      $("dl-id").textContent = this.id;
      const d = await api("GET", "/api/dead-letters/" + encodeURIComponent(this.id));
      const entry = d.dead_letter;
      kv($("dl-summary"), [["namespace", entry.namespace], ["task type", entry.task_type], ["slot", entry.slot],
                           ["attempts", entry.attempts], ["error class", entry.error_class],
                           ["error", entry.last_error], ["first attempt", entry.first_attempt_at],
                           ["dead-lettered", entry.dead_lettered_at]]);
      attemptsTable($("dl-attempts"), d.attempts);
      historyList($("dl-history"), d.history);
      $("dl-envelope").textContent = JSON.stringify(d.envelope, null, 2);
      $("dl-payload").value = JSON.stringify(d.envelope.payload, null, 2);
    },

    body(extra) {
      return {reason: $("dl-reason").value, retries: $("dl-retries").value, ...extra};
    },

    async replay() {
      await api("POST", `/api/dead-letters/${encodeURIComponent(this.id)}/replay`, this.body());
      this.done("replayed");
    },

    async preview() {
      const answer = await api("POST", `/api/dead-letters/${encodeURIComponent(this.id)}/edit`,
                               this.body({payload_json: $("dl-payload").value}));
      this.digest = answer.digest;
      diffView($("dl-diff"), answer.diff || "(no change)");
      $("dl-confirm").disabled = false;
      say("preview only: nothing is written until Confirm");
    },

    async confirm() {
      if (!this.digest) return;
      await api("POST", `/api/dead-letters/${encodeURIComponent(this.id)}/edit`,
                this.body({payload_json: $("dl-payload").value, confirm: this.digest}));
      $("dl-confirm").disabled = true;
      this.done("payload edited and replayed");
    },

    async remove() {
      await api("POST", `/api/dead-letters/${encodeURIComponent(this.id)}/delete`, this.body());
      this.done("deleted from the dead letters");
    },

    done(what) {
      say(`${this.id}: ${what}`);
      fill($("dl-result"), document.createTextNode(what + " — "),
           el("a", {href: "#task/" + encodeURIComponent(this.id), testid: "dl-task-link"}, "follow the task"));
    },
  };

  // ---------------------------------------------------------------- Task

  const task = {
    id: "",

    enter(args) {
      this.id = decodeURIComponent(args[0] || "");
      $("task-id").value = this.id;
      $("task-view").hidden = !this.id;
    },

    async refresh() {
      if (!this.id) return;
      const t = await api("GET", "/api/tasks/" + encodeURIComponent(this.id));
      $("task-view").hidden = false;
      kv($("task-summary"), [["task id", t.task_id], ["state", t.state], ["status", t.status],
                             ["namespace", t.namespace], ["task type", t.task_type], ["slot", t.slot],
                             ["attempts", t.attempts], ["trigger at", t.trigger_at], ["created", t.created_at],
                             ["updated", t.updated_at], ["waiting", t.waiting], ["last error", t.last_error],
                             ["trace id", t.envelope && t.envelope.trace_id],
                             ["payload", JSON.stringify(t.envelope && t.envelope.payload)]]);
      historyList($("task-history"), t.history);
      attemptsTable($("task-attempts"), t.attempt_list);
      auditTable($("task-audit"), t.audit);
    },

    async search() {
      const trace = $("tasks-trace").value.trim();
      const params = trace ? {trace_id: trace}
        : {namespace: $("tasks-namespace").value.trim(), task_type: $("tasks-task-type").value.trim(),
           status: $("tasks-status").value};
      const data = await api("GET", "/api/tasks" + query({...params, limit: 50}));
      const table = $("tasks-results");
      table.hidden = false;
      fill(tbody(table), data.items.length ? data.items.map(t => el("tr", {
        class: "link", testid: "tasks-row", "data-task-id": t.task_id,
        onclick: () => { location.hash = "#task/" + encodeURIComponent(t.task_id); }},
        td(t.task_id), td(t.namespace), td(t.task_type), td(t.status), num(t.attempts), td(shortTime(t.created_at), "time"),
        td(t.last_error))) : el("tr", {}, el("td", {colspan: 7}, "no task found")));
    },
  };

  // ---------------------------------------------------------------- Audit

  function auditTable(box, records) {
    if (!records.length) { fill(box, el("p", {class: "muted"}, "no audit records")); return; }
    fill(box, el("table", {testid: "audit-table"},
      el("thead", {}, el("tr", {}, ["at", "actor", "from", "action", "target", "namespace", "reason", "before / after"]
                                    .map(h => el("th", {}, h)))),
      el("tbody", {}, records.map(r => el("tr", {testid: "audit-row", "data-action": r.action},
        td(shortTime(r.at), "time"), td(r.actor), td(r.address), td(r.action), td(r.target), td(r.namespace), td(r.reason),
        td(r.before || r.after ? el("details", {}, el("summary", {}, "show"),
                                    el("pre", {}, JSON.stringify({before: r.before, after: r.after}, null, 2))) : ""))))));
  }

  const audit = {
    async refresh() {
      const box = $("audit-records");
      if (box.querySelector("details[open]")) return;   // do not close what the reader opened
      const params = {};
      for (const name of ["target", "actor", "action", "namespace"]) params[name] = $("audit-" + name).value.trim();
      const data = await api("GET", "/api/audit" + query({...params, limit: 100}));
      auditTable(box, data.records);
    },
  };

  // ---------------------------------------------------------------- Policies

  function figures(counts) {
    return Object.entries(counts || {}).map(([limit, n]) => limit + " " + n).join(", ");
  }

  const policies = {
    async refresh() {
      if (document.activeElement && document.activeElement.closest("#page-policies fieldset")) return;
      const data = await api("GET", "/api/policies" + query({namespace: $("policies-namespace").value.trim()}));
      const box = $("policies-list");
      if (!data.policies.length) { fill(box, el("p", {class: "muted"}, "no task type has an entry")); return; }
      fill(box, el("table", {testid: "policies-table"},
        el("thead", {}, el("tr", {}, ["namespace", "task type", "source", "revision", "entry", "waiting", "held",
                                      "updated"].map(h => el("th", {}, h)))),
        el("tbody", {}, data.policies.map(p => el("tr", {
          class: "link", testid: "policies-row", "data-key": p.namespace + "/" + p.task_type, "data-source": p.source,
          onclick: () => this.edit(p)},
          td(p.namespace), td(p.task_type), td(p.source), num(p.revision),
          td(el("code", {}, JSON.stringify(p.policy))), td(figures((p.live || {}).waiting)),
          td(figures((p.live || {}).held)), td(p.updated_by ? p.updated_by + " " + shortTime(p.updated_at) : "", "time"))))));
    },
    edit(p) {
      $("policy-namespace").value = p.namespace;
      $("policy-task-type").value = p.task_type;
      $("policy-revision").value = String(p.revision);
      $("policy-text").value = JSON.stringify(p.policy, null, 2);
      $("policy-result").textContent = "";
    },
    path(suffix) {
      const ns = $("policy-namespace").value.trim(), type = $("policy-task-type").value.trim();
      return "/api/policies/" + encodeURIComponent(ns) + "/" + encodeURIComponent(type) + suffix;
    },
    body() {
      const revision = $("policy-revision").value.trim();
      return {reason: $("policy-reason").value, if_revision: revision === "" ? null : Number(revision)};
    },
    async save() {
      const saved = await api("POST", this.path(""), {...this.body(), policy: $("policy-text").value});
      this.edit(saved);
      say("");
      $("policy-result").textContent = "saved: revision " + saved.revision;
      document.activeElement.blur();
      await this.refresh();
    },
    async remove() {
      const removed = await api("POST", this.path("/delete"), this.body());
      say("");
      $("policy-result").textContent = "deleted revision " + removed.revision + "; the file's entry applies";
      $("policy-revision").value = "0";
      document.activeElement.blur();
      await this.refresh();
    },
  };

  // ---------------------------------------------------------------- Graphs

  const graph = {
    enter(args) {
      if (args.length >= 2) {
        $("graph-namespace").value = decodeURIComponent(args[0]);
        $("graph-id").value = decodeURIComponent(args.slice(1).join("/"));
      }
    },
    path(suffix) {
      return "/api/graphs/" + encodeURIComponent($("graph-namespace").value.trim()) + "/"
        + encodeURIComponent($("graph-id").value.trim()) + suffix;
    },
    async refresh() {
      if (!$("graph-namespace").value.trim() || !$("graph-id").value.trim()) return;
      if (document.activeElement && document.activeElement.closest("#page-graph fieldset")) return;
      const g = await api("GET", this.path(""));
      $("graph-summary").textContent = g.namespace + "/" + g.graph_id + ": " + g.state + " ("
        + Object.entries(g.counts).map(([s, n]) => n + " " + s).join(", ") + ")";
      fill($("graph-nodes"), el("table", {testid: "graph-table"},
        el("thead", {}, el("tr", {}, ["key", "state", "attempts", "join", "after (parent: outcome)", "waiting for",
                                      "reason"].map(h => el("th", {}, h)))),
        el("tbody", {}, g.nodes.map(n => el("tr", {
          class: "link", testid: "graph-row", "data-key": n.key, "data-state": n.state,
          onclick: () => { $("graph-key").value = n.key; }},
          td(el("a", {href: "#task/" + encodeURIComponent(n.task_id)}, n.key)), td(n.state), num(n.attempts),
          td(n.join), td(n.depends_on.map(e => e.parent_key + ": " + (e.outcome || "…")).join(", ")),
          td(n.waiting_for.join(", ")), td(n.reason || ""))))));
    },
    async skip() {
      const key = $("graph-key").value.trim();
      const done = await api("POST", this.path("/tasks/" + encodeURIComponent(key) + "/skip"),
                             {reason: $("graph-reason").value});
      say("");
      $("graph-result").textContent = done.key + ": " + done.before + " -> skipped; what follows goes on";
      document.activeElement.blur();
      await this.refresh();
    },
    async cancel() {
      const done = await api("POST", this.path("/cancel"), {reason: $("graph-reason").value,
                                                            mode: $("graph-mode").value});
      say("");
      $("graph-result").textContent = "cancelled " + done.cancelled + " (" + done.mode + "); running on: "
        + (done.running.join(", ") || "none");
      document.activeElement.blur();
      await this.refresh();
    },
  };

  // ---------------------------------------------------------------- Ring

  const ring = {
    enter() {
      // The frame is loaded with the session cookie, as every other request of the console.
      const src = "/ring.html";
      $("ring-link").setAttribute("href", src);
      if ($("ring-frame").getAttribute("src") !== src) $("ring-frame").setAttribute("src", src);
    },
  };

  // ---------------------------------------------------------------- routing and refreshing

  const PAGES = {overview, live, failures, "dead-letter": deadLetter, task, policies, graph, audit, ring};
  let current = null;
  let busy = false;

  async function run(action) {
    try { await action(); } catch (err) { sayError(err); }
  }

  async function refresh() {
    if (busy || !current || !current.refresh) return;
    busy = true;
    try { await current.refresh(); } catch (err) { sayError(err); } finally { busy = false; }
  }

  async function route() {
    const [name, ...args] = (location.hash.replace(/^#/, "") || "overview").split("/");
    const page = PAGES[name] ? name : "overview";
    for (const section of document.querySelectorAll("section.page")) section.hidden = section.id !== "page-" + page;
    const tab = page === "dead-letter" ? "failures" : page;
    for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.page === tab);
    current = PAGES[page];
    say("");
    if (current.enter) await run(() => current.enter(args));
    busy = false;
    await refresh();
  }

  function on(id, event, handler) {
    $(id).addEventListener(event, e => { if (event === "submit") e.preventDefault(); run(handler); });
  }

  function wire() {
    on("dlq-filter", "submit", () => { failures.cursors = [""]; return refresh(); });
    on("dlq-older", "click", () => { failures.cursors.push(failures.next); return failures.page(); });
    on("dlq-newer", "click", () => { failures.cursors.pop(); return failures.page(); });
    on("bulk-start", "click", () => failures.startBulk());
    for (const action of ["pause", "resume", "cancel"]) on("bulk-" + action, "click", () => failures.change(action));
    on("dl-replay", "click", () => deadLetter.replay());
    on("dl-preview", "click", () => deadLetter.preview());
    on("dl-confirm", "click", () => deadLetter.confirm());
    on("dl-delete", "click", () => deadLetter.remove());
    // A changed payload needs a new preview before it can be confirmed.
    $("dl-payload").addEventListener("input", () => { $("dl-confirm").disabled = true; deadLetter.digest = null; });
    on("task-form", "submit", () => {
      const id = $("task-id").value.trim();
      if (("#task/" + encodeURIComponent(id)) === location.hash) return refresh();
      location.hash = "#task/" + encodeURIComponent(id);
    });
    on("tasks-form", "submit", () => task.search());
    on("audit-filter", "submit", () => audit.refresh());
    on("policies-filter", "submit", () => policies.refresh());
    on("policy-save", "click", () => policies.save());
    on("policy-delete", "click", () => policies.remove());
    on("graph-form", "submit", () => {
      const hash = "#graph/" + encodeURIComponent($("graph-namespace").value.trim()) + "/"
        + encodeURIComponent($("graph-id").value.trim());
      if (hash === location.hash) return refresh();
      location.hash = hash;
    });
    on("graph-skip", "click", () => graph.skip());
    on("graph-cancel", "click", () => graph.cancel());
    window.addEventListener("hashchange", route);
    setInterval(refresh, REFRESH_MS);
  }

  // ---------------------------------------------------------------- signing in and out

  function showSignIn(shown) {
    $("signin").hidden = !shown;
    $("signout").hidden = shown;
    if (shown) { $("who").textContent = ""; $("signin-token").focus(); }
  }

  async function whoAmI() {
    const response = await fetch("/api/session", {cache: "no-store", headers: CSRF});
    if (response.status === 401) { showSignIn(true); return null; }
    if (!response.ok) throw new ApiError(response.status, response.status + " " + response.statusText);
    const me = await response.json();
    showSignIn(false);
    $("who").textContent = me.name + " (" + me.role + ")";
    return me;
  }

  async function signedIn() {
    if (!await whoAmI()) return;
    const live = await api("GET", "/api/live");
    $("node-name").textContent = "node " + live.node;
    await route();
  }

  async function start() {
    wire();
    on("signin", "submit", async () => {
      const token = $("signin-token").value.trim();
      $("signin-token").value = "";
      await signIn(token);
      await signedIn();
    });
    on("signout", "click", async () => {
      await fetch("/api/session", {method: "DELETE", cache: "no-store", headers: CSRF});
      showSignIn(true);
    });
    const given = new URLSearchParams(location.search).get("token");
    if (given) {
      history.replaceState(null, "", location.pathname + location.hash);
      await run(() => signIn(given));
    }
    await run(signedIn);
  }

  start();
})();
