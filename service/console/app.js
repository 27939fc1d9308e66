"use strict";
// The Atoll service console: stored runs (each episode's transcript, world diff and verdicts side by side),
// optimizations (trajectory and proposals), release chains (with rollback), records with their feedback, and
// jobs with live progress. It reads the routes of service/_console_api.py, the records routes (/v1/records)
// and the jobs API (/jobs) when the server has one. Every value is set as text, never parsed as HTML:
// transcripts and records hold what models and users wrote.

const token = new URLSearchParams(location.search).get("token");
const view = document.getElementById("view");
const SVG = "http://www.w3.org/2000/svg";
let generation = 0; // bumped on every navigation, so a slow answer never draws over a newer page
let stream = null; // the job page's EventSource, closed when the page changes
let flash = null; // a message for the next page drawn (what a rollback made)

// -- building nodes, as text only -------------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child !== null && child !== undefined && child !== false) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

const missing = (value) => value === null || value === undefined;
const show = (value) => (missing(value) ? "∅" : typeof value === "object" ? JSON.stringify(value) : String(value));
const fixed = (value, digits = 3) => (missing(value) ? "–" : Number(value).toFixed(digits));
const count = (value) => (missing(value) ? "–" : Number(value).toLocaleString("en-US"));
const money = (value) => (missing(value) ? "–" : `$${Number(value).toFixed(4)}`);
const seconds = (value) => (missing(value) ? "–" : `${Number(value).toFixed(2)} s`);
const short = (text, length) => (!text ? "" : text.length <= length ? text : `${text.slice(0, length - 1)}…`);
const enc = encodeURIComponent;
const hashOf = (...parts) => `#/${parts.map((part) => enc(String(part))).join("/")}`;
const link = (hash, text) => el("a", { href: hash }, text);
const num = (text) => el("td", { class: "num" }, text);
const empty = (text) => el("p", { class: "empty" }, text);
const facts = (pairs) => el("dl", {}, pairs.filter(([, value]) => !missing(value) && value !== "")
  .flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]));

function table(columns, rows, attributes = {}) {
  return el("table", attributes, el("tr", {}, columns.map((column) => el("th", {}, column))), rows);
}

function jsonBlock(value) {
  return el("pre", {}, JSON.stringify(value, null, 2));
}

// -- talking to the server --------------------------------------------------------------------------

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path, options = {}) {
  const headers = { ...(options.headers || {}), ...(token ? { Authorization: `Bearer ${token}` } : {}) };
  const response = await fetch(path, { ...options, headers });
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) {
    const said = body?.error?.message ?? body?.error ?? body?.detail ?? (text || response.statusText);
    throw new HttpError(response.status, `${path}: HTTP ${response.status}: ${typeof said === "string" ? said : JSON.stringify(said)}`);
  }
  return body;
}

function post(path, body) {
  return api(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

// -- pages ------------------------------------------------------------------------------------------

const ROUTES = [
  [/^(?:#\/?)?$/, runsPage],
  [/^#\/runs(?:\?(.*))?$/, runsPage],
  [/^#\/runs\/([^/?]+)$/, runPage],
  [/^#\/runs\/([^/?]+)\/([^/?]+)\/(-?\d+)$/, episodePage],
  [/^#\/optimizations\/([^/?]+)$/, optimizationPage],
  [/^#\/releases$/, releasesPage],
  [/^#\/releases\/([^/?]+)$/, chainPage],
  [/^#\/records(?:\?(.*))?$/, recordsPage],
  [/^#\/records\/([^/?]+)$/, recordPage],
  [/^#\/jobs$/, jobsPage],
  [/^#\/jobs\/([^/?]+)$/, jobPage],
];

async function route() {
  const mine = ++generation;
  if (stream) {
    stream.close();
    stream = null;
  }
  const hash = location.hash;
  const section = (hash.match(/^#\/(\w+)/) || [null, "runs"])[1];
  for (const item of document.querySelectorAll("header nav a[id^=nav-]")) {
    const current = item.id === `nav-${section === "optimizations" ? "runs" : section}`;
    item.classList.toggle("current", current);
  }
  const found = ROUTES.map(([pattern, page]) => [hash.match(pattern), page]).find(([match]) => match);
  if (!found) {
    view.replaceChildren(el("p", { class: "error" }, `There is no page ${hash}.`));
    return;
  }
  const [match, page] = found;
  try {
    const nodes = await page(...match.slice(1));
    if (mine !== generation) return;
    const shown = [flash ? el("p", { class: "notice", id: "flash" }, flash) : null, nodes].flat(Infinity);
    flash = null;
    view.replaceChildren(...shown.filter((node) => !missing(node) && node !== false));
  } catch (error) {
    if (mine === generation) view.replaceChildren(el("p", { class: "error" }, error.message));
  }
}

// -- runs -------------------------------------------------------------------------------------------

async function runsPage(query) {
  const kind = new URLSearchParams(query || "").get("kind") || "";
  const [runs, optimizations] = await Promise.all([
    api(`/api/runs?limit=200${kind ? `&kind=${enc(kind)}` : ""}`),
    api("/api/optimizations?limit=100"),
  ]);
  const choose = el("select", {
    id: "run-kind",
    onchange: (event) => { location.hash = event.target.value ? `#/runs?kind=${enc(event.target.value)}` : "#/runs"; },
  }, el("option", { value: "" }, "every kind"), runs.kinds.map((name) => el("option", { value: name, selected: name === kind }, name)));
  const runRows = runs.data.map((run) => el("tr", { "data-run": run.id },
    el("td", {}, link(hashOf("runs", run.id), run.id)), el("td", {}, run.kind), el("td", {}, run.harness),
    el("td", {}, run.model), el("td", {}, [run.suite, run.split].filter(Boolean).join(" · ")), el("td", {}, run.status),
    num(count(run.episodes)), num(fixed(run.mean_score)), num(fixed(run.pass_1)), num(count(run.tokens)),
    num(money(run.cost_usd)), el("td", {}, run.started_at)));
  const optimizationRows = optimizations.data.map((row) => el("tr", { "data-optimization": row.id },
    el("td", {}, link(hashOf("optimizations", row.id), row.id)), el("td", {}, row.harness), el("td", {}, row.model),
    el("td", {}, row.stop_reason ? `${row.status} (${row.stop_reason})` : row.status), el("td", {}, row.started_at),
    el("td", {}, row.finished_at ?? "")));
  return [
    el("h2", {}, "Runs"),
    el("form", { class: "filters" }, el("label", {}, "Kind", choose)),
    runRows.length
      ? table(["run", "kind", "harness", "model", "suite", "status", "episodes", "mean score", "pass^1", "tokens", "cost", "started"], runRows, { id: "runs" })
      : empty("No runs stored yet: `optimize eval HARNESS` stores one."),
    el("h2", {}, "Optimizations"),
    optimizationRows.length
      ? table(["optimization", "harness", "model", "status", "started", "finished"], optimizationRows, { id: "optimizations" })
      : empty("No optimizations yet: `optimize run HARNESS` makes one."),
  ];
}

async function runPage(rawRef) {
  const { run, episodes } = await api(`/api/runs/${enc(decodeURIComponent(rawRef))}`);
  const metrics = run.metrics;
  const passK = metrics ? Object.entries(metrics.pass_k).map(([k, value]) => `pass^${k} ${fixed(value)}`).join(" · ") : null;
  const rows = episodes.map((episode) => el("tr", { "data-episode": `${episode.task_id}/${episode.seed}` },
    el("td", {}, link(hashOf("runs", run.id, episode.task_id, episode.seed), episode.task_id)), num(episode.seed),
    num(fixed(episode.score)), el("td", {}, verdictMark(episode.passed, episode.errored)), el("td", {}, episode.stop_reason),
    num(count(episode.tokens)), num(money(episode.cost)), num(seconds(episode.latency)),
    el("td", { class: "muted" }, episode.reused_from ? `reused from ${episode.reused_from}` : short(episode.error, 80))));
  return [
    el("h2", {}, `Run ${run.id}`),
    facts([
      ["kind", `${run.kind} · ${run.status}`],
      ["harness", `${run.harness} @${run.harness_hash.slice(0, 12)}`],
      ["model", run.model],
      ["suite", [run.suite, run.split, run.k ? `k=${run.k}` : null].filter(Boolean).join(" · ")],
      ["when", `${run.started_at} → ${run.finished_at ?? "…"}`],
      ["score", metrics ? `mean ${fixed(metrics.mean_score)} · ${passK}` : null],
      ["spend", metrics ? `${metrics.episodes} episodes (${metrics.errors} errored, ${metrics.reused} reused) · `
        + `${count(metrics.usage.prompt_tokens + metrics.usage.completion_tokens)} tokens · ${money(metrics.usage.cost_usd)} · `
        + `latency p50 ${seconds(metrics.latency_median_s)}, p95 ${seconds(metrics.latency_p95_s)}` : null],
    ]),
    el("h2", {}, "Episodes"),
    rows.length ? table(["task", "seed", "score", "verdict", "stopped", "tokens", "cost", "latency", ""], rows, { id: "episodes" })
      : empty("No episodes stored for this run."),
  ];
}

function verdictMark(passed, errored) {
  if (errored) return el("span", { class: "fail" }, "errored");
  return el("span", { class: passed ? "pass" : "fail" }, passed ? "✓ passed" : "✗ failed");
}

async function episodePage(rawRef, rawTask, seed) {
  const ref = decodeURIComponent(rawRef);
  const task = decodeURIComponent(rawTask);
  const result = await api(`/api/runs/${enc(ref)}/episodes/${enc(task)}/${enc(seed)}`);
  const episode = result.episode;
  const usage = episode.usage;
  const patterns = Object.entries(result.patterns).map(([name, n]) => `${name} ×${n}`).join(", ");
  return [
    el("p", {}, link(hashOf("runs", result.run_id), `← run ${result.run_id}`)),
    el("h2", {}, `${task} · seed ${seed} `, verdictMark(result.passed, !missing(episode.error)), ` · score ${fixed(result.score)}`),
    facts([
      ["harness", `${episode.harness} @${episode.harness_hash.slice(0, 12)} · model ${episode.model}`],
      ["world", `${episode.world} / ${episode.fixture} · seed ${episode.seed} · clock ${episode.clock}`],
      ["stopped", episode.stop_reason],
      ["spend", `${usage.model_calls} model calls (${usage.cached_calls} cached) · ${episode.calls.length} tool calls · `
        + `${count(usage.prompt_tokens)}+${count(usage.completion_tokens)} tokens · ${money(usage.cost_usd)} · ${seconds(episode.duration_s)}`],
      ["patterns", patterns],
      ["error", episode.error],
      ["reused from", result.reused_from],
    ]),
    el("div", { class: "columns" },
      el("section", { id: "transcript" }, el("h2", {}, "Transcript"), transcript(episode.events)),
      el("section", { id: "diff" }, el("h2", {}, "World diff"), diffView(episode.diff.tables)),
      el("section", { id: "verdicts" }, el("h2", {}, "Verdicts"), verdicts(result.grade))),
    el("h2", {}, "World calls"),
    episode.calls.length ? episode.calls.map(callView) : empty("No tool reached the world."),
    el("h2", {}, "System messages sent"),
    episode.prompts.length
      ? episode.prompts.map((part) => el("details", {}, el("summary", {}, `${part.agent}: ${part.kind}`), el("pre", {}, part.text)))
      : empty("Not recorded for this episode."),
  ];
}

function transcript(events) {
  let depth = 0;
  const nodes = [];
  for (const event of events) {
    if (event.kind === "return") depth = Math.max(depth - 1, 0);
    const node = eventView(event);
    if (node) {
      node.style.marginLeft = `${depth * 1.5}em`;
      nodes.push(node);
    }
    if (event.kind === "delegate") depth += 1;
  }
  return nodes.length ? nodes : [empty("No events.")];
}

function eventView(event) {
  const box = (kind, who, body, extra = "") => el("div", { class: `event ${kind}${extra}`, "data-kind": kind },
    el("span", { class: "who" }, who), body);
  const error = event.error || {};
  switch (event.kind) {
    case "user": return box("user", "User", event.content ?? "");
    case "assistant": return box("assistant", `Agent (${event.agent})`, event.content ?? "");
    case "thought": return box("thought", `${event.agent} thinks`, event.content ?? "");
    case "tool_call": return box("tool_call", "→", `${event.tool}(${JSON.stringify(event.arguments ?? {})})`);
    case "tool_result":
      if (event.ok === false) return box("tool_result", "✗", `${error.type ?? "error"}: ${error.message ?? ""}`, " failed");
      return box("tool_result", "←", valueView(event.result));
    case "delegate": return box("delegate", `⇢ ${event.agent} asks ${event.tool}`, event.content ?? "");
    case "return": return box("return", `⇠ ${event.agent} answers`, event.content ?? "");
    case "notice": return box("notice", `runtime to ${event.agent}`, event.content ?? "");
    case "error": return box("error", `! ${error.type ?? "error"} (${event.agent})`, error.message ?? event.content ?? "");
    default: return null;
  }
}

function valueView(value) {
  const text = JSON.stringify(value);
  if (missing(text) || text.length <= 200) return show(value);
  return el("details", {}, el("summary", {}, short(text, 120)), jsonBlock(value));
}

function rowsTable(rows, kind) {
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  return table(columns, rows.map((row) => el("tr", { class: kind }, columns.map((column) => el("td", {}, show(row[column]))))));
}

function diffView(tables) {
  const names = Object.keys(tables);
  if (!names.length) return [empty("No changes.")];
  return names.flatMap((name) => {
    const changes = tables[name];
    const parts = [el("h3", { "data-diff-table": name },
      `${name}: +${changes.inserted.length} ~${changes.updated.length} −${changes.deleted.length}`)];
    if (changes.inserted.length) parts.push(rowsTable(changes.inserted, "inserted"));
    if (changes.updated.length) {
      parts.push(table(["key", "changed"], changes.updated.map((update) => el("tr", { class: "updated" },
        el("td", {}, show(update.key)),
        el("td", {}, Object.keys(update.after).flatMap((column) => [`${column}: `,
          el("span", { class: "before" }, show(update.before[column])), " → ",
          el("span", { class: "after" }, show(update.after[column])), " "]))))));
    }
    if (changes.deleted.length) parts.push(rowsTable(changes.deleted, "deleted"));
    return parts;
  });
}

function verdicts(grade) {
  if (!grade.checks.length) return [empty("No checks: the score is 1.")];
  const failedFirst = [...grade.checks].sort((a, b) => Number(a.passed) - Number(b.passed));
  return failedFirst.map((check) => el("div", { class: "check", "data-passed": String(check.passed) },
    el("span", { class: check.passed ? "pass" : "fail" }, check.passed ? "✓ " : "✗ "), el("b", {}, check.name), `: ${check.feedback}`,
    check.weight !== 1 ? el("span", { class: "muted" }, ` (weight ${check.weight})`) : null));
}

function callView(call) {
  const outcome = call.ok ? `${call.changes.length} row${call.changes.length === 1 ? "" : "s"} changed` : `refused: ${call.error?.type ?? "error"}`;
  return el("details", {}, el("summary", { class: call.ok ? "" : "fail" }, `#${call.index} ${call.tool} · ${outcome} · ${call.duration_ms.toFixed(1)} ms`),
    jsonBlock({ arguments: call.arguments, ...(call.ok ? { value: call.value } : { error: call.error }), changes: call.changes }));
}

// -- optimizations ----------------------------------------------------------------------------------

async function optimizationPage(rawRef) {
  const report = await api(`/api/optimizations/${enc(decodeURIComponent(rawRef))}`);
  const usage = report.usage;
  const spending = report.objective !== "quality";
  const testSplit = missing(report.test_start) ? null : `${fixed(report.test_start)} → ${fixed(report.test_final)} (reported, never used to decide)`;
  const points = report.trajectory.map((point) => el("tr", {}, el("td", {}, point.label), num(fixed(point.score)),
    spending ? num(fixed(point.spend, 4)) : null));
  const proposals = report.proposals.map((row) => [
    el("tr", { "data-proposal": row.iteration + 1 },
      num(row.iteration + 1), el("td", {}, row.operator), el("td", { class: ["accept", "reject", "void"].includes(row.verdict) ? row.verdict : "muted" }, row.verdict),
      num(missing(row.p_value) ? "" : `${fixed(row.incumbent_score)} → ${fixed(row.candidate_score)}`),
      num(missing(row.lower_bound) ? "" : `${row.lower_bound >= 0 ? "+" : ""}${fixed(row.lower_bound)}`),
      num(missing(row.p_value) ? "" : Number(row.p_value).toPrecision(3)), el("td", {}, row.record),
      el("td", {}, el("code", {}, (row.commit || "").slice(0, 10))),
      el("td", {}, row.rationale,
        row.reasons.length ? el("ul", { class: "fail" }, row.reasons.map((reason) => el("li", {}, reason))) : null,
        row.patch ? el("details", {}, el("summary", {}, "patch"), diffBlock(row.patch)) : null)),
  ]);
  return [
    el("h2", {}, `Optimization ${report.id}`),
    facts([
      ["status", report.stop_reason ? `${report.status} (${report.stop_reason})` : report.status],
      ["harness", `${report.harness} (${report.harness_path}) · model ${report.model}`],
      ["when", `${report.started_at} → ${report.finished_at ?? "…"}`],
      ["decisions", `${report.accepted} accepted of ${report.proposals.length} proposals`],
      ["objective", spending ? report.objective : null],
      ["test split", testSplit],
      ["spend", `${report.episodes} episodes · ${usage.model_calls} model calls · `
        + `${count(usage.prompt_tokens + usage.completion_tokens)} tokens · ${money(usage.cost_usd)}`
        + (missing(report.elapsed_s) ? "" : ` · ${(report.elapsed_s / 60).toFixed(1)} min`)],
      ["harness files", `${report.start_hash.slice(0, 12)} → ${report.final_hash.slice(0, 12)}`],
    ]),
    el("h2", {}, "Gate score per accepted step"),
    report.trajectory.length
      ? [chart(report.trajectory), table(["step", "gate score", ...(spending ? [`${report.objective} per episode`] : [])], points, { id: "trajectory" })]
      : empty("No gate score yet: the run stopped before its first evaluation finished."),
    spending && report.frontier.length ? [
      el("h2", {}, `Quality / ${report.objective} frontier`),
      table(["harness", "val quality", `${report.objective} per episode`, "kept", "commit"], report.frontier.map((point) => el("tr", {},
        el("td", {}, point.label), num(fixed(point.quality)), num(fixed(point.spend, 4)), el("td", {}, point.accepted ? "yes" : ""),
        el("td", {}, el("code", {}, (point.commit || "").slice(0, 10)))))),
    ] : null,
    el("h2", {}, "Proposals"),
    proposals.length
      ? table(["#", "operator", "verdict", "score", "lower bound", "p", "tasks", "commit", "rationale"], proposals, { id: "proposals" })
      : empty("No proposals yet."),
    el("h2", {}, "Harness diff, start → final"),
    report.changes.length
      ? report.changes.map((change) => [el("h3", {}, `${change.path} (${change.status})`), diffBlock(change.diff)])
      : empty("No file changed."),
  ];
}

function chart(points) {
  const [width, height, pad] = [640, 180, 28];
  const step = (width - 2 * pad) / Math.max(1, points.length - 1);
  const xy = points.map((point, i) => [pad + i * step, height - pad - point.score * (height - 2 * pad)]);
  return svg("svg", { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "gate score per accepted step" },
    svg("line", { x1: pad, y1: height - pad, x2: width - pad, y2: height - pad, stroke: "#d0d5dd" }),
    svg("line", { x1: pad, y1: pad, x2: width - pad, y2: pad, stroke: "#eaecf0" }),
    svg("text", { x: 4, y: height - pad + 4, "font-size": 10, fill: "#667085" }, "0"),
    svg("text", { x: 4, y: pad + 4, "font-size": 10, fill: "#667085" }, "1"),
    svg("polyline", { fill: "none", stroke: "#12b76a", "stroke-width": 2, points: xy.map(([x, y]) => `${x},${y}`).join(" ") }),
    ...xy.map(([x, y], i) => svg("circle", { cx: x, cy: y, r: 4, fill: "#067647" }, svg("title", {}, `${points[i].label}: ${fixed(points[i].score)}`))),
    ...xy.map(([x, y], i) => svg("text", { x, y: y - 8, "font-size": 10, "text-anchor": "middle" }, fixed(points[i].score))));
}

function diffBlock(text) {
  const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
  const kind = (line) => (line.startsWith("+++") || line.startsWith("---") ? "muted"
    : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "");
  return el("pre", { class: "diff" }, lines.map((line) => el("span", { class: kind(line) }, line || " ")));
}

// -- releases ---------------------------------------------------------------------------------------

async function releasesPage() {
  const [body, held] = await Promise.all([api("/api/releases"), heldJobs(null)]);
  const rows = body.data.map((chain) => el("tr", { "data-harness": chain.harness },
    el("td", {}, link(hashOf("releases", chain.harness), chain.harness)), num(chain.releases),
    ...(chain.head
      ? [num(chain.head.number), el("td", {}, chain.head.kind), el("td", {}, chain.head.created_at),
        el("td", {}, gateLabel(chain.head.evidence))]
      : [el("td", { colspan: "4" }, chain.problem || "no head")])));
  return [
    el("h2", {}, "Releases"),
    el("p", { class: "muted" }, "Each harness serves the head of its release chain. `optimize release HARNESS` publishes a gated release."),
    held,
    rows.length ? table(["harness", "releases", "head", "kind", "created", "head's evidence"], rows, { id: "chains" })
      : empty("No releases yet: `optimize release HARNESS` publishes the first."),
  ];
}

async function chainPage(rawHarness) {
  const harness = decodeURIComponent(rawHarness);
  const [chain, held] = await Promise.all([api(`/api/releases/${enc(harness)}`), heldJobs(harness)]);
  const head = chain.releases[chain.releases.length - 1];
  const problem = el("div", { id: "rollback-problem" });
  const rows = [...chain.releases].reverse().map((release) => releaseRow(release, head, problem));
  return [
    el("p", {}, link("#/releases", "← every harness")),
    el("h2", {}, `Releases of ${chain.harness}`),
    el("p", { class: "muted" }, `Release ${head.number} is served (the head). A rollback serves an older release's files again, `
      + "as a new release on top of the head; no gate runs, nothing is deleted, and no git tag is made (`optimize release rollback` tags)."),
    problem,
    held,
    table(["#", "kind", "parent", "commit", "content hash", "created", "evidence", "served", "note", ""], rows, { id: "chain" }),
  ];
}

function releaseRow(release, head, problem) {
  const action = el("td", {});
  if (release.content_hash !== head.content_hash) {
    const ask = el("button", {
      type: "button",
      "data-rollback": release.number,
      onclick: () => action.replaceChildren(
        el("button", { type: "button", "data-confirm": release.number, onclick: () => rollback(release, head, problem) },
          `Serve release ${release.number}'s files as release ${head.number + 1}`),
        " ", el("button", { type: "button", onclick: () => action.replaceChildren(ask) }, "Cancel")),
    }, `Roll back to ${release.number}`);
    action.append(ask);
  }
  const served = release.served;
  return el("tr", { class: release.number === head.number ? "head" : "", "data-release": release.number },
    num(release.number === head.number ? `${release.number} (served)` : release.number), el("td", {}, release.kind),
    num(release.parent ?? "–"), el("td", {}, el("code", {}, (release.commit || "–").slice(0, 10))),
    el("td", {}, el("code", { title: release.content_hash }, release.content_hash.slice(0, 12))), el("td", {}, release.created_at),
    el("td", {}, evidenceView(release.evidence)),
    el("td", {}, served.calls ? `${served.calls} calls (${served.errors} failed); feedback on ${served.with_feedback}: `
      + `${served.passed} passed, ${served.failed} not${missing(served.mean_score) ? "" : `, mean score ${fixed(served.mean_score, 2)}`}` : "no calls recorded"),
    el("td", {}, release.note), action);
}

async function rollback(release, head, problem) {
  try {
    const made = await post(`/api/releases/${enc(release.harness)}/rollback`, { to: release.number, expected_head: head.number });
    flash = `Release ${made.number} of ${made.harness} now serves the files of release ${release.number}.`;
    await route();
  } catch (error) {
    problem.replaceChildren(el("p", { class: "error" }, error.message));
  }
}

function gateLabel(evidence) {
  const gate = evidence.gate;
  return el("span", { class: gate === "pass" ? "pass" : missing(gate) ? "muted" : "fail" }, missing(gate) ? "no gate" : `gate: ${gate}`);
}

function evidenceView(evidence) {
  const figures = missing(evidence.candidate_mean) ? null
    : `${fixed(evidence.base_mean)} → ${fixed(evidence.candidate_mean)}, lower bound ${fixed(evidence.lower_bound)}, `
      + `${evidence.wins} better / ${evidence.losses} worse on ${evidence.tasks} tasks`;
  const runs = ["base_run", "candidate_run"].filter((key) => typeof evidence[key] === "string");
  return [
    el("div", {}, gateLabel(evidence)),
    evidence.summary ? el("div", {}, evidence.summary) : null,
    figures ? el("div", { class: "muted" }, figures) : null,
    runs.length ? el("div", {}, runs.flatMap((key) => [`${key.replace("_", " ")}: `, link(hashOf("runs", evidence[key]), evidence[key]), " "])) : null,
    el("details", {}, el("summary", {}, "all evidence"), jsonBlock(evidence)),
  ];
}

// -- records ----------------------------------------------------------------------------------------

async function recordsPage(query) {
  const params = new URLSearchParams(query || "");
  const harness = params.get("harness") || "";
  const session = params.get("session") || "";
  const feedback = params.get("feedback") || "";
  const asked = new URLSearchParams({ limit: "200" });
  if (harness) asked.set("harness", harness);
  if (session) asked.set("session", session);
  if (feedback) asked.set("with_feedback", feedback);
  const body = await api(`/v1/records?${asked}`);
  const filters = el("form", {
    class: "filters",
    onsubmit: (event) => {
      event.preventDefault();
      const form = new FormData(event.target);
      const next = new URLSearchParams([...form.entries()].filter(([, value]) => value)).toString();
      location.hash = `#/records${next ? `?${next}` : ""}`;
    },
  },
  el("label", {}, "Harness", el("input", { name: "harness", id: "records-harness", value: harness })),
  el("label", {}, "Session", el("input", { name: "session", id: "records-session", value: session })),
  el("label", {}, "Feedback", el("select", { name: "feedback", id: "records-feedback" },
    el("option", { value: "" }, "any"), el("option", { value: "true", selected: feedback === "true" }, "with feedback"),
    el("option", { value: "false", selected: feedback === "false" }, "without feedback"))),
  el("button", { type: "submit", id: "records-show" }, "Show"));
  const rows = body.data.map((record) => el("tr", { "data-record": record.id },
    el("td", {}, link(hashOf("records", record.id), record.id)), el("td", {}, record.created_at),
    el("td", {}, record.agent === record.harness ? record.harness : `${record.harness} / ${record.agent}`),
    el("td", {}, missing(record.release) ? "unreleased" : link(hashOf("releases", record.harness), String(record.release))),
    el("td", {}, link(`#/records?session=${enc(record.session)}`, short(record.session, 18))), el("td", {}, record.model),
    num(count(record.prompt_tokens + record.completion_tokens)), num(`${Math.round(record.latency_ms)} ms`),
    el("td", {}, record.error ? el("span", { class: "fail" }, "error") : short(record.reply ?? "", 80)),
    el("td", {}, record.feedback.map(feedbackLine))));
  const shownFor = [harness && `harness ${harness}`, session && `session ${session} (in call order)`,
    feedback && (feedback === "true" ? "with feedback" : "without feedback")].filter(Boolean).join(", ");
  return [
    el("h2", {}, "Records"),
    el("p", { class: "muted" }, `Every call the harness endpoint answered, newest first${shownFor ? `; only ${shownFor}` : ""}.`),
    filters,
    rows.length ? table(["record", "time", "harness", "release", "session", "model", "tokens", "latency", "reply", "feedback"], rows, { id: "records" })
      : empty("No records match."),
  ];
}

function feedbackLine(feedback) {
  const mark = feedback.passed === true ? "✓" : feedback.passed === false ? "✗" : "·";
  const score = missing(feedback.score) ? "" : ` ${fixed(feedback.score, 2)}`;
  const said = feedback.comment || feedback.correction;
  return el("div", { class: feedback.passed === false ? "fail" : feedback.passed ? "pass" : "" },
    `${mark} ${feedback.source}${score}${said ? `: ${short(said, 60)}` : ""}`);
}

function textOf(content) {
  if (missing(content)) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part?.text ?? JSON.stringify(part)).join("\n");
  return JSON.stringify(content);
}

function messageView(message) {
  const calls = (message.tool_calls || []).map((call) => el("div", { class: "event tool_call", "data-kind": "tool_call" },
    el("span", { class: "who" }, "→"), `${call.function?.name}(${call.function?.arguments ?? ""})`));
  const kind = ["user", "assistant"].includes(message.role) ? message.role : message.role === "tool" ? "tool_result" : "notice";
  const who = message.role === "tool" ? `tool result${message.tool_call_id ? ` (${message.tool_call_id})` : ""}` : message.role;
  return [textOf(message.content) ? el("div", { class: `event ${kind}`, "data-role": message.role }, el("span", { class: "who" }, who), textOf(message.content)) : null, ...calls];
}

async function recordPage(rawId) {
  const record = await api(`/v1/records/${enc(decodeURIComponent(rawId))}`);
  const messages = record.request?.messages || [];
  const answers = (record.response?.choices || []).map((choice) => choice.message).filter(Boolean);
  const rows = record.feedback.map((feedback) => el("tr", { "data-source": feedback.source },
    el("td", {}, feedback.source), el("td", {}, missing(feedback.passed) ? "–" : feedback.passed ? "✓ passed" : "✗ not passed"),
    num(fixed(feedback.score, 2)), el("td", {}, feedback.comment ?? ""), el("td", {}, feedback.correction ?? ""),
    num(feedback.posts), el("td", {}, feedback.updated_at)));
  return [
    el("p", {}, link("#/records", "← every record")),
    el("h2", {}, `Record ${record.id}`),
    facts([
      ["when", record.created_at],
      ["harness", `${record.harness} · agent ${record.agent} · model ${record.model}`],
      ["release", missing(record.release) ? "unreleased working files" : link(hashOf("releases", record.harness), `release ${record.release}`)],
      ["session", link(`#/records?session=${enc(record.session)}`, record.session)],
      ["spend", `${count(record.prompt_tokens)}+${count(record.completion_tokens)} tokens · ${money(record.cost_usd)} · ${Math.round(record.latency_ms)} ms`],
      ["prompt hash", el("code", {}, record.prompt_hash)],
      ["error", record.error],
    ]),
    el("div", { class: "pair" },
      el("section", { id: "request" }, el("h2", {}, "Request messages"), messages.length ? messages.map(messageView) : empty("No messages.")),
      el("section", { id: "response" }, el("h2", {}, "Response"), answers.length ? answers.map(messageView) : empty(record.error ? "None: the call failed." : "None."))),
    el("section", { id: "feedback" }, el("h2", {}, "Feedback"),
      rows.length ? table(["source", "passed", "score", "comment", "correction", "posts", "updated"], rows) : empty("No feedback yet.")),
    el("details", {}, el("summary", {}, "the request and response as stored"), jsonBlock({ request: record.request, response: record.response })),
  ];
}

// -- jobs -------------------------------------------------------------------------------------------
// The jobs API (service/_jobs_api.py): GET /jobs lists jobs as {"data": [...]}, GET /jobs/{id}/events streams
// server-sent events named `job` (the job itself), `gate` ({side, done, total}) or after the optimizer's
// events (start, evaluate, progress, proposal, screen, decision, commit, paused, finish: {kind, status}).

const NOT_ENABLED = "Jobs are not enabled on this server.";
const JOB_EVENTS = ["job", "gate", "start", "evaluate", "progress", "proposal", "screen", "decision", "commit", "paused", "finish"];
const STOPPED = new Set(["held", "finished", "failed", "cancelled", "interrupted"]); // its event stream has ended

async function listJobs(harness) {
  try {
    return (await api(`/jobs?limit=200${harness ? `&harness=${enc(harness)}` : ""}`)).data;
  } catch (error) {
    if (error.status === 404) return null; // this server has no jobs API
    throw error;
  }
}

async function heldJobs(harness) {
  const held = ((await listJobs(harness)) || []).filter((job) => job.status === "held");
  if (!held.length) return [];
  return [
    el("h3", {}, "Held for approval"),
    table(["job", "harness", "would be", "commit", "content hash", "evidence", ""], held.map((job) => {
      const pending = job.result?.pending || {};
      const next = missing(pending.expected_head) ? 1 : pending.expected_head + 1;
      return el("tr", { "data-job": job.id },
        el("td", {}, link(hashOf("jobs", job.id), job.id), el("div", { class: "muted" }, `${job.kind} · ${job.created_at}`)),
        el("td", {}, job.harness), el("td", {}, `release ${next}, gated against ${missing(pending.expected_head) ? "no head" : `release ${pending.expected_head}`}`),
        el("td", {}, el("code", {}, (pending.commit || "–").slice(0, 10))),
        el("td", {}, el("code", { title: pending.content_hash ?? "" }, (pending.content_hash || "–").slice(0, 12))),
        el("td", {}, pending.evidence ? evidenceView(pending.evidence) : ""), el("td", {}, approveButton(job)));
    }), { id: "held" }),
  ];
}

function approveButton(job) {
  if (job.status !== "held") return null;
  return el("button", {
    type: "button",
    "data-approve": job.id,
    onclick: async (event) => {
      try {
        const done = await post(`/jobs/${enc(job.id)}/approve`, {});
        flash = `Job ${job.id}: ${done.outcome || done.status}.`;
        await route();
      } catch (error) {
        event.target.replaceWith(el("span", { class: "error" }, error.message));
      }
    },
  }, "Approve");
}

function optimizationLink(job) {
  return job.optimization_id ? link(hashOf("optimizations", job.optimization_id), job.optimization_id) : "";
}

async function jobsPage() {
  const jobs = await listJobs(null);
  if (jobs === null) return [el("h2", {}, "Jobs"), empty(NOT_ENABLED)];
  const rows = jobs.map((job) => el("tr", { "data-job": job.id },
    el("td", {}, link(hashOf("jobs", job.id), job.id)), el("td", {}, job.kind), el("td", {}, job.harness),
    el("td", { class: job.status === "failed" ? "fail" : "" }, job.status), el("td", {}, job.stage), el("td", {}, job.outcome || job.error || ""),
    el("td", {}, optimizationLink(job)), el("td", {}, job.created_at), el("td", {}, approveButton(job))));
  return [
    el("h2", {}, "Jobs"),
    rows.length ? table(["job", "kind", "harness", "status", "stage", "outcome", "optimization", "created", ""], rows, { id: "jobs" })
      : empty("No jobs yet: POST /jobs starts one."),
  ];
}

async function jobPage(rawId) {
  const mine = generation; // route() has just counted this navigation
  const id = decodeURIComponent(rawId);
  let job;
  try {
    job = await api(`/jobs/${enc(id)}`);
  } catch (error) {
    if (error.status !== 404) throw error;
    return [el("h2", {}, "Jobs"), empty((await listJobs(null)) === null ? NOT_ENABLED : `There is no job ${id}.`)];
  }
  if (mine !== generation) return [];
  const status = el("dd", { id: "job-status" }, job.status);
  const stage = el("dd", { id: "job-stage" }, job.stage);
  const outcome = el("dd", { id: "job-outcome" }, job.outcome || job.error || "");
  const progress = el("dd", { id: "job-progress" }, "");
  const message = el("dd", { id: "job-message" }, "");
  const log = el("ol", { id: "job-events" });
  const live = el("p", { class: "muted", id: "job-live" }, "Following its events…");
  const showJob = (current) => {
    status.textContent = current.status;
    stage.textContent = current.stage;
    outcome.textContent = current.outcome || current.error || "";
  };
  const heard = (kind, text) => {
    let data = {};
    try {
      data = JSON.parse(text);
    } catch {
      data = { text };
    }
    if (kind === "job") {
      showJob(data);
      log.append(el("li", {}, `job: ${data.status} · ${data.stage}${data.outcome ? ` · ${data.outcome}` : ""}`));
    } else if (kind === "gate") {
      progress.replaceChildren(progressBar(data.done, data.total), ` gate, ${data.side}`);
      log.append(el("li", {}, `gate (${data.side}): ${data.done}/${data.total}`));
    } else {
      const run = data.status || {};
      if (run.batch_total) progress.replaceChildren(progressBar(run.batch_done, run.batch_total), ` ${run.stage}`);
      message.textContent = run.message || run.stage || "";
      log.append(el("li", {}, `${kind}: ${run.message || run.stage || text} · proposal ${run.iteration}/${run.max_proposals}`
        + ` · ${run.accepted ?? 0} accepted, ${run.rejected ?? 0} rejected`));
    }
    if (STOPPED.has(status.textContent)) {
      source.close(); // the server ends the stream here; the browser would otherwise reconnect
      live.textContent = `The job is ${status.textContent}.`;
    }
  };
  const query = token ? `?token=${enc(token)}` : "";
  const source = new EventSource(`/jobs/${enc(id)}/events${query}`);
  stream = source;
  for (const kind of JOB_EVENTS) source.addEventListener(kind, (event) => heard(kind, event.data));
  // A stream that ends makes the EventSource reconnect (readyState CONNECTING) with the last event's id; once
  // the server has nothing more to send it answers that with 204, and the EventSource closes (CLOSED). So a job
  // another process runs (its stored state is its one event) is shown once, not reconnected to forever.
  source.onerror = () => {
    if (source.readyState !== EventSource.CLOSED) return; // reconnecting: a dropped connection, or the end
    source.close();
    live.textContent = STOPPED.has(status.textContent) ? `The job is ${status.textContent}.`
      : `The event stream ended with the job ${status.textContent}: a job another process runs streams only its `
        + "state here; reload the page to see it again.";
  };
  return [
    el("p", {}, link("#/jobs", "← every job")),
    el("h2", {}, `Job ${id} `, approveButton(job)),
    el("dl", {},
      el("dt", {}, "kind"), el("dd", {}, `${job.kind} of ${job.harness} (${job.source})`),
      el("dt", {}, "status"), status, el("dt", {}, "stage"), stage, el("dt", {}, "outcome"), outcome,
      el("dt", {}, "progress"), progress, el("dt", {}, "now"), message,
      el("dt", {}, "optimization"), el("dd", {}, optimizationLink(job) || "–"),
      el("dt", {}, "created"), el("dd", {}, `${job.created_at}${job.finished_at ? ` → ${job.finished_at}` : ""}`)),
    el("details", {}, el("summary", {}, "options and result"), jsonBlock({ options: job.options, result: job.result })),
    el("h2", {}, "Events"),
    live,
    log,
  ];
}

function progressBar(done, total) {
  const share = total ? Math.max(0, Math.min(1, done / total)) : 0;
  return el("span", {}, el("span", { class: "progress" }, el("span", { style: `width: ${(share * 100).toFixed(1)}%` })), ` ${done}/${total}`);
}

window.addEventListener("hashchange", route);
route();
