/* Spend page: spend per day by project and model, and each project's budget burn-down,
 * drawn with the vendored uPlot (static/vendor/uplot) from GET /api/v1/spend. Money arrives
 * as exact decimal text; it becomes a Number only to be plotted or formatted. */
"use strict";

(function () {
  const T = window.tether;
  const $ = (id) => document.getElementById(id);
  const DAY = 86400;
  const PALETTE = ["#3451c7", "#27b39b", "#c0362c", "#a4640a", "#7c4dbd", "#2b8ac6",
    "#d9488b", "#5f7d1f", "#e07b39", "#687182"];
  const charts = {};
  let drawn = "";

  /** The last `n` UTC days, oldest first, as YYYY-MM-DD. */
  function lastDays(n) {
    const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
    const out = [];
    for (let i = n - 1; i >= 0; i--) out.push(new Date((today - i * DAY) * 1000).toISOString().slice(0, 10));
    return out;
  }
  const dayTs = (day) => Date.parse(day + "T00:00:00Z") / 1000;
  const usd = (v) => (v === null || v === undefined ? "—" : T.fmt.usd(v));
  const percent = (v) => (Math.round(v * 10) / 10) + "%";
  /** Dollars left of a limit; past it, by how much it was crossed. */
  const leftText = (x) => (x < 0 ? "over by " + T.fmt.usd(-x) : T.fmt.usd(x));
  /** The share of `limit` that `left` is, as plotted: none left is 0 %, never below. */
  const share = (left, limit) => (limit > 0 ? Math.max(0, left / limit) * 100 : 0);
  const SHARES = [0, 105];

  function notice(text) {
    $("spend-notice").textContent = text || "";
    $("spend-notice").hidden = !text;
  }

  /** Draw (or redraw) a line chart of `series` ([{label, values, show?}]) over the days `xs`.
   *  `axis` formats the y axis; a series' own `show(i)` what its legend says at day i. */
  function draw(id, xs, series, axis, range) {
    const el = $(id);
    if (charts[id]) { charts[id].destroy(); delete charts[id]; }
    el.replaceChildren();
    el.dataset.series = JSON.stringify(series.map((s) => s.label));
    el.dataset.values = JSON.stringify(series.map((s) => s.values));
    if (!series.length) return;
    const opts = {
      width: Math.max(320, el.clientWidth), height: 280,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
      scales: {
        x: { time: true },
        y: { range },
      },
      axes: [{}, { size: 80, values: (u, vals) => vals.map(axis) }],
      series: [
        { label: "Day", value: (u, v) => (v === null ? "—" : new Date(v * 1000).toISOString().slice(0, 10)) },
        ...series.map((s, i) => ({
          label: s.label, stroke: PALETTE[i % PALETTE.length], width: 2,
          points: { show: true, size: 6, fill: PALETTE[i % PALETTE.length] },
          value: (u, v, si, i) => (v === null || i === null ? "—" : s.show ? s.show(i) : axis(v)),
        })),
      ],
    };
    charts[id] = new uPlot(opts, [xs.map(dayTs), ...series.map((s) => s.values)], el);
  }

  /** Spend per (project, model) per day: one series each, a day without calls at 0. */
  function spendSeries(rows, days) {
    const index = new Map(days.map((d, i) => [d, i]));
    const series = new Map();
    for (const r of rows) {
      const label = r.project + " · " + r.model;
      if (!series.has(label)) series.set(label, { label, values: days.map(() => 0) });
      const i = index.get(r.day);
      if (i !== undefined) series.get(label).values[i] += Number(r.cost_usd);
    }
    return [...series.values()];
  }

  /** Each limited project's share of its cost limit left at the end of each day (a percent,
   *  so projects with limits of $0.05 and $1,000 share one axis; the legend shows dollars).
   *  Anchored at what the project has used to date (spent and reserved, from its budget):
   *  the cost left at the end of a day is the limit minus today's usage plus what was spent
   *  on the days after it. */
  function burnSeries(rows, budgets, days) {
    const out = [];
    for (const b of budgets) {
      const limit = b.limits.max_cost_usd;
      if (limit === null || limit === undefined || b.limits.period) continue;
      const daily = days.map((d) => rows.filter((r) => r.project === b.project && r.day === d)
        .reduce((n, r) => n + Number(r.cost_usd), 0));
      const used = Number(b.used.spent_usd) + Number(b.used.reserved_usd);
      let after = 0;
      const left = days.map(() => 0);
      for (let i = days.length - 1; i >= 0; i--) {
        left[i] = Number(limit) - (used - after);
        after += daily[i];
      }
      const values = left.map((x) => share(x, Number(limit)));
      out.push({ label: b.project, values, budget: b,
        show: (i) => leftText(left[i]) + " (" + percent(values[i]) + ")" });
    }
    return out;
  }

  /* ---- budgets per day, week or month ------------------------------------------------ */
  const PERIOD_NAMES = { day: "Daily", week: "Weekly", month: "Monthly" };
  const shiftDay = (day, n) => new Date((dayTs(day) + n * DAY) * 1000).toISOString().slice(0, 10);
  /** YYYY-MM-DD of `date` in the time zone `tz`. */
  const localDay = (date, tz) => new Intl.DateTimeFormat("en-CA",
    { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" }).format(date);

  /** The first day of the period (day, ISO week, month) that holds `day`. */
  function periodStart(day, period) {
    if (period === "day") return day;
    if (period === "month") return day.slice(0, 8) + "01";
    return shiftDay(day, -((new Date(dayTs(day) * 1000).getUTCDay() + 6) % 7));
  }

  /** Each periodic project's share of its period's cost limit left at the end of each of the
   *  last `n` days of its time zone, starting again at each period (its ledger by day in that
   *  zone). The current period is anchored at what the budget counts (`period_used`: settled
   *  in the period plus in flight, the table's figure) and walked back through its days'
   *  spend, as the lifetime burn-down is. */
  async function periodSeries(budgets, n) {
    const out = [];
    for (const b of budgets) {
      const limit = Number(b.limits.max_cost_usd);
      if (!b.limits.period || b.limits.max_cost_usd === null) continue;
      const tz = b.limits.timezone || "UTC";
      const today = localDay(new Date(), tz);
      const report = await T.api("GET", "/spend", { query: { by: "day", project: b.project, tz, since: (n + 32) + "d" } });
      const spent = new Map(report.rows.map((r) => [r.day, Number(r.cost_usd)]));
      const days = [];
      for (let i = n - 1; i >= 0; i--) days.push(shiftDay(today, -i));
      const current = periodStart(today, b.limits.period);
      const now = Number(b.period_used.spent_usd) + Number(b.period_used.reserved_usd);
      const left = days.map((d) => {
        let used = 0;
        if (d >= current) {
          used = now;
          for (let x = shiftDay(d, 1); x <= today; x = shiftDay(x, 1)) used -= spent.get(x) || 0;
        } else {
          for (let x = periodStart(d, b.limits.period); x <= d; x = shiftDay(x, 1)) used += spent.get(x) || 0;
        }
        return limit - used;
      });
      const values = left.map((x) => share(x, limit));
      out.push({ label: b.project + " · " + b.limits.period, days, values,
        show: (i) => leftText(left[i]) + " (" + percent(values[i]) + ")" });
    }
    return out;
  }

  /** The series on one axis: every series' days (zones may be a day apart), null where a
   *  series has no day. */
  function alignDays(series) {
    const xs = [...new Set(series.flatMap((s) => s.days))].sort();
    return [xs, series.map((s) => {
      const at = new Map(s.days.map((d, i) => [d, i]));
      return { ...s, values: xs.map((d) => (at.has(d) ? s.values[at.get(d)] : null)),
        show: (i) => (at.has(xs[i]) ? s.show(at.get(xs[i])) : "—") };
    })];
  }

  function periodRow(b) {
    const tz = b.limits.timezone || "UTC";
    const used = b.period_used;
    const cost = Number(used.spent_usd) + Number(used.reserved_usd);
    const limit = b.limits.max_cost_usd;
    const first = localDay(new Date(b.period_start), tz);
    const last = localDay(new Date(T.ms(b.period_end) - 1000), tz);
    return T.el("tr", { dataset: { project: b.project, period: b.limits.period, spent: used.spent_usd, limit: limit || "", end: b.period_end } },
      T.el("td", { class: "mono" }, b.project),
      T.el("td", {}, PERIOD_NAMES[b.limits.period] + " · " + tz),
      T.el("td", {}, first === last ? first : first + " – " + last),
      T.el("td", { class: "num" }, limit === null ? "—" : T.fmt.usd(limit)),
      T.el("td", { class: "num" }, T.fmt.usd(cost)),
      T.el("td", { class: "num" }, limit === null ? "—" : leftText(Number(limit) - cost)),
      T.el("td", { class: "num" }, T.fmt.int(used.calls) + (b.limits.max_calls === null ? "" : " of " + T.fmt.int(b.limits.max_calls))),
      T.el("td", {}, T.fmt.time(b.period_end), T.el("span", { class: "muted" }, " (" + T.fmt.until(b.period_end) + ")")));
  }

  async function drawPeriods(budgets, n) {
    const periodic = budgets.filter((b) => b.limits.period);
    $("period-card").hidden = !periodic.length;
    T.fill($("period-body"), periodic.map(periodRow));
    const [xs, series] = alignDays(await periodSeries(periodic, n));
    draw("period-chart", xs, series, percent, SHARES);
    $("period-chart").hidden = !series.length;
  }

  function budgetRow(s) {
    const b = s.budget;
    const left = Number(b.limits.max_cost_usd) - Number(b.used.spent_usd) - Number(b.used.reserved_usd);
    return T.el("tr", { dataset: { project: b.project } },
      T.el("td", { class: "mono" }, b.project),
      T.el("td", { class: "num" }, T.fmt.usd(b.limits.max_cost_usd)),
      T.el("td", { class: "num", dataset: { spent: b.used.spent_usd } }, T.fmt.usd(b.used.spent_usd)),
      T.el("td", { class: "num" }, T.fmt.usd(b.used.reserved_usd)),
      T.el("td", { class: "num" }, leftText(left)));
  }

  /** Each project whose budget has thresholds: the thresholds its own budget crossed. */
  async function drawAlerts(budgets) {
    const watched = budgets.filter((b) => b.limits.thresholds && b.limits.thresholds.length);
    $("alerts-card").hidden = !watched.length;
    const rows = [];
    for (const b of watched) {
      const at = b.limits.thresholds.map((t) => Math.round(t * 1000) / 10 + "%").join(", ") + (b.limits.soft ? " (soft)" : "");
      const found = await T.api("GET", "/projects/" + encodeURIComponent(b.project) + "/budget/crossings", { query: { scope: "project", limit: 20 } });
      if (!found.crossings.length) rows.push(T.el("tr", { dataset: { project: b.project } }, T.el("td", { class: "mono" }, b.project), T.el("td", {}, at), T.el("td", { class: "muted", colspan: "6" }, "none crossed yet")));
      for (const c of found.crossings) {
        rows.push(T.el("tr", { class: "crossing", dataset: { project: b.project, threshold: String(c.threshold) } },
          T.el("td", { class: "mono" }, b.project), T.el("td", {}, at),
          T.el("td", {}, Math.round(c.threshold * 1000) / 10 + "% of " + c.metric),
          T.el("td", { class: "num" }, c.metric === "cost" ? T.fmt.usd(c.used) : T.fmt.int(c.used)),
          T.el("td", { class: "num" }, c.metric === "cost" ? T.fmt.usd(c.limit) : T.fmt.int(c.limit)),
          T.el("td", {}, c.period || "all time"), T.el("td", {}, T.fmt.time(c.crossed_at)),
          T.el("td", {}, T.el("a", { href: "/jobs/" + c.job_id }, "#" + c.job_id))));
      }
    }
    T.fill($("alerts-body"), rows);
  }

  function spendRow(r) {
    return T.el("tr", {},
      T.el("td", { class: "mono" }, r.project), T.el("td", { class: "mono" }, r.model),
      T.el("td", {}, r.day), T.el("td", { class: "num" }, T.fmt.int(r.calls)),
      T.el("td", { class: "num" }, T.fmt.int(r.input_tokens)),
      T.el("td", { class: "num" }, T.fmt.int(r.output_tokens)),
      T.el("td", { class: "num", dataset: { cost: r.cost_usd } }, T.fmt.usd(r.cost_usd)));
  }

  async function refresh() {
    const n = Number($("spend-window").value);
    const days = lastDays(n);
    const report = await T.api("GET", "/spend", { query: { by: "project,model,day", since: days[0] + "T00:00:00Z" } });
    notice("");
    const key = n + JSON.stringify([report.rows, report.budgets]);
    if (key === drawn) return;
    drawn = key;
    const t = report.total;
    T.stats($("spend-stats"), [
      ["Spent in window", T.fmt.usd(t.cost_usd)],
      ["Calls", T.fmt.int(t.calls)],
      ["Input tokens", T.fmt.int(t.input_tokens)],
      ["Output tokens", T.fmt.int(t.output_tokens)],
      ["Unconfirmed calls", T.fmt.int(t.unconfirmed_calls), t.unconfirmed_calls ? "warn" : null],
    ]);
    $("spend-stats").dataset.cost = t.cost_usd;
    const spend = spendSeries(report.rows, days);
    draw("spend-chart", days, spend, usd, (u, min, max) => [0, max > 0 ? max * 1.1 : 1]);
    $("spend-chart-empty").hidden = spend.length > 0;
    const burn = burnSeries(report.rows, report.budgets, days);
    draw("burn-chart", days, burn, percent, SHARES);
    $("burn-chart").hidden = !burn.length;
    $("burn-empty").hidden = burn.length > 0;
    $("burn-table").hidden = !burn.length;
    T.fill($("burn-body"), burn.map(budgetRow));
    await drawPeriods(report.budgets, n);
    await drawAlerts(report.budgets);
    T.fill($("spend-body"), report.rows.length ? report.rows.map(spendRow)
      : T.emptyRow(7, "No calls in this window."));
  }

  $("spend-window").addEventListener("change", () => { drawn = ""; poller.now(); });
  $("spend-controls").addEventListener("submit", (ev) => ev.preventDefault());
  window.addEventListener("resize", () => {
    for (const [id, chart] of Object.entries(charts)) chart.setSize({ width: Math.max(320, $(id).clientWidth), height: 280 });
  });
  const poller = T.poll(refresh);
})();
