/* Jobs page: a live, filtered, paged table of jobs, and bulk actions over the filter. It redraws
 * when the event stream of the token's projects reports a change (polling only without one). */
"use strict";

(function () {
  const T = window.tether;
  const $ = (id) => document.getElementById(id);
  const FILTERS = ["search", "project", "state", "type", "queue", "waiting_for"];
  const BULK_PAGE = 200;
  const BULK_MAX = 10000;
  const BULK_PARALLEL = 4;
  const VERBS = { retry: "Retry", cancel: "Cancel", pause: "Pause", resume: "Resume", requeue: "Requeue" };
  const DONE = { retry: "Retried", cancel: "Cancelled", pause: "Paused", resume: "Resumed", requeue: "Requeued" };

  const view = { filters: {}, limit: 50, cursors: [null], next: null, position: null };
  const seen = { project: new Set(), type: new Set(), queue: new Set() };

  /* ---- filters <-> URL --------------------------------------------------------------- */
  for (const state of T.config.states) {
    $("f-state").append(T.el("option", { value: state }, state.replaceAll("_", " ")));
  }

  function readUrl() {
    const q = new URLSearchParams(location.search);
    for (const k of FILTERS) {
      view.filters[k] = q.get(k) || "";
      $("f-" + k).value = view.filters[k];
    }
    const limit = parseInt(q.get("limit"), 10);
    if ([25, 50, 100].includes(limit)) view.limit = limit;
    $("page-size").value = String(view.limit);
  }

  function writeUrl() {
    const q = new URLSearchParams();
    for (const k of FILTERS) if (view.filters[k]) q.set(k, view.filters[k]);
    if (view.limit !== 50) q.set("limit", view.limit);
    const qs = q.toString();
    history.replaceState(null, "", location.pathname + (qs ? "?" + qs : ""));
    sessionStorage.setItem("tether.jobs.url", location.pathname + location.search);
  }

  function query(cursor, limit) {
    const q = { limit: limit || view.limit };
    for (const k of FILTERS) if (view.filters[k]) q[k] = view.filters[k].trim();
    if (cursor) q.cursor = cursor;
    return q;
  }

  let debounce = null;
  function onFilterChange() {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      for (const k of FILTERS) view.filters[k] = $("f-" + k).value.trim();
      view.cursors = [null];
      writeUrl();
      poller.now();
    }, 250);
  }
  $("filters").addEventListener("input", onFilterChange);
  $("filters").addEventListener("change", onFilterChange);
  $("filters").addEventListener("submit", (ev) => ev.preventDefault());
  $("filters").addEventListener("reset", () => setTimeout(onFilterChange, 0));
  $("page-size").addEventListener("change", () => {
    view.limit = parseInt($("page-size").value, 10);
    view.cursors = [null];
    writeUrl();
    poller.now();
  });

  /* ---- paging ------------------------------------------------------------------------ */
  $("page-next").addEventListener("click", () => {
    if (!view.next) return;
    view.cursors.push(view.next);
    poller.now();
  });
  $("page-prev").addEventListener("click", () => {
    if (view.cursors.length > 1) view.cursors.pop();
    poller.now();
  });
  $("page-first").addEventListener("click", () => {
    view.cursors = [null];
    poller.now();
  });

  /* ---- table ------------------------------------------------------------------------- */
  function spendCell(job) {
    const cost = T.measure(job.budget, "cost");
    if (cost.limit === null) {
      const used = cost.spent + cost.reserved;
      return T.el("td", { class: "spend" }, used
        ? [T.el("span", { class: "spend-text" }, T.fmt.usd(used)), T.el("span", { class: "muted small" }, " · no limit")]
        : T.el("span", { class: "muted" }, "—"));
    }
    return T.el("td", { class: "spend" }, T.bar(cost, true),
      T.el("span", { class: "spend-text" }, T.fmt.usd(cost.spent + cost.reserved) + " / " + T.fmt.usd(cost.limit)));
  }

  function row(job) {
    const href = "/jobs/" + job.id;
    const key = job.idempotency_key;
    return T.el("tr", { class: "clickable", dataset: { href, jobId: job.id, state: job.state } },
      T.el("td", { class: "num mono" }, T.el("a", { href }, "#" + job.id)),
      T.el("td", {}, T.badge(job.state), job.unserved
        ? T.el("div", { class: "muted small unserved", title: "No live worker serves type " + job.type + (job.version ? " version " + job.version : "") + " on queue " + job.queue }, "no worker")
        : null,
        job.type_paused ? T.el("div", { class: "muted small type-paused", title: "Job type " + job.type + " is paused: no worker claims its jobs" }, "type paused") : null),
      T.el("td", {}, T.el("div", {}, job.type),
        job.version ? T.el("div", { class: "muted small type-version" }, "version " + job.version) : null,
        key ? T.el("div", { class: "muted small mono truncate", title: key }, key) : null),
      T.el("td", {}, job.project),
      T.el("td", {}, job.stage || T.el("span", { class: "muted" }, "—")),
      T.el("td", { class: "num" }, job.attempt_count + " / " + job.max_attempts),
      spendCell(job),
      T.el("td", { class: "num" }, T.ago(job.created_at)));
  }

  $("jobs-body").addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr[data-href]");
    if (!tr || ev.target.closest("a") || window.getSelection().toString()) return;
    location.assign(tr.dataset.href);
  });

  function remember(jobs) {
    for (const job of jobs) {
      for (const k of ["project", "type", "queue"]) {
        if (!seen[k].has(job[k])) {
          seen[k].add(job[k]);
          $(k + "s-list").append(T.el("option", { value: job[k] }));
        }
      }
    }
  }

  /** The current filter as a noun phrase: "failed “summarize” jobs in project “p1”". */
  function describeFilter() {
    const f = view.filters;
    const parts = [];
    if (f.state) parts.push(f.state.replaceAll("_", " "));
    parts.push(f.type ? "“" + f.type + "” jobs" : "jobs");
    if (f.project) parts.push("in project “" + f.project + "”");
    if (f.queue) parts.push((f.project ? "and" : "in") + " queue “" + f.queue + "”");
    if (f.search) parts.push("matching “" + f.search + "”");
    if (f.waiting_for === "signal") parts.push("waiting for an answer");
    return parts.join(" ");
  }

  async function refresh() {
    const cursor = view.cursors[view.cursors.length - 1];
    let data;
    try {
      data = await T.api("GET", "/jobs", { query: query(cursor) });
    } catch (err) {
      if (err.status !== 403 && err.status !== 422) throw err;
      T.fill($("jobs-body"), T.emptyRow(8, err.status === 403
        ? "Your token may not read this project (" + err.message + ")."
        : "Invalid filter: " + err.message));
      view.next = null;
      $("page-next").disabled = true;
      $("page-info").textContent = "";
      return;
    }
    const jobs = T.items(data);
    view.next = jobs.length ? T.nextCursor(data) : null;
    remember(jobs);
    if (jobs.length) T.fill($("jobs-body"), jobs.map(row));
    else T.fill($("jobs-body"), T.emptyRow(8, view.cursors.length > 1 ? "No older jobs." : "No jobs match these filters."));
    const first = (view.cursors.length - 1) * view.limit;
    $("page-info").textContent = jobs.length ? "Rows " + (first + 1) + "–" + (first + jobs.length) + ", newest first" : "";
    const filtered = FILTERS.some((k) => view.filters[k]);
    $("jobs-summary").textContent = filtered ? "Showing " + describeFilter() + "." : "Showing all jobs your token can see.";
    $("page-next").disabled = !view.next;
    $("page-prev").disabled = view.cursors.length <= 1;
    $("page-first").disabled = view.cursors.length <= 1;
  }

  /* ---- bulk actions ------------------------------------------------------------------ */
  async function everyMatchingJob() {
    const out = [];
    let cursor = null;
    do {
      const data = await T.api("GET", "/jobs", { query: query(cursor, BULK_PAGE) });
      const jobs = T.items(data);
      out.push(...jobs);
      cursor = jobs.length ? T.nextCursor(data) : null;
    } while (cursor && out.length < BULK_MAX);
    return out;
  }

  async function applyAll(action, jobs, progress) {
    const failures = [];
    let done = 0, index = 0;
    async function lane() {
      while (index < jobs.length) {
        const job = jobs[index++];
        try {
          await T.api("POST", "/jobs/" + job.id + "/" + action);
        } catch (err) {
          failures.push("#" + job.id + ": " + err.message);
        }
        done++;
        progress(done);
      }
    }
    await Promise.all(Array.from({ length: BULK_PARALLEL }, lane));
    return failures;
  }

  $("bulk-go").addEventListener("click", async () => {
    const action = $("bulk-action").value;
    if (!action) {
      T.flash("Choose a bulk action first.", "warn");
      $("bulk-action").focus();
      return;
    }
    const button = $("bulk-go");
    button.disabled = true;
    let all;
    try {
      all = await everyMatchingJob();
    } catch (err) {
      T.flash("Could not list the jobs: " + err.message, "error");
      return;
    } finally {
      button.disabled = false;
    }
    const targets = all.filter((job) => T.allows(action, job.state));
    const states = (list) => Array.from(new Set(list)).map((s) => s.replaceAll("_", " ")).join(", ");
    if (!targets.length) {
      T.flash("None of the " + all.length + " " + describeFilter() + " can be " + DONE[action].toLowerCase() +
        ": " + action + " applies to jobs that are " + states(T.config.actions[action]) + ".", "warn");
      return;
    }
    const noun = targets.length === 1 ? "job" : "jobs";
    const skipped = all.filter((job) => !T.allows(action, job.state));
    const progress = T.el("p", { class: "muted", id: "bulk-progress" });
    const text = T.el("div", {},
      T.el("p", {}, "This will " + action + " ",
        T.el("strong", { id: "bulk-count" }, skipped.length ? String(targets.length) : (targets.length > 1 ? "all " : "") + targets.length),
        skipped.length ? " of the " + all.length + " " + describeFilter() + "." : " " + describeFilter() + "."),
      skipped.length
        ? T.el("p", { class: "muted" }, "The other " + skipped.length + " " + (skipped.length === 1 ? "is" : "are") + " " +
          states(skipped.map((j) => j.state)) + ", where " + action + " does not apply; they are left alone.")
        : null,
      T.el("p", { class: "muted" }, "Each job gets its own request; one that changed state meanwhile is refused and reported."),
      progress);
    let failures = [];
    const ok = await T.confirm({
      title: VERBS[action] + " " + targets.length + " " + noun + "?",
      text, okLabel: VERBS[action] + " " + targets.length + " " + noun,
      danger: action === "cancel",
      run: async () => {
        failures = await applyAll(action, targets, (n) => { progress.textContent = n + " of " + targets.length + " done…"; });
      },
    });
    if (!ok) return;
    const good = targets.length - failures.length;
    if (failures.length) {
      T.flash(DONE[action] + " " + good + " of " + targets.length + "; " + failures.length +
        " refused (" + failures.slice(0, 3).join("; ") + (failures.length > 3 ? "; …" : "") + ").", "warn");
    } else {
      T.flash(DONE[action] + " " + good + " " + (good === 1 ? "job" : "jobs") + ".");
    }
    $("bulk-action").value = "";
    poller.now();
  });

  readUrl();
  writeUrl();
  const poller = T.live(refresh, {
    spec: () => ({ path: "/events/stream", lastEventId: view.position }),
    onEvent: (msg) => { view.position = msg.id; },
  });
})();
