// The phone's page of sessiond: the sessions, live; one session's screen;
// answer a waiting agent, extend, stop. It talks to the API of the web
// listener it came from, with the token kept in this browser's storage,
// and builds every element with textContent: nothing a session prints is
// ever read as HTML.
"use strict";

const tokenKey = "sessiond-token";
const $ = (id) => document.getElementById(id);
let timer = null;
let current = null; // the session shown
let readOnly = false; // the token may only read: nothing to press

function token() { return localStorage.getItem(tokenKey) || ""; }

function setStatus(text, bad) {
  const s = $("status");
  s.textContent = text;
  s.className = bad ? "bad" : "";
}

async function api(path, opts = {}) {
  const headers = { "Authorization": "Bearer " + token() };
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  let resp;
  try {
    resp = await fetch(path, { method: opts.method || "GET", headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body), cache: "no-store" });
  } catch (e) {
    setStatus("sessiond is unreachable", true);
    throw e;
  }
  if (resp.status === 401) {
    localStorage.removeItem(tokenKey);
    show("login");
    setStatus("sign in", true);
    throw new Error("unauthorized");
  }
  if (!resp.ok) {
    let msg = resp.statusText;
    try { msg = (await resp.json()).error || msg; } catch (e) { /* not JSON */ }
    setStatus(msg, true);
    throw new Error(msg);
  }
  readOnly = resp.headers.get("Sessiond-Token-Scope") === "read";
  setStatus("connected · " + new Date().toLocaleTimeString() + (readOnly ? " · read only" : ""), false);
  if (resp.status === 204) return null;
  const type = resp.headers.get("Content-Type") || "";
  return type.includes("json") ? resp.json() : resp.text();
}

function show(id) {
  for (const s of ["login", "list", "detail"]) $(s).hidden = s !== id;
}

function left(deadline) {
  const ms = Date.parse(deadline) - Date.now();
  if (!(ms > 0) || deadline.startsWith("0001")) return "";
  const m = Math.floor(ms / 60000);
  return m >= 60 ? Math.floor(m / 60) + "h" + String(m % 60).padStart(2, "0") + " left" : m + "m left";
}

function agentWords(s) {
  const a = s.agent;
  if (!a || !a.state) return "";
  if (a.state === "waiting" && a.waiting_reason) return "waiting: " + a.waiting_reason;
  if (a.state === "limited" && a.limit) return "limited (" + a.limit.class + (a.limit.resets_at ? ", resets " + new Date(a.limit.resets_at).toLocaleTimeString() : "") + ")";
  if (a.retrying) return "retrying (" + a.retrying.reason + ")";
  return a.state;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

async function refreshList() {
  const list = await api("/v1/sessions");
  const ul = $("sessions");
  ul.replaceChildren();
  for (const s of list) {
    const li = el("li");
    const a = el("a");
    a.href = "#/s/" + encodeURIComponent(s.id);
    a.id = "s-" + s.id;
    a.append(el("div", "name", s.name + " · " + s.id));
    const agent = agentWords(s);
    const meta = el("div", "meta " + (s.agent ? s.agent.state : ""), [s.state, agent, left(s.deadline)].filter(Boolean).join(" · "));
    a.append(meta, el("div", "meta", s.project_dir));
    li.append(a);
    ul.append(li);
  }
  $("empty").hidden = list.length > 0;
}

async function refreshDetail(id) {
  const s = await api("/v1/sessions/" + encodeURIComponent(id));
  current = s;
  $("d-name").textContent = s.name + " · " + s.id;
  $("d-state").textContent = [s.state + (s.end_reason ? " (" + s.end_reason + ")" : ""), agentWords(s), left(s.deadline)].filter(Boolean).join(" · ");
  const waiting = s.agent && s.agent.state === "waiting";
  $("d-wait").hidden = !waiting;
  $("d-wait").textContent = waiting ? "Waiting for " + (s.agent.waiting_reason || "input") : "";
  $("choices").hidden = readOnly || !(waiting && (s.agent.waiting_reason || "").startsWith("permission"));
  const live = ["queued", "starting", "running", "warned", "stopping"].includes(s.state);
  $("actions").hidden = readOnly;
  for (const b of [$("extend"), $("stop")]) b.disabled = !live;
  $("send-form").hidden = readOnly || !s.tty || !live;
  let text = "";
  if (s.tty) {
    const scr = await api("/v1/sessions/" + encodeURIComponent(id) + "/screen");
    text = scr.lines.join("\n").replace(/\s+$/, "");
  } else {
    text = await api("/v1/sessions/" + encodeURIComponent(id) + "/logs?tail=40");
  }
  const pre = $("screen");
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  pre.textContent = text;
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

async function tick() {
  clearTimeout(timer);
  const route = location.hash.replace(/^#/, "") || "/";
  try {
    if (!token()) { show("login"); return; }
    const m = route.match(/^\/s\/([^/]+)$/);
    if (m) {
      show("detail");
      await refreshDetail(decodeURIComponent(m[1]));
    } else {
      show("list");
      await refreshList();
    }
  } catch (e) {
    // Said in the status line; try again.
  }
  timer = setTimeout(tick, 1500);
}

async function send(text, enter) {
  if (!current) return;
  await api("/v1/sessions/" + encodeURIComponent(current.id) + "/send", { method: "POST", body: { text, enter } });
  tick();
}

$("login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  localStorage.setItem(tokenKey, $("token").value.trim());
  $("token").value = "";
  tick();
});
$("send-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const t = $("send-text");
  send(t.value, true).then(() => { t.value = ""; }, () => {});
});
for (const b of document.querySelectorAll("[data-send]")) {
  b.addEventListener("click", () => send(b.dataset.send, false).catch(() => {}));
}
$("extend").addEventListener("click", () => {
  if (current) api("/v1/sessions/" + encodeURIComponent(current.id) + "/extend", { method: "POST", body: { by: "30m" } }).then(tick, () => {});
});
// Stop asks twice: the first press arms it for a few seconds.
let stopArmed = 0;
$("stop").addEventListener("click", () => {
  const b = $("stop");
  if (!current) return;
  if (Date.now() - stopArmed > 4000) {
    stopArmed = Date.now();
    b.textContent = "Stop " + current.name + "? Press again";
    setTimeout(() => { b.textContent = "Stop"; }, 4000);
    return;
  }
  stopArmed = 0;
  b.textContent = "Stopping…";
  api("/v1/sessions/" + encodeURIComponent(current.id) + "/stop", { method: "POST", body: {} }).then(() => { b.textContent = "Stop"; tick(); }, () => { b.textContent = "Stop"; });
});
window.addEventListener("hashchange", tick);
tick();
