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
      if (limit === null || limit === undefined) continue;
      const daily = days.map((d) => rows.filter((r) => r.project === b.project && r.day === d)
        .reduce((n, r) => n + Number(r.cost_usd), 0));
      const used = Number(b.used.spent_usd) + Number(b.used.reserved_usd);
      let after = 0;
      const left = days.map(() => 0);
      for (let i = days.length - 1; i >= 0; i--) {
        left[i] = Number(limit) - (used - after);
        after += daily[i];
      }
      const values = left.map((x) => (Number(limit) > 0 ? (x / Number(limit)) * 100 : 0));
      out.push({ label: b.project, values, budget: b,
        show: (i) => T.fmt.usd(left[i]) + " (" + percent(values[i]) + ")" });
    }
    return out;
  }

  function budgetRow(s) {
    const b = s.budget;
    const left = Number(b.limits.max_cost_usd) - Number(b.used.spent_usd) - Number(b.used.reserved_usd);
    return T.el("tr", { dataset: { project: b.project } },
      T.el("td", { class: "mono" }, b.project),
      T.el("td", { class: "num" }, T.fmt.usd(b.limits.max_cost_usd)),
      T.el("td", { class: "num", dataset: { spent: b.used.spent_usd } }, T.fmt.usd(b.used.spent_usd)),
      T.el("td", { class: "num" }, T.fmt.usd(b.used.reserved_usd)),
      T.el("td", { class: "num" }, T.fmt.usd(left)));
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
    draw("burn-chart", days, burn, percent, (u, min, max) => [Math.min(0, min), 105]);
    $("burn-empty").hidden = burn.length > 0;
    $("burn-table").hidden = !burn.length;
    T.fill($("burn-body"), burn.map(budgetRow));
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
