/* tether dashboard: what every page shares.
 * The API token lives in this browser only (localStorage, or sessionStorage when the user
 * chose not to stay signed in) and is sent as a Bearer token with every API request.
 * Pages render with DOM nodes and textContent, never innerHTML, so data cannot inject markup. */
"use strict";

(function () {
  const T = (window.tether = {});
  const body = document.body;
  T.config = JSON.parse(body.dataset.config || "{}");
  const KEY = "tether.token";

  /* ---- token ------------------------------------------------------------------------- */
  T.token = {
    get() {
      return sessionStorage.getItem(KEY) || localStorage.getItem(KEY) || "";
    },
    set(value, remember) {
      this.clear();
      (remember ? localStorage : sessionStorage).setItem(KEY, value);
    },
    clear() {
      sessionStorage.removeItem(KEY);
      localStorage.removeItem(KEY);
    },
  };

  T.signIn = function () {
    const next = location.pathname + location.search;
    location.assign("/login" + (next && next !== "/login" ? "?next=" + encodeURIComponent(next) : ""));
  };

  /* ---- API ----------------------------------------------------------------------------- */
  class ApiError extends Error {
    constructor(status, problem) {
      const text = (problem && (problem.detail || problem.title)) || "HTTP " + status;
      super(text);
      this.status = status;
      this.problem = problem || {};
    }
  }
  T.ApiError = ApiError;

  T.url = function (path, query) {
    const url = new URL(T.config.api + path, location.origin);
    for (const [k, v] of Object.entries(query || {})) {
      if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, v);
    }
    return url.pathname + url.search;
  };

  /** A fresh random key for an Idempotency-Key header (crypto.getRandomValues works on plain
   *  http too, where crypto.randomUUID does not). */
  T.newKey = function (prefix) {
    const bytes = crypto.getRandomValues(new Uint8Array(12));
    return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  };

  /** Call the REST API with the stored token. Resolves to the parsed JSON body (or null);
   *  rejects with ApiError carrying the problem document. A 401 sends the user to sign in. */
  T.api = async function (method, path, opts) {
    opts = opts || {};
    const headers = Object.assign({ Accept: "application/json, application/problem+json" },
      opts.headers);
    const token = opts.token !== undefined ? opts.token : T.token.get();
    if (token) headers.Authorization = "Bearer " + token;
    const init = { method, headers, cache: "no-store" };
    if (opts.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(opts.body);
    }
    let resp;
    try {
      resp = await fetch(T.url(path, opts.query), init);
    } catch (err) {
      throw new ApiError(0, { title: "Network error", detail: "The server did not answer." });
    }
    const text = await resp.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch (err) { data = { detail: text.slice(0, 200) }; }
    }
    if (resp.status === 401 && !opts.noRedirect) {
      T.token.clear();
      T.signIn();
      throw new ApiError(401, data);
    }
    if (!resp.ok) throw new ApiError(resp.status, data);
    return data;
  };

  /** The rows of a list response, whatever envelope the API uses. */
  T.items = function (data) {
    if (Array.isArray(data)) return data;
    if (!data) return [];
    return data.items || data.data || data.jobs || data.queues || data.workers ||
      data.events || data.attempts || data.entries || data.rows || [];
  };

  /** The cursor for the next (older) page of a list response, or null. */
  T.nextCursor = function (data) {
    if (!data || Array.isArray(data)) return null;
    return data.next_cursor || data.cursor || data.next || null;
  };

  /* ---- DOM ----------------------------------------------------------------------------- */
  T.el = function (tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k === "dataset") Object.assign(node.dataset, v);
      else if (k === "style") node.style.cssText = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  };

  T.fill = function (node, ...children) {
    node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
  };

  T.emptyRow = function (cols, text) {
    return T.el("tr", { class: "empty" }, T.el("td", { colspan: cols, text }));
  };

  T.badge = function (state) {
    return T.el("span", { class: "badge badge-" + state, dataset: { state } }, state.replaceAll("_", " "));
  };

  /* ---- formatting ---------------------------------------------------------------------- */
  const num = (v) => (v === null || v === undefined || v === "" ? null : Number(v));
  /** Milliseconds since the epoch from an ISO string or unix seconds. */
  const ms = (t) => (typeof t === "number" ? t * 1000 : Date.parse(t));
  T.ms = ms;
  T.fmt = {
    int(v) {
      const n = num(v);
      return n === null ? "—" : n.toLocaleString("en-US");
    },
    /** Dollars with at least cents and at least four significant digits, so a small amount
     *  (a $0.00001 limit) never reads as $0.00. */
    usd(v) {
      const n = num(v);
      if (n === null || !isFinite(n)) return "—";
      if (n === 0) return "$0";
      const abs = Math.abs(n);
      const digits = Math.min(20, Math.max(2, 3 - Math.floor(Math.log10(abs))));
      return (n < 0 ? "-$" : "$") + abs.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: digits });
    },
    bytes(v) {
      const n = num(v);
      if (n === null) return "—";
      const units = ["B", "KB", "MB", "GB"];
      let i = 0, x = n;
      while (x >= 1024 && i < units.length - 1) { x /= 1024; i++; }
      return (i ? x.toFixed(1) : x) + " " + units[i];
    },
    duration(seconds) {
      if (seconds === null || seconds === undefined || isNaN(seconds)) return "—";
      const s = Math.max(0, Math.round(seconds));
      if (s < 60) return s + "s";
      if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
      if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
      return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
    },
    age(iso) {
      if (!iso) return "—";
      return T.fmt.duration((Date.now() - ms(iso)) / 1000);
    },
    until(iso) {
      if (!iso) return "—";
      const s = (ms(iso) - Date.now()) / 1000;
      return s >= 0 ? "in " + T.fmt.duration(s) : T.fmt.duration(-s) + " ago";
    },
    time(iso) {
      if (!iso) return "—";
      const d = new Date(ms(iso));
      return d.toLocaleString("en-GB", { year: "numeric", month: "short", day: "2-digit",
        hour: "2-digit", minute: "2-digit", second: "2-digit" });
    },
    short(iso) {
      if (!iso) return "—";
      const d = new Date(ms(iso));
      const today = new Date().toDateString() === d.toDateString();
      return today ? d.toLocaleTimeString("en-GB")
        : d.toLocaleString("en-GB", { month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit" });
    },
    clock(iso) {
      if (!iso) return "—";
      return new Date(ms(iso)).toLocaleTimeString("en-GB");
    },
    json(v) {
      return v === undefined || v === null ? "—" : JSON.stringify(v, null, 2);
    },
  };

  /** A <time> element showing an age, with the exact timestamp as its tooltip. */
  T.ago = function (iso, suffix) {
    if (!iso) return T.el("span", { class: "muted" }, "—");
    return T.el("time", { datetime: new Date(ms(iso)).toISOString(), title: T.fmt.time(iso) }, T.fmt.age(iso) + (suffix || ""));
  };

  /** A row of headline numbers: [[label, value, tone?], ...]; tone is "warn" or "bad". */
  T.stats = function (node, tiles) {
    T.fill(node, tiles.map(([label, value, tone]) => T.el("div", { class: "stat" + (tone ? " stat-" + tone : "") },
      T.el("div", { class: "stat-value" }, String(value)), T.el("div", { class: "stat-label" }, label))));
  };

  /* ---- spend vs budget ----------------------------------------------------------------- */
  /** {spent, reserved, limit} for one budget dimension of a job's budget document. */
  const DIMENSIONS = {
    cost: { label: "Cost", limit: "max_cost_usd", spent: "spent_usd", reserved: "reserved_usd", fmt: "usd" },
    calls: { label: "Calls", limit: "max_calls", spent: "calls", reserved: "reserved_calls", fmt: "int" },
    input: { label: "Input tokens", limit: "max_input_tokens", spent: "input_tokens", reserved: "reserved_input_tokens", fmt: "int" },
    output: { label: "Output tokens", limit: "max_output_tokens", spent: "output_tokens", reserved: "reserved_output_tokens", fmt: "int" },
  };
  T.DIMENSIONS = DIMENSIONS;

  T.measure = function (budget, dim) {
    const d = DIMENSIONS[dim];
    const limits = (budget && budget.limits) || {};
    const used = (budget && budget.used) || {};
    return {
      label: d.label, fmt: T.fmt[d.fmt],
      spent: num(used[d.spent]) || 0,
      reserved: num(used[d.reserved]) || 0,
      limit: num(limits[d.limit]),
    };
  };

  /** A horizontal bar: spent (solid) then reserved (hatched) against the limit. A part that
   *  is not zero is at least 2 px wide, so a small spend never looks like none. */
  T.bar = function (m, compact) {
    const pct = (x) => (m.limit ? Math.min(100, (x / m.limit) * 100) : 0);
    const spentPct = pct(m.spent);
    const reservedPct = Math.min(100 - spentPct, pct(m.reserved));
    const level = m.limit && (m.spent + m.reserved) / m.limit >= 0.9 ? " bar-hot" : "";
    const width = (x, p) => (x > 0 && m.limit ? "max(2px, " + p + "%)" : p + "%");
    return T.el("div", { class: "bar" + (compact ? " bar-compact" : "") + level,
      role: "img", "aria-label": m.label + ": " + m.fmt(m.spent) + " spent, " + m.fmt(m.reserved) +
        " reserved, limit " + (m.limit === null ? "none" : m.fmt(m.limit)) },
      T.el("span", { class: "bar-spent", style: "width:" + width(m.spent, spentPct) }),
      T.el("span", { class: "bar-reserved", style: "width:" + width(m.reserved, reservedPct) }));
  };

  /* ---- flash, confirm ----------------------------------------------------------------- */
  let flashTimer = null;
  T.flash = function (text, kind) {
    const node = document.getElementById("flash");
    if (!node) return;
    node.textContent = text;
    node.className = "flash flash-" + (kind || "ok");
    node.hidden = false;
    clearTimeout(flashTimer);
    flashTimer = setTimeout(() => { node.hidden = true; }, 5000);
  };

  /** Ask before acting. `run` is awaited while the dialog shows progress; an error stays in
   *  the dialog. Resolves to true once `run` succeeded, false if the user backed out. */
  T.confirm = function ({ title, text, extra, okLabel, danger, run }) {
    const dialog = document.getElementById("confirm-dialog");
    const form = document.getElementById("confirm-form");
    const ok = document.getElementById("confirm-ok");
    const cancel = document.getElementById("confirm-cancel");
    const error = document.getElementById("confirm-error");
    document.getElementById("confirm-title").textContent = title;
    T.fill(document.getElementById("confirm-text"), typeof text === "string" ? T.el("p", {}, text) : text);
    T.fill(document.getElementById("confirm-extra"), extra || []);
    ok.textContent = okLabel || "Confirm";
    ok.className = "btn " + (danger ? "btn-danger-solid" : "btn-primary");
    ok.disabled = false;
    error.hidden = true;
    return new Promise((resolve) => {
      let busy = false;
      const done = (value) => {
        form.removeEventListener("submit", onSubmit);
        cancel.removeEventListener("click", onCancel);
        dialog.removeEventListener("cancel", onCancel);
        if (dialog.open) dialog.close();
        resolve(value);
      };
      const onCancel = (ev) => { ev.preventDefault(); if (!busy) done(false); };
      const onSubmit = async (ev) => {
        ev.preventDefault();
        if (busy) return;
        busy = true;
        ok.disabled = true;
        error.hidden = true;
        const label = ok.textContent;
        ok.textContent = "Working…";
        try {
          await run();
          done(true);
        } catch (err) {
          error.textContent = err.message || String(err);
          error.hidden = false;
          ok.disabled = false;
          ok.textContent = label;
        } finally {
          busy = false;
        }
      };
      form.addEventListener("submit", onSubmit);
      cancel.addEventListener("click", onCancel);
      dialog.addEventListener("cancel", onCancel);
      dialog.showModal();
      ok.focus();
    });
  };

  /* ---- live updates ------------------------------------------------------------------- */
  function setLive(ok, text) {
    const live = document.getElementById("live");
    if (!live) return;
    live.classList.toggle("live-ok", ok);
    live.classList.toggle("live-bad", !ok);
    document.getElementById("live-text").textContent = text;
  }

  T.setLive = setLive;

  /** Returned by a poll tick when the page has nothing left to watch: polling ends for good. */
  T.STOP = Symbol("stop polling");

  /** Run `tick` now and every poll interval while the tab is visible; never two at once.
   *  A tick that returns T.STOP ends the polling, so a dead page sends no more requests. */
  T.poll = function (tick) {
    let running = false, timer = null, stopped = false;
    const run = async () => {
      clearTimeout(timer);
      if (stopped) return;
      if (!running && !document.hidden) {
        running = true;
        try {
          if ((await tick()) === T.STOP) {
            stopped = true;
            setLive(false, "Not updating");
            return;
          }
          setLive(true, "Live · " + new Date().toLocaleTimeString("en-GB"));
        } catch (err) {
          if (err && err.status === 401) return;
          setLive(false, err && err.status ? "Error " + err.status : "Offline, retrying");
          if (err && err.status && err.status !== 0) console.warn(err);
        } finally {
          running = false;
        }
      }
      timer = setTimeout(run, T.config.poll_ms || 2000);
    };
    document.addEventListener("visibilitychange", () => { if (!document.hidden) run(); });
    run();
    return { now: run };
  };

  /** States in which `action` is accepted, from the server's state machine. */
  T.allows = function (action, state) {
    return (T.config.actions[action] || []).includes(state);
  };

  /* ---- chrome -------------------------------------------------------------------------- */
  const signOut = document.getElementById("sign-out");
  if (signOut) {
    signOut.addEventListener("click", () => { T.token.clear(); location.assign("/login"); });
    signOut.hidden = !T.token.get();
  }
  const identity = document.getElementById("identity");
  if (identity && T.token.get()) {
    const tok = T.token.get();
    const m = /^tth_([0-9a-f]+)_/.exec(tok);
    identity.textContent = m ? "token " + m[1] : "signed in";
    identity.title = "The API token this browser uses";
  }
})();
