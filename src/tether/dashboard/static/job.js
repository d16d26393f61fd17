/* Job page: one job's state, stages, budget, history and controls, kept live by the job's
 * event stream (polling only when the stream cannot be had). */
"use strict";

(function () {
  const T = window.tether;
  const $ = (id) => document.getElementById(id);
  const jobId = document.body.dataset.jobId;
  const base = "/jobs/" + jobId;
  const ACTIVE = ["leased", "running", "pausing", "cancelling"];
  const MAX_EVENTS_SHOWN = 1000;

  const view = { job: null, events: [], unshown: [], lastSeq: 0, signature: "", streaming: false, optional: { ledger: true, checkpoints: true, batches: true } };

  const back = sessionStorage.getItem("tether.jobs.url");
  if (back && back.startsWith("/jobs")) $("back-to-jobs").href = back;

  /* ---- overview ---------------------------------------------------------------------- */
  function fact(label, ...value) {
    return [T.el("dt", {}, label), T.el("dd", {}, ...value)];
  }

  function renderHeader(job) {
    $("job-title").textContent = "Job #" + job.id + " · " + job.type;
    const badge = T.badge(job.state);
    badge.id = "job-state";
    $("job-state").replaceWith(badge);
    $("job-subtitle").textContent = "Project " + job.project + " · queue " + job.queue +
      " · created " + T.fmt.time(job.created_at);
    document.title = "Job " + job.id + " (" + job.state + ") · tether";
    const error = $("job-error");
    if (job.error_code || job.error_summary) {
      T.fill(error, T.el("strong", { class: "mono" }, job.error_code || "error"),
        job.error_summary ? T.el("span", {}, " " + job.error_summary) : null);
      error.hidden = false;
    } else {
      error.hidden = true;
    }
  }

  const PERIOD_WORDS = { day: "daily", week: "weekly", month: "monthly" };

  /** A job paused by its project's budget for a day, week or month resumes by itself when
   *  the period ends (its run_after): say when, and which budget it reached (the period is
   *  in the data of the budget_exhausted event). */
  function renderPeriodPause(job) {
    const box = $("job-period-pause");
    if (job.state !== "paused" || job.error_code !== "period_budget_exhausted") {
      box.hidden = true;
      return;
    }
    let period = null;
    for (let i = view.events.length - 1; i >= 0 && !period; i--) {
      const ev = view.events[i];
      if (ev.kind === "budget_exhausted" && ev.data && ev.data.period) period = ev.data.period;
    }
    T.fill(box, T.el("strong", {}, "Paused until " + T.fmt.time(job.run_after)),
      " (" + T.fmt.until(job.run_after) + "): " + (PERIOD_WORDS[period] || "period") +
      " budget reached. It resumes by itself when the " + (period || "period") + " ends.");
    Object.assign(box.dataset, { until: job.run_after, period: period || "" });
    box.hidden = false;
  }

  /** A queued job whose type (at its version) no live worker serves on its queue stays
   *  queued: say why. */
  function renderUnserved(job) {
    const box = $("job-unserved");
    box.hidden = !job.unserved;
    if (job.unserved) {
      const version = job.version ? " version " + job.version : "";
      T.fill(box, T.el("strong", {}, "No live worker serves type " + job.type + version + " on queue " + job.queue),
        ": the job stays queued until a worker whose app registers the type" + (version ? " at that version" : "") + " starts.");
    }
  }

  function renderFacts(job) {
    const facts = [
      fact("State", T.badge(job.state)),
      fact("Type", job.type),
      fact("Version", job.version ? T.el("span", { class: "mono" }, job.version) : T.el("span", { class: "muted" }, "unversioned")),
      fact("Project", job.project),
      fact("Queue", job.queue),
      fact("Attempts", job.attempt_count + " of " + job.max_attempts),
      fact("Priority", String(job.priority)),
    ];
    if (job.idempotency_key) facts.push(fact("Idempotency key", T.el("span", { class: "mono" }, job.idempotency_key)));
    facts.push(fact("Created", T.fmt.time(job.created_at), T.el("span", { class: "muted" }, " (", T.ago(job.created_at, " ago"), ")")));
    facts.push(fact("Updated", T.ago(job.updated_at, " ago")));
    if (job.finished_at) facts.push(fact("Finished", T.fmt.time(job.finished_at)));
    if (job.run_after && job.state !== "waiting" && T.ms(job.run_after) > Date.now()) facts.push(fact("Runs after", T.fmt.time(job.run_after), " (" + T.fmt.until(job.run_after) + ")"));
    if (job.lease_owner) {
      facts.push(fact("Lease", T.el("span", { class: "mono" }, job.lease_owner),
        T.el("span", { class: "muted" }, job.lease_expires_at ? " · expires " + T.fmt.until(job.lease_expires_at) : "")));
    }
    if (job.estimated_cost_usd) facts.push(fact("Estimated cost", T.fmt.usd(job.estimated_cost_usd)));
    if (job.price_profile) facts.push(fact("Price profile", T.el("span", { class: "mono small" }, job.price_profile)));
    if (job.parent_id) facts.push(fact("Parent", T.el("a", { href: "/jobs/" + job.parent_id }, "#" + job.parent_id)));
    facts.push(fact("Safe to retry", job.safe_to_retry === false ? "no (an operator requeues it)" : "yes"));
    T.fill($("job-facts"), facts.flat());
  }

  /* ---- budget ------------------------------------------------------------------------ */
  function renderBudget(job) {
    const rows = [];
    for (const dim of Object.keys(T.DIMENSIONS)) {
      const m = T.measure(job.budget, dim);
      if (m.limit === null && !m.spent && !m.reserved) continue;
      const pct = m.limit ? Math.round(((m.spent + m.reserved) / m.limit) * 100) : null;
      rows.push(T.el("div", { class: "budget", dataset: { dim } },
        T.el("div", { class: "budget-head" },
          T.el("span", { class: "budget-label" }, m.label),
          T.el("span", { class: "budget-figures" },
            T.el("strong", {}, m.fmt(m.spent)), " spent",
            m.reserved ? T.el("span", {}, " + " + m.fmt(m.reserved) + " reserved") : null,
            T.el("span", { class: "muted" }, m.limit === null ? " · no limit" : " of " + m.fmt(m.limit) + " (" + pct + "%)"))),
        m.limit === null ? null : T.bar(m)));
    }
    const limits = (job.budget && job.budget.limits) || {};
    if (limits.max_duration_s) rows.push(T.el("p", { class: "muted small" }, "Time limit: " + T.fmt.duration(limits.max_duration_s)));
    if (limits.max_examples) {
      rows.push(T.el("p", { class: "muted small" }, "Examples: " + T.fmt.int((job.budget.used || {}).examples) + " of " + T.fmt.int(limits.max_examples)));
    }
    if ((limits.thresholds && limits.thresholds.length) || limits.soft) {
      rows.push(T.el("p", { class: "muted small", id: "job-alerts" }, "Alerts at " +
        ((limits.thresholds || []).map(percent).join(", ") || "no thresholds") + " of each limit" +
        (limits.soft ? " · soft: its limits never pause the job" : "")));
    }
    const crossed = view.events.filter((ev) => ev.kind === "budget_threshold" && ev.data);
    if (crossed.length) {
      rows.push(T.el("ul", { class: "small", id: "job-crossings" }, crossed.map((ev) => {
        const d = ev.data;
        const whose = d.scope === "project" ? "project " + d.project : (String(d.budget) === String(job.id) ? "this job" : "job #" + d.budget);
        return T.el("li", { class: "crossing", dataset: { threshold: String(d.threshold), scope: d.scope } },
          percent(d.threshold) + " of " + whose + "'s " + d.metric + " limit reached: " + d.used + " of " + d.limit +
          (d.period_start ? " this period" : "") + " · " + T.fmt.time(ev.at));
      })));
    }
    if (rows.length) rows.push(T.el("div", { class: "legend small muted" },
      T.el("span", { class: "swatch swatch-spent" }), "spent ",
      T.el("span", { class: "swatch swatch-reserved" }), "reserved for calls in flight"));
    T.fill($("job-budget"), rows.length ? rows : T.el("p", { class: "muted" }, "No budget limits and nothing spent."));
  }

  function percent(fraction) {
    return Math.round(Number(fraction) * 1000) / 10 + "%";
  }

  /* ---- stages and checkpoints -------------------------------------------------------- */
  function renderStages(job, checkpoints) {
    const done = new Map(checkpoints.map((c) => [c.stage, c]));
    const names = Array.isArray(job.stages) && job.stages.length
      ? job.stages.map((s) => (typeof s === "string" ? s : s.name))
      : checkpoints.slice().sort((a, b) => a.position - b.position).map((c) => c.stage);
    if (job.stage && !names.includes(job.stage)) names.push(job.stage);
    if (!names.length) {
      T.fill($("job-stages"), T.el("li", { class: "muted" }, job.state === "queued" ? "Not started yet." : "No stage checkpointed yet."));
    } else {
      T.fill($("job-stages"), names.map((name, i) => {
        let status = "pending";
        if (done.has(name)) status = "done";
        else if (name === job.stage) status = ACTIVE.includes(job.state) ? "current" : "stopped";
        const hint = { done: "checkpointed", current: "running", stopped: "stopped here (" + job.state.replaceAll("_", " ") + ")", pending: "pending" }[status];
        return T.el("li", { class: "step step-" + status, dataset: { stage: name, status } },
          T.el("span", { class: "step-dot" }, status === "done" ? "✓" : String(i + 1)),
          T.el("span", { class: "step-name" }, name),
          T.el("span", { class: "step-hint" }, hint));
      }));
    }
    $("checkpoints-wrap").hidden = !checkpoints.length;
    T.fill($("checkpoints-body"), checkpoints.map((c) => T.el("tr", {},
      T.el("td", { class: "num" }, String(c.position)),
      T.el("td", {}, c.stage, c.reused_from ? T.el("span", { class: "tag tag-reused" }, "reused from #" + c.reused_from) : null),
      T.el("td", { class: "num" }, T.fmt.bytes(c.size)),
      T.el("td", { title: T.fmt.time(c.created_at) }, T.fmt.short(c.created_at)))));
  }

  /* ---- events ------------------------------------------------------------------------ */
  function summarize(data) {
    if (!data || typeof data !== "object") return null;
    const parts = Object.entries(data).map(([k, v]) => k + "=" + (typeof v === "object" ? JSON.stringify(v) : String(v)));
    if (!parts.length) return null;
    const text = parts.join("  ");
    return T.el("div", { class: "event-data mono", title: text }, text.length > 240 ? text.slice(0, 240) + "…" : text);
  }

  function eventItem(ev) {
    return T.el("li", { class: "event", dataset: { seq: ev.seq, kind: ev.kind } },
      T.el("div", { class: "event-when" }, T.el("time", { title: T.fmt.time(ev.at) }, T.fmt.clock(ev.at)),
        T.el("span", { class: "muted small" }, "#" + ev.seq)),
      T.el("div", { class: "event-body" },
        T.el("div", { class: "event-head" },
          T.el("span", { class: "event-kind" }, ev.kind.replaceAll("_", " ")),
          ev.to_state ? T.el("span", { class: "event-move" },
            ev.from_state ? T.badge(ev.from_state) : null, ev.from_state ? " → " : null, T.badge(ev.to_state)) : null,
          ev.attempt ? T.el("span", { class: "muted small" }, "attempt " + ev.attempt) : null),
        summarize(ev.data)));
  }

  /** Events after the last one seen (the log is gap-free, so nothing is missed). They are
   *  kept aside until `showEvents`, so the page draws them together with the job they explain. */
  async function fetchEvents() {
    let more = true;
    while (more) {
      const data = await T.api("GET", base + "/events", { query: { after: view.lastSeq, limit: 500 } });
      const fresh = T.items(data).filter((e) => e.seq > view.lastSeq);
      more = Boolean(data && data.has_more) && fresh.length > 0;
      if (!fresh.length) break;
      view.events.push(...fresh);
      view.unshown.push(...fresh);
      view.lastSeq = fresh[fresh.length - 1].seq;
    }
  }

  function showEvents() {
    const list = $("job-events");
    if (view.unshown.length && list.firstElementChild && list.firstElementChild.classList.contains("muted")) list.replaceChildren();
    for (const ev of view.unshown) list.prepend(eventItem(ev));
    view.unshown = [];
    while (list.children.length > MAX_EVENTS_SHOWN) list.lastElementChild.remove();
    $("events-count").textContent = view.events.length ? String(view.events.length) : "";
  }

  /** The state the newest state-changing event moved the job to, or null. */
  function loggedState() {
    for (let i = view.events.length - 1; i >= 0; i--) {
      if (view.events[i].to_state) return view.events[i].to_state;
    }
    return null;
  }

  /** Checkpoints as the log recorded them: each ``stage_completed`` event commits with its
   *  manifest row. Used when the API offers no checkpoints list. */
  function checkpointsFromEvents() {
    const byStage = new Map();
    for (const ev of view.events) {
      if (ev.kind !== "stage_completed" || !ev.data || !ev.data.stage) continue;
      byStage.set(ev.data.stage, { stage: ev.data.stage, position: ev.data.position, size: ev.data.size, created_at: ev.at });
    }
    return Array.from(byStage.values()).sort((a, b) => a.position - b.position);
  }

  /* ---- attempts and ledger ----------------------------------------------------------- */
  function renderAttempts(attempts) {
    if (!attempts.length) return T.fill($("job-attempts"), T.el("p", { class: "muted" }, "No attempts yet."));
    const rows = [];
    for (const a of attempts.slice().sort((x, y) => y.attempt - x.attempt)) {
      const end = a.finished_at ? T.ms(a.finished_at) : Date.now();
      const start = a.started_at || a.claimed_at;
      rows.push(T.el("tr", { dataset: { attempt: a.attempt } },
        T.el("td", { class: "num" }, String(a.attempt)),
        T.el("td", { class: "mono small truncate", title: a.worker_id }, a.worker_id),
        T.el("td", { title: T.fmt.time(a.claimed_at) }, T.fmt.short(a.claimed_at)),
        T.el("td", { class: "num" }, start ? T.fmt.duration((end - T.ms(start)) / 1000) : "—"),
        T.el("td", {}, a.outcome ? T.badge(a.outcome) : T.el("span", { class: "muted" }, "in progress"))));
      if (a.error_code || a.error_summary) {
        rows.push(T.el("tr", { class: "error-row" }, T.el("td", {}), T.el("td", { colspan: 4 },
          T.el("span", { class: "mono" }, a.error_code || "error"), a.error_summary ? " " + a.error_summary : "")));
      }
    }
    T.fill($("job-attempts"), T.el("table", { class: "table table-compact" },
      T.el("thead", {}, T.el("tr", {}, T.el("th", { class: "num" }, "#"), T.el("th", {}, "Worker"),
        T.el("th", {}, "Claimed"), T.el("th", { class: "num" }, "Ran"), T.el("th", {}, "Outcome"))),
      T.el("tbody", {}, rows)));
  }

  function renderLedger(entries) {
    if (!entries.length) {
      $("ledger-total").textContent = "";
      return T.fill($("job-ledger"), T.el("p", { class: "muted" }, "No provider calls recorded."));
    }
    const total = entries.reduce((sum, e) => sum + Number(e.cost_usd || 0), 0);
    const reused = entries.filter((e) => e.reused_from).length;
    $("ledger-total").textContent = (entries.length - reused) + " calls · " + T.fmt.usd(total) + (reused ? " · " + reused + " reused" : "");
    T.fill($("job-ledger"), T.el("div", { class: "table-scroll" }, T.el("table", { class: "table table-compact" },
      T.el("thead", {}, T.el("tr", {}, ["Time", "Stage", "Call", "Model", "Input", "Output", "Reserved", "Cost", "Price profile"].map(
        (h, i) => T.el("th", { class: i >= 4 && i <= 7 ? "num" : "" }, h)))),
      T.el("tbody", {}, entries.map((e) => T.el("tr", {},
        T.el("td", { title: T.fmt.time(e.created_at) }, T.fmt.short(e.created_at)),
        T.el("td", {}, e.stage || "—"),
        T.el("td", { class: "mono small" }, e.key),
        T.el("td", {}, T.el("span", { class: "muted" }, e.provider + " · "), e.model),
        T.el("td", { class: "num" }, T.fmt.int(e.input_tokens)),
        T.el("td", { class: "num" }, T.fmt.int(e.output_tokens)),
        T.el("td", { class: "num muted" }, T.fmt.usd(e.reserved_usd)),
        T.el("td", { class: "num" }, T.fmt.usd(e.cost_usd),
          e.confirmed === false || e.confirmed === 0 ? T.el("span", { class: "tag", title: "Outcome unknown after a crash; counted as spent" }, "unconfirmed") : null,
          e.reused_from ? T.el("a", { class: "tag tag-reused", href: "/jobs/" + e.reused_from, title: "Paid " + T.fmt.usd(e.reused_cost_usd) + " in job #" + e.reused_from + "; not paid or counted again here" }, "reused from #" + e.reused_from) : null),
        T.el("td", { class: "mono small muted" }, e.price_profile || "—")))))));
  }

  /** An optional resource: [] when the API does not offer it (404 on a job that exists). */
  async function optional(name) {
    if (!view.optional[name]) return [];
    try {
      return T.items(await T.api("GET", base + "/" + name));
    } catch (err) {
      if (err.status === 404 || err.status === 405) { view.optional[name] = false; return []; }
      throw err;
    }
  }

  /* ---- actions ----------------------------------------------------------------------- */
  const ACTION_TEXT = {
    cancel: ["Cancel this job?", "A waiting job is cancelled at once; a running job stops at its next safe boundary (a call, a checkpoint, a stage edge). Cancelled is final.", "Cancel job"],
    pause: ["Pause this job?", "A waiting job pauses at once; a running job stops at its next safe boundary and keeps its checkpoints. Resume it later.", "Pause job"],
    resume: ["Resume this job?", "It goes back to its queue and continues from its last checkpoint.", "Resume job"],
    retry: ["Retry this failed job?", "It goes back to its queue and continues from its last checkpoint. Spend so far stays counted against its budget.", "Retry job"],
    requeue: ["Requeue this job?", "It goes back to its queue and continues from its last checkpoint and journaled calls.", "Requeue job"],
  };
  const ACTION_DONE = { cancel: "Cancel requested", pause: "Pause requested", resume: "Resumed", retry: "Queued for retry", requeue: "Requeued" };

  function renderButtons(job) {
    for (const button of document.querySelectorAll("#job-actions [data-action]")) {
      button.disabled = !T.allows(button.dataset.action, job.state);
    }
    $("raise-budget").disabled = job.state === "succeeded" || job.state === "cancelled";
  }

  for (const button of document.querySelectorAll("#job-actions [data-action]")) {
    button.addEventListener("click", async () => {
      const action = button.dataset.action;
      const [title, text, ok] = ACTION_TEXT[action];
      const job = view.job;
      const done = await T.confirm({
        title, okLabel: ok, danger: action === "cancel",
        text: T.el("div", {}, T.el("p", {}, "Job #" + job.id + " (" + job.type + ") is ", T.badge(job.state), "."), T.el("p", {}, text)),
        run: () => T.api("POST", base + "/" + action),
      });
      if (done) {
        T.flash(ACTION_DONE[action] + " for job #" + job.id + ".");
        poller.now();
      }
    });
  }

  const LIMITS = [
    ["max_cost_usd", "Cost limit (USD)", "0.01"],
    ["max_calls", "Calls", "1"],
    ["max_input_tokens", "Input tokens", "1"],
    ["max_output_tokens", "Output tokens", "1"],
  ];

  $("raise-budget").addEventListener("click", async () => {
    const job = view.job;
    const limits = (job.budget && job.budget.limits) || {};
    const inputs = {};
    const fields = LIMITS.map(([key, label, step]) => {
      const m = T.measure(job.budget, { max_cost_usd: "cost", max_calls: "calls", max_input_tokens: "input", max_output_tokens: "output" }[key]);
      inputs[key] = T.el("input", { class: "input", type: "number", min: "0", step, name: key, id: "budget-" + key,
        value: limits[key] !== undefined && limits[key] !== null ? String(limits[key]) : "", placeholder: "no limit" });
      return T.el("label", { class: "field" }, T.el("span", { class: "field-label" }, label), inputs[key],
        T.el("span", { class: "field-hint" }, "used " + m.fmt(m.spent + m.reserved)));
    });
    const alertsBefore = (limits.thresholds || []).map((t) => Math.round(t * 1000) / 10).join(", ");
    const thresholds = T.el("input", { class: "input", type: "text", id: "budget-thresholds", value: alertsBefore, placeholder: "e.g. 50, 80, 100" });
    const soft = T.el("input", { type: "checkbox", id: "budget-soft" });
    soft.checked = Boolean(limits.soft);
    fields.push(T.el("label", { class: "field" }, T.el("span", { class: "field-label" }, "Alert at (% of each limit)"), thresholds,
      T.el("span", { class: "field-hint" }, "each fires once, when settled use reaches it")));
    const budgetPaused = job.state === "paused" && job.error_code === "budget_exhausted";
    const resume = T.el("input", { type: "checkbox", id: "budget-resume" });
    const extra = [T.el("div", { class: "form-grid" }, fields),
      T.el("label", { class: "check" }, soft, T.el("span", {}, "Soft budget: alert only, never pause the job"))];
    if (job.state === "paused" && !budgetPaused) {
      extra.push(T.el("label", { class: "check" }, resume, T.el("span", {}, "Also resume the job after saving")));
    }
    const done = await T.confirm({
      title: "Change the budget of job #" + job.id,
      text: budgetPaused
        ? "The job paused because a call would have crossed a limit. Saving higher limits resumes it from its last checkpoint."
        : "Limits apply to the next reservation. Leave a field as it is to keep that limit.",
      extra, okLabel: "Save limits",
      run: async () => {
        const changes = {};
        for (const [key] of LIMITS) {
          const raw = inputs[key].value.trim();
          const before = limits[key] !== undefined && limits[key] !== null ? String(limits[key]) : "";
          if (raw === before) continue;
          if (raw === "") throw new Error("Removing a limit is not supported here; set a higher value instead.");
          if (!(Number(raw) >= 0)) throw new Error("Limits must be non-negative numbers.");
          changes[key] = key === "max_cost_usd" ? raw : parseInt(raw, 10);
        }
        const alerts = thresholds.value.trim();
        if (alerts !== alertsBefore) {
          const parts = alerts ? alerts.split(",").map((x) => Number(x.trim().replace(/%$/, ""))) : [];
          if (parts.some((x) => !(x > 0 && x <= 1000))) throw new Error("Alert thresholds are percentages above 0, e.g. 50, 80, 100.");
          changes.thresholds = parts.map((x) => x / 100);
        }
        if (soft.checked !== Boolean(limits.soft)) changes.soft = soft.checked;
        if (!Object.keys(changes).length) throw new Error("Nothing changed.");
        const saved = await T.api("PATCH", base + "/budget", { body: changes });
        if (resume.checked && saved && saved.state === "paused") await T.api("POST", base + "/resume");
      },
    });
    if (done) {
      T.flash("Budget saved for job #" + job.id + ".");
      poller.now();
    }
  });

  /* ---- refresh ----------------------------------------------------------------------- */
  /** The job, or null when this token cannot see it (404) or the id cannot exist (422). */
  async function fetchJob() {
    try {
      const data = await T.api("GET", base);
      return data && data.job ? data.job : data;
    } catch (err) {
      if (err.status === 404 || err.status === 422) return null;
      throw err;
    }
  }

  function showNotFound() {
    $("job-title").textContent = "Job #" + jobId + " not found";
    $("job-state").hidden = true;
    $("job-subtitle").textContent = "It does not exist, or your token may not see its project.";
    $("job-actions").hidden = true;
    $("job-detail").hidden = true;
    document.title = "Job " + jobId + " not found · tether";
    return T.STOP;
  }

  /** Read the job and its new events until they tell the same state. A state change and its
   *  event commit together, so a job read after an event is at least as new as that event;
   *  a few rounds settle a job that keeps moving, and the next poll settles the rest. */
  async function fetchAgreeing() {
    let job = await fetchJob();
    if (job === null) return null;
    if (view.streaming) {
      // The stream brings the events. A job read newer than the last one streamed waits for
      // it (it is on its way, and brings its own refresh), so the header never runs ahead.
      const logged = loggedState();
      return logged && logged !== job.state ? BEHIND : job;
    }
    await fetchEvents();
    for (let round = 0; round < 3 && loggedState() && loggedState() !== job.state; round++) {
      job = await fetchJob();
      if (job === null) return null;
      await fetchEvents();
    }
    return job;
  }

  /** A job paused by journal_mismatch: which call or stage changed since it was recorded,
   *  and what (from its journal_mismatch event), with the two decisions it can resume with. */
  function renderMismatch(job) {
    const box = $("job-mismatch");
    if (job.state !== "paused" || job.error_code !== "journal_mismatch") {
      box.hidden = true;
      return;
    }
    let found = null;
    for (let i = view.events.length - 1; i >= 0 && !found; i--) {
      if (view.events[i].kind === "journal_mismatch") found = view.events[i].data || {};
    }
    found = found || {};
    const what = found.key ? "Call " + found.key + (found.stage ? " in stage " + found.stage : "")
      : "Stage " + (found.stage || "?");
    T.fill($("mismatch-text"), T.el("strong", {}, what + " changed since it was recorded."),
      " Nothing was paid or returned. Resume with a decision:");
    T.fill($("mismatch-differs"), ...Object.entries(found.differs || {}).map(([name, pair]) =>
      T.el("li", { class: "mono" }, name + ": " + String(pair[0]) + " → " + String(pair[1]))));
    box.hidden = false;
  }

  for (const [id, decision] of [["mismatch-reuse", "reuse"], ["mismatch-repay", "repay"]]) {
    $(id).addEventListener("click", async () => {
      const job = view.job;
      const done = await T.confirm({
        title: decision === "reuse" ? "Reuse the recorded answers?" : "Pay for the changed calls again?",
        okLabel: decision === "reuse" ? "Resume, reusing" : "Resume, paying again",
        text: decision === "reuse"
          ? "Job #" + job.id + " resumes; the calls and stages that changed return what was recorded, and nothing is paid for them."
          : "Job #" + job.id + " resumes; the calls that changed are paid again (a new ledger row each) and the stages that changed run again.",
        run: () => T.api("POST", base + "/resume", { body: { on_change: decision } }),
      });
      if (done) {
        T.flash("Resumed job #" + job.id + " (" + decision + ").");
        poller.now();
      }
    });
  }

  const BEHIND = Symbol("the log is behind the job");

  async function refresh() {
    const job = await fetchAgreeing();
    if (job === null) return showNotFound();
    if (job === BEHIND) return;
    view.job = job;
    renderHeader(job);
    showEvents();
    renderPeriodPause(job);
    renderMismatch(job);
    renderUnserved(job);
    renderFacts(job);
    T.renderWaiting(job);
    renderBudget(job);
    renderButtons(job);
    $("job-payload").textContent = T.fmt.json(job.payload);
    $("result-card").hidden = job.result === null || job.result === undefined;
    $("job-result").textContent = T.fmt.json(job.result);
    const tick = ACTIVE.includes(job.state) ? Math.floor(Date.now() / 10000) : 0;
    const signature = [job.state, job.stage, job.updated_at, job.attempt_count, view.lastSeq, tick, JSON.stringify(job.budget && job.budget.used)].join("|");
    if (signature === view.signature) return;
    const [attempts, ledger, checkpoints, batches] = await Promise.all([
      T.api("GET", base + "/attempts").then(T.items),
      optional("ledger"),
      Array.isArray(job.checkpoints) ? Promise.resolve(job.checkpoints) : optional("checkpoints"),
      optional("batches"),
    ]);
    const stages = view.optional.checkpoints || Array.isArray(job.checkpoints) ? checkpoints : checkpointsFromEvents();
    renderAttempts(attempts);
    renderLedger(ledger);
    T.renderBatches(batches);
    renderStages(job, stages);
    view.stages = stages;
    $("fork-job").disabled = !stages.length && !job.stage;
    view.signature = signature;
  }

  /** An event from the stream: kept aside like a fetched one, drawn by the refresh it starts. */
  function streamed(msg) {
    const ev = msg.data;
    if (!ev || ev.seq <= view.lastSeq) return;
    view.events.push(ev);
    view.unshown.push(ev);
    view.lastSeq = ev.seq;
  }

  const poller = T.live(refresh, {
    spec: () => (view.job && !T.config.terminal.includes(view.job.state)
      ? { path: base + "/events/stream", lastEventId: view.lastSeq } : null),
    onOpen: () => { view.streaming = true; },
    onEvent: streamed,
    onFail: () => { view.streaming = false; },
  });
  T.jobPage = { view, refresh: () => poller.now() };
})();
