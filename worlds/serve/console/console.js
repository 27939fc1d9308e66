"use strict";
// The Atoll world console. It speaks the same /ws protocol as OpenEnv clients (reset, step, state),
// builds a form for each tool from its JSON schema, and redraws the diff after every call.

const token = new URLSearchParams(location.search).get("token");
const $ = (id) => document.getElementById(id);
let worlds = [];
let socket = null;
let pending = [];
let chosenTool = null;

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

function show(value) {
  return value === null || value === undefined ? "∅" : typeof value === "object" ? JSON.stringify(value) : String(value);
}

function status(text) {
  $("status").textContent = text;
}

async function api(path) {
  const response = await fetch(path, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${await response.text()}`);
  return response.json();
}

// -- the WebSocket: one reply per message, in order ----------------------------------------------

function connect() {
  return new Promise((resolve, reject) => {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const query = token ? `?token=${encodeURIComponent(token)}` : "";
    const ws = new WebSocket(`${scheme}//${location.host}/ws${query}`);
    ws.onopen = () => resolve(ws);
    ws.onerror = () => reject(new Error("could not open the WebSocket"));
    ws.onmessage = (event) => {
      const waiter = pending.shift();
      if (waiter) waiter.resolve(JSON.parse(event.data));
    };
    ws.onclose = () => {
      for (const waiter of pending) waiter.reject(new Error("the server closed the session"));
      pending = [];
      if (socket === ws) status("session closed; open a new instance");
    };
  });
}

function request(message) {
  return new Promise((resolve, reject) => {
    if (!socket || socket.readyState !== WebSocket.OPEN) return reject(new Error("no open instance"));
    pending.push({ resolve, reject });
    socket.send(JSON.stringify(message));
  }).then((reply) => {
    if (reply.type === "error") throw new Error(`${reply.data.code}: ${reply.data.message}`);
    return reply;
  });
}

// -- choosing and opening an instance -------------------------------------------------------------

async function loadWorlds() {
  worlds = await api("api/worlds");
  const select = $("world");
  select.replaceChildren(
    ...worlds.map((w) => el("option", w.error ? { value: w.name, disabled: "" } : { value: w.name },
      w.error ? `${w.name} (cannot load)` : w.name)),
  );
  const usable = worlds.find((w) => !w.error);
  if (usable) select.value = usable.name;
  fillFixtures();
  status(usable ? "pick a fixture and open an instance" : "no world can be loaded");
}

function fillFixtures() {
  const world = worlds.find((w) => w.name === $("world").value);
  const fixtures = world && world.fixtures ? world.fixtures : [];
  $("fixture").replaceChildren(...fixtures.map((f) => el("option", { value: f.name, title: f.description }, f.name)));
}

async function openInstance() {
  if (socket) socket.close();
  socket = null;
  status("opening…");
  try {
    socket = await connect();
    const data = { world: $("world").value, fixture: $("fixture").value, seed: Number($("seed").value || 0), clock: $("clock").value };
    const reset = (await request({ type: "reset", data })).data.observation;
    const tools = (await request({ type: "step", data: { type: "list_tools" } })).data.observation.tools;
    renderTools(tools);
    $("result").textContent = "No call yet.";
    $("result").className = "empty";
    $("rows").replaceChildren();
    status(`${reset.world} / ${reset.fixture}, seed ${reset.seed}, clock ${reset.clock} (now ${reset.now})`);
    await refreshState();
  } catch (error) {
    status(`could not open: ${error.message}`);
  }
}

// -- tools and their forms ------------------------------------------------------------------------

function renderTools(tools) {
  const box = $("tools");
  box.className = "";
  const world = worlds.find((w) => w.name === $("world").value);
  const writes = new Set((world ? world.tools : []).filter((t) => t.writes).map((t) => t.name));
  box.replaceChildren(...tools.map((tool) => el("button", {
    type: "button", "data-tool": tool.name, title: tool.description, class: writes.has(tool.name) ? "writes" : "",
    onclick: (event) => {
      for (const b of box.querySelectorAll("button")) b.classList.remove("chosen");
      event.currentTarget.classList.add("chosen");
      renderForm(tool);
    },
  }, tool.name)));
}

function resolve(schema, root) {
  if (schema && schema.$ref) return resolve(root.$defs[schema.$ref.split("/").pop()], root);
  if (schema && schema.anyOf) {
    const choices = schema.anyOf.filter((s) => s.type !== "null");
    if (choices.length === 1) return { ...resolve(choices[0], root), description: schema.description, default: schema.default };
  }
  return schema || {};
}

function fieldFor(name, schema, required) {
  const id = `arg-${name}`;
  const hint = [schema.description, schema.default !== undefined ? `default ${show(schema.default)}` : ""].filter(Boolean).join(" · ");
  const label = el("label", { for: id }, name + (required ? " *" : ""), el("small", {}, hint));
  let input;
  const choices = schema.enum || (schema.const !== undefined ? [schema.const] : null);
  if (choices) {
    input = el("select", { id, "data-kind": "json" }, ...(required ? [] : [el("option", { value: "" }, "")]),
      ...choices.map((c) => el("option", { value: JSON.stringify(c) }, show(c))));
  } else if (schema.type === "boolean") {
    input = el("select", { id, "data-kind": "json" }, ...(required ? [] : [el("option", { value: "" }, "")]),
      el("option", { value: "true" }, "true"), el("option", { value: "false" }, "false"));
  } else if (schema.type === "integer" || schema.type === "number") {
    input = el("input", { id, type: "number", step: schema.type === "integer" ? "1" : "any", "data-kind": "number" });
  } else if (schema.type === "string") {
    input = el("input", { id, type: "text", "data-kind": "string" });
  } else {
    input = el("textarea", { id, "data-kind": "json", placeholder: "JSON" });
  }
  if (schema.default !== undefined && schema.default !== null) {
    input.value = input.dataset.kind === "json" ? JSON.stringify(schema.default) : String(schema.default);
  }
  input.dataset.name = name;
  input.dataset.required = required ? "1" : "";
  return [label, input];
}

function renderForm(tool) {
  chosenTool = tool;
  const schema = tool.input_schema || {};
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).flatMap(([name, prop]) =>
    fieldFor(name, resolve(prop, schema), required.has(name)));
  $("form").replaceChildren(
    el("p", {}, tool.description),
    ...fields,
    el("p", {}, el("button", { id: "call", type: "submit" }, `Call ${tool.name}`)),
  );
}

function collectArguments() {
  const args = {};
  for (const input of $("form").querySelectorAll("[data-name]")) {
    const { name, kind, required } = input.dataset;
    const text = input.value.trim();
    if (text === "") {
      if (required) throw new Error(`${name} is required`);
      continue;
    }
    if (kind === "number") args[name] = Number(text);
    else if (kind === "json") {
      try {
        args[name] = JSON.parse(text);
      } catch {
        throw new Error(`${name} must be JSON, e.g. ["a", "b"] or {"key": 1}`);
      }
    } else args[name] = input.value;
  }
  return args;
}

async function callTool(event) {
  event.preventDefault();
  if (!chosenTool) return;
  const result = $("result");
  try {
    const args = collectArguments();
    const reply = await request({ type: "step", data: { type: "call_tool", tool_name: chosenTool.name, arguments: args } });
    const observation = reply.data.observation;
    result.textContent = JSON.stringify(observation.result ? observation.result.data : observation.error, null, 2);
    result.className = observation.error ? "failed" : "";
    await refreshState();
  } catch (error) {
    result.textContent = error.message;
    result.className = "failed";
  }
}

// -- state: calls, diff and tables ----------------------------------------------------------------

async function refreshState() {
  const state = (await request({ type: "state" })).data;
  $("calls").replaceChildren(...state.calls.map((call) => el("li", { class: call.ok ? "" : "failed" },
    `${call.tool}(${show(call.arguments)}) → ${call.ok ? "ok" : call.error.type}, ${call.changes.length} row change(s)`)));
  renderDiff(state.diff.tables || {});
  const counts = Object.values(state.diff_summary || {}).reduce((n, t) => n + t.inserted + t.updated + t.deleted, 0);
  $("diff-count").textContent = counts ? `(${counts} row${counts === 1 ? "" : "s"})` : "";
  $("tables").replaceChildren(el("table", {},
    el("tr", {}, el("th", {}, "table"), el("th", {}, "rows")),
    ...Object.entries(state.row_counts).map(([table, n]) => el("tr", {},
      el("td", {}, el("span", { class: "table-link", "data-table": table, onclick: () => showRows(table) }, table)),
      el("td", {}, n)))));
}

function rowsTable(rows, kind) {
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  return el("table", {}, el("tr", {}, ...columns.map((c) => el("th", {}, c))),
    ...rows.map((row) => el("tr", { class: kind }, ...columns.map((c) => el("td", {}, show(row[c]))))));
}

function renderDiff(tables) {
  const box = $("diff");
  const names = Object.keys(tables);
  if (!names.length) {
    box.className = "empty";
    box.textContent = "No changes.";
    return;
  }
  box.className = "";
  box.replaceChildren(...names.flatMap((name) => {
    const t = tables[name];
    const parts = [el("h3", { "data-diff-table": name }, `${name}: +${t.inserted.length} ~${t.updated.length} −${t.deleted.length}`)];
    if (t.inserted.length) parts.push(rowsTable(t.inserted, "inserted"));
    if (t.updated.length) {
      parts.push(el("table", {}, el("tr", {}, el("th", {}, "key"), el("th", {}, "changed")),
        ...t.updated.map((u) => el("tr", { class: "updated" }, el("td", {}, show(u.key)),
          el("td", {}, ...Object.keys(u.after).flatMap((c) => [
            `${c}: `, el("span", { class: "before" }, show(u.before[c])), " → ", el("span", { class: "after" }, show(u.after[c])), " "]))))));
    }
    if (t.deleted.length) parts.push(rowsTable(t.deleted, "deleted"));
    return parts;
  }));
}

async function showRows(table) {
  try {
    const data = (await request({ type: "rows", data: { table, limit: 50 } })).data;
    $("rows").replaceChildren(el("h3", {}, `${table} (first ${data.rows.length} rows)`),
      data.rows.length ? rowsTable(data.rows, "") : el("p", { class: "empty" }, "empty"));
  } catch (error) {
    $("rows").textContent = error.message;
  }
}

$("world").addEventListener("change", fillFixtures);
$("open").addEventListener("click", openInstance);
$("form").addEventListener("submit", callTool);
loadWorlds().catch((error) => status(`could not list worlds: ${error.message}`));
