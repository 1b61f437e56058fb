// The /ui/ page: plain browser JavaScript, no build step, no dependency.
// Every read goes to the API's own routes with the key in the Authorization header; the key is kept
// in this tab's sessionStorage only (never in a URL, a cookie or a log line). Stored text is
// inserted with textContent only, never as markup.
"use strict";

const KEY_SLOT = "simplemem.key";
const TENANT_SLOT = "simplemem.tenant";
const PAGE = 50;
const state = { who: null, offset: 0, next: null, filters: {}, open: null };

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "onclick") node.addEventListener("click", value);
    else if (name === "onkeydown") node.addEventListener("keydown", value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function showError(text) {
  $("error").textContent = text;
  $("error").hidden = !text;
}

function notice(text) {
  $("notice").textContent = text;
  $("notice").hidden = !text;
}

class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

async function api(method, path, params, body) {
  const key = sessionStorage.getItem(KEY_SLOT);
  const url = new URL(path, window.location.origin);
  for (const [name, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, value);
  }
  const headers = { Authorization: "Bearer " + key };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
    referrerPolicy: "no-referrer",
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    let detail = typeof data.detail === "string" ? data.detail : "the service answered " + response.status;
    if (response.status === 401) detail = "That key was not accepted (wrong or revoked): " + detail;
    throw new ApiError(response.status, detail);
  }
  return data;
}

function tenantParams(extra) {
  const params = Object.assign({}, extra || {});
  if (state.who && state.who.admin) params.tenant_id = $("tenant").value;
  return params;
}

async function guarded(work) {
  showError("");
  try {
    await work();
  } catch (err) {
    showError(err instanceof ApiError ? err.message : "The page could not reach the service: " + err.message);
    if (err instanceof ApiError && err.status === 401) signOut(false);
  }
}

// --- sign-in -------------------------------------------------------------------------------------
async function signIn(event) {
  if (event) event.preventDefault();
  const typed = $("key").value.trim();
  if (typed) sessionStorage.setItem(KEY_SLOT, typed);
  $("key").value = "";
  if (!sessionStorage.getItem(KEY_SLOT)) return showError("Type an API key first.");
  await guarded(async () => {
    const who = await api("GET", "/v1/browse/whoami");
    state.who = who;
    $("sign-in-form").hidden = true;
    $("who").hidden = false;
    $("main").hidden = false;
    $("tenant-pick").hidden = !who.admin;
    $("tenant-forget").hidden = !who.admin;
    if (who.admin) {
      const pick = $("tenant");
      pick.replaceChildren(...who.tenants.map((t) => el("option", { value: t }, t)));
      const kept = sessionStorage.getItem(TENANT_SLOT);
      if (kept && who.tenants.includes(kept)) pick.value = kept;
      $("who-text").textContent = "admin (" + who.mode + " mode)";
      if (!who.tenants.length) return notice("No tenant has memories or keys yet.");
    } else {
      $("who-text").textContent = "tenant " + who.tenant_id + " (" + who.mode + " mode)";
    }
    await refreshAll();
  });
}

function signOut(clearError) {
  sessionStorage.removeItem(KEY_SLOT);
  state.who = null;
  $("sign-in-form").hidden = false;
  $("who").hidden = true;
  $("main").hidden = true;
  $("rows").replaceChildren();
  $("provenance").hidden = true;
  if (clearError !== false) showError("");
}

async function refreshAll() {
  state.offset = 0;
  closeProvenance();
  await loadPage();
  // the stores count by status, kind and session themselves (indexed fields): no memory is read
  return loadCounts();
}

// --- memories ------------------------------------------------------------------------------------
function readFilters() {
  return {
    q: $("search").value.trim(),
    session: $("f-session").value.trim(),
    kind: $("f-kind").value.trim(),
    state: $("f-state").value,
    since: $("f-since").value,
    until: $("f-until").value,
  };
}

async function loadPage() {
  $("page-info").textContent = "reading…";
  const page = await api("GET", "/v1/browse", tenantParams(Object.assign({ offset: state.offset, limit: PAGE }, state.filters)));
  state.next = page.next_offset;
  const rows = page.memories.map((m) =>
    el("tr", { "data-testid": "memory-row", "data-memory-id": m.id, tabindex: 0, onclick: () => guarded(() => openMemory(m.id)), onkeydown: (e) => { if (e.key === "Enter") guarded(() => openMemory(m.id)); } },
      el("td", { class: "text" }, m.text),
      el("td", {}, m.kind),
      el("td", {}, m.event_time || m.stated_at.slice(0, 10)),
      el("td", { class: "mono" }, m.session_id || ""),
      el("td", { class: "state-" + m.state }, m.state)));
  $("rows").replaceChildren(...rows);
  if (!rows.length) $("rows").append(el("tr", {}, el("td", { colspan: 5 }, "No memory matches.")));
  const last = state.offset + page.memories.length;
  const of = page.total === null ? "" : " of " + page.total;
  $("page-info").textContent = page.memories.length ? `${state.offset + 1}–${last}${of}` : "";
  $("prev").disabled = state.offset === 0;
  $("next").disabled = page.next_offset === null;
  return page;
}

async function loadCounts() {
  $("counts").textContent = "counting…";
  try {
    const c = await api("GET", "/v1/browse/counts", tenantParams(state.filters));
    const parts = Object.entries(c.by_state).map(([k, v]) => `${v} ${k}`);
    const kinds = Object.entries(c.by_kind).map(([k, v]) => `${v} ${k}`);
    $("counts").textContent = `${c.matching} matching of ${c.total} memories` +
      (parts.length ? " · " + parts.join(", ") : "") + (kinds.length ? " · " + kinds.join(", ") : "");
    $("sessions").replaceChildren(...Object.keys(c.sessions).filter((s) => s).map((s) => el("option", { value: s })));
    const known = new Set(["fact", "abstract", "code", ...Object.keys(c.by_kind)]);
    $("kinds").replaceChildren(...[...known].map((k) => el("option", { value: k })));
  } catch (err) {
    $("counts").textContent = "";
    showError(err.message);
  }
}

function closeProvenance() {
  state.open = null;
  $("provenance").hidden = true;
  $("provenance").replaceChildren();
}

function rowList(title, rows) {
  if (!rows || !rows.length) return null;
  return el("div", {},
    el("h4", {}, title),
    el("ul", {}, ...rows.map((m) => el("li", {},
      el("a", { href: "#", "data-memory-id": m.id, onclick: (e) => { e.preventDefault(); guarded(() => openMemory(m.id)); } }, m.text),
      " ", el("span", { class: "meta" }, `${m.kind}, ${m.state}`)))));
}

async function openMemory(id) {
  const p = await api("GET", "/v1/browse/memories/" + encodeURIComponent(id), tenantParams());
  state.open = p;
  const m = p.memory;
  const sources = p.sources.map((s) =>
    el("li", { "data-testid": "source-message", "data-message-id": s.message_id },
      el("div", { class: "meta" }, `${s.speaker || "?"} · ${s.stated_at || "time unknown"} · session ${s.session_id || "?"} · message ${s.message_id}`),
      el("div", { class: "message" }, s.text === null ? "(nothing of it is kept but this memory)" : s.text),
      s.verbatim ? null : el("div", { class: "meta" }, "(its memories' words: the store keeps no other copy of this message)"),
      s.answering ? el("div", { class: "meta" }, "answering: " + s.answering) : null,
      el("button", { type: "button", class: "danger", "data-testid": "forget-message", onclick: () => askForget({ message_id: s.message_id }) }, "Forget this message…")));
  const panel = $("provenance");
  panel.replaceChildren(...[
    el("button", { type: "button", class: "close", onclick: closeProvenance }, "×"),
    el("h3", {}, "Memory"),
    el("p", { class: "memory-text" }, m.text),
    el("p", { class: "meta" }, `${m.kind} · ${m.state} · event ${m.event_time || "—"} · stated ${m.stated_at} · by ${m.speaker || "?"} · id ${m.id}`),
    el("h4", {}, "Source messages (scrubbed)"),
    el("ul", { class: "sources" }, ...sources),
    rowList("Also derived from the same message", p.siblings),
    p.superseded_by ? rowList("Superseded by", [p.superseded_by]) : null,
    rowList("Supersedes", p.supersedes),
    p.archived_in ? rowList("Archived in the abstract", [p.archived_in]) : null,
    rowList("Summarises", p.summarises),
    m.session_id ? el("p", {}, el("button", { type: "button", class: "danger", "data-testid": "forget-session", onclick: () => askForget({ session_id: m.session_id }) }, "Forget the whole session " + m.session_id + "…")) : null,
  ].filter((part) => part !== null));
  panel.hidden = false;
}

// --- forget --------------------------------------------------------------------------------------
let pendingForget = null;

function askForget(what) {
  pendingForget = what;
  let text;
  if (what.message_id) {
    text = `Forget message ${what.message_id}? Every memory derived from it goes from every store, ` +
      "memories that quote it lose the quote, and an abstract built on it is recomputed. This cannot be undone.";
  } else if (what.session_id) {
    text = `Forget the whole session ${what.session_id}? Every message its memories cite, and its turns ` +
      "not yet remembered, go with everything derived from them. This cannot be undone.";
  } else {
    text = `Forget the whole tenant ${what.tenant}? Every memory and message of it goes, and its keys are revoked. This cannot be undone.`;
  }
  $("confirm-text").textContent = text;
  $("confirm-dialog").showModal();
}

async function confirmForget() {
  $("confirm-dialog").close();
  const what = pendingForget;
  pendingForget = null;
  if (!what) return;
  await guarded(async () => {
    if (what.tenant) {
      const r = await api("DELETE", "/v1/tenants/" + encodeURIComponent(what.tenant));
      await signIn();
      return notice(`Tenant ${what.tenant}: ${r.detail.routed}; ${r.detail.revoked_keys} keys revoked.`);
    }
    const body = Object.assign({}, what);
    if (state.who.admin) body.tenant_id = $("tenant").value;
    const r = await api("POST", "/v1/browse/forget", undefined, body);
    const record = r.record || (await waitForRecord(r.requested_at));
    notice(record
      ? `Forgotten: ${r.message_ids.length} message(s); ${record.units_deleted} memories removed, ` +
        `${record.units_rewritten} rewritten, ${record.buffer_turns_removed} pending turns removed (tombstones kept).`
      : `Sent to the workers (${r.routed}); the deletion log will show it when it is done.`);
    await refreshAll();
    loadDeletions();
  });
}

async function waitForRecord(requestedAt) {
  const want = Date.parse(requestedAt);
  for (let i = 0; i < 60; i++) {
    const records = await api("GET", "/v1/browse/deletions", tenantParams());
    const done = records.find((r) => Date.parse(r.request.requested_at) === want);
    if (done) return done;
    await new Promise((ok) => setTimeout(ok, 1000));
  }
  return null;
}

// --- ask -----------------------------------------------------------------------------------------
async function ask(event) {
  event.preventDefault();
  const query = $("ask-input").value.trim();
  if (!query) return showError("Type a question first.");
  await guarded(async () => {
    const body = { query };
    const asOf = $("ask-as-of").value;
    if (asOf) body.as_of = new Date(asOf).toISOString();
    if (state.who.admin) body.tenant_id = $("tenant").value;
    const a = await api("POST", "/v1/browse/ask", undefined, body);
    const r = a.result;
    $("answer-meta").textContent = `${r.context_tokens} of ${a.budget_tokens} tokens · k = ${r.k} ` +
      `(complexity ${r.complexity}) · ${r.memories.length} memories · semantic weight ${a.semantic_weight}` +
      (a.names.length ? " · persons: " + a.names.join(", ") : "") +
      (a.date_range ? ` · dates ${a.date_range[0]} to ${a.date_range[1]}` : "");
    $("context").textContent = r.context || "(no memory matched: the agent gets an empty context)";
    const why = new Map(a.reasons.map((x) => [x.id, x]));
    $("reasons").replaceChildren(...r.memories.map((m) => {
      const x = why.get(m.id) || {};
      const symbolic = [...(x.symbolic || []), ...(x.sibling ? ["came with its message's chosen memory"] : [])];
      return el("tr", { "data-testid": "reason", "data-memory-id": m.id },
        el("td", {}, el("a", { href: "#", onclick: (e) => { e.preventDefault(); showTab("memories"); guarded(() => openMemory(m.id)); } }, m.text)),
        el("td", {}, m.score),
        el("td", {}, `${x.semantic ?? "—"}` + (x.cosine === null || x.cosine === undefined ? "" : ` (cos ${x.cosine})`)),
        el("td", {}, `${x.lexical ?? "—"}` + (x.bm25_rank ? ` (#${x.bm25_rank})` : "")),
        el("td", {}, symbolic.join("; ") || "—"),
        el("td", { class: "mono" }, m.source_ids.join(", ")));
    }));
    $("answer").hidden = false;
  });
}

// --- activity ------------------------------------------------------------------------------------
async function loadDeletions() {
  await guarded(async () => {
    const records = await api("GET", "/v1/browse/deletions", tenantParams());
    $("deletions").replaceChildren(...records.map((r) => el("tr", {},
      el("td", {}, r.request.requested_at),
      el("td", {}, r.request.whole_tenant ? "whole tenant" : r.request.message_ids.length + " message(s)"),
      el("td", {}, r.units_deleted), el("td", {}, r.units_rewritten), el("td", {}, r.buffer_turns_removed),
      el("td", {}, r.completed_at))));
    if (!records.length) $("deletions").append(el("tr", {}, el("td", { colspan: 6 }, "Nothing forgotten yet.")));
  });
}

// The tenant's ingestion accounting (the service counts it per tenant) and its time to memory.
function ingestionView(i) {
  const seconds = (v) => (v === null ? "–" : `${v} s`);
  const ttm = i.time_to_memory;
  const items = [
    ["accepted", i.accepted], ["indexed", i.indexed], ["filtered", i.filtered], ["failed", i.failed],
    ["PII scrubbed", i.pii_scrubbed], ["not decided yet", i.undecided],
    ["time to memory p50", seconds(ttm.p50_seconds)], ["time to memory p95", seconds(ttm.p95_seconds)],
    ["memories timed", ttm.memories],
  ];
  return [el("h4", {}, "ingestion (this tenant)"),
    el("dl", { "data-testid": "ingestion" }, ...items.flatMap(([k, v]) => [el("dt", {}, k), el("dd", { "data-count": k }, String(v))]))];
}

async function loadActivity() {
  await guarded(async () => {
    const a = await api("GET", "/v1/browse/activity", tenantParams());
    const lines = [el("h3", {}, "Activity"), el("p", {}, `mode ${a.mode}`), ...ingestionView(a.ingestion)];
    for (const [title, values] of Object.entries(a.sections)) {
      lines.push(el("h4", {}, title), el("dl", {}, ...Object.entries(values).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
    }
    $("activity").replaceChildren(...lines);
  });
  await loadDeletions();
}

function showTab(name) {
  for (const tab of document.querySelectorAll(".tab")) tab.setAttribute("aria-selected", String(tab.dataset.tab === name));
  for (const section of ["memories", "ask", "activity"]) $("tab-" + section).hidden = section !== name;
  if (name === "activity") loadActivity();
}

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", () => signOut());
  $("tenant").addEventListener("change", () => {
    sessionStorage.setItem(TENANT_SLOT, $("tenant").value);
    guarded(refreshAll);
  });
  $("filters").addEventListener("submit", (e) => {
    e.preventDefault();
    state.filters = readFilters();
    guarded(refreshAll);
  });
  $("clear-filters").addEventListener("click", () => {
    $("filters").reset();
    state.filters = {};
    guarded(refreshAll);
  });
  $("prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE); guarded(loadPage); });
  $("next").addEventListener("click", () => { if (state.next !== null) { state.offset = state.next; guarded(loadPage); } });
  $("ask-form").addEventListener("submit", ask);
  $("confirm").addEventListener("click", confirmForget);
  $("cancel").addEventListener("click", () => { pendingForget = null; $("confirm-dialog").close(); });
  $("forget-tenant").addEventListener("click", () => askForget({ tenant: $("tenant").value }));
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => showTab(tab.dataset.tab));
  if (sessionStorage.getItem(KEY_SLOT)) signIn();
});
