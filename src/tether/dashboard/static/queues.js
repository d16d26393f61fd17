/* Queues page: depth by state for every queue, live, with pause and resume. */
"use strict";

(function () {
  const T = window.tether;
  const $ = (id) => document.getElementById(id);
  const GROUPS = [
    ["queued", "Queued", ["queued"]],
    ["retry_wait", "Retry / waiting", ["retry_wait", "waiting"]],
    ["running", "Running", ["leased", "running", "pausing", "cancelling"]],
    ["paused", "Paused", ["paused"]],
    ["interrupted", "Interrupted", ["interrupted"]],
    ["failed", "Failed", ["failed"]],
    ["succeeded", "Succeeded", ["succeeded"]],
    ["cancelled", "Cancelled", ["cancelled"]],
  ];

  T.fill($("queues-head"), T.el("tr", {}, T.el("th", {}, "Queue"), T.el("th", {}, "Status"),
    T.el("th", {}, "Depth"), GROUPS.map(([key, label]) => T.el("th", { class: "num" },
      T.el("span", { class: "key depth-" + key, "aria-hidden": "true" }), label)),
    T.el("th", { class: "num" }, "Total"), T.el("th", {})));

  function notice(text) {
    $("queues-notice").textContent = text || "";
    $("queues-notice").hidden = !text;
  }

  function depthBar(sums, total) {
    const parts = GROUPS.filter(([key]) => sums[key]).map(([key, label]) =>
      T.el("span", { class: "depth-" + key, style: "width:" + (sums[key] / total) * 100 + "%", title: label + ": " + sums[key] }));
    return T.el("div", { class: "depth" }, parts);
  }

  function row(q) {
    const counts = q.counts || {};
    const sums = {};
    let total = 0;
    for (const [key, , states] of GROUPS) {
      sums[key] = states.reduce((n, s) => n + (counts[s] || 0), 0);
      total += sums[key];
    }
    const link = (key, n) => {
      if (!n) return T.el("span", { class: "muted" }, "0");
      const state = GROUPS.find((g) => g[0] === key)[2];
      const href = "/jobs?queue=" + encodeURIComponent(q.name) + (state.length === 1 ? "&state=" + state[0] : "");
      return T.el("a", { href, title: "Open these jobs" }, T.fmt.int(n));
    };
    const action = q.paused ? "resume" : "pause";
    return T.el("tr", { dataset: { queue: q.name, paused: q.paused ? "true" : "false" } },
      T.el("td", { class: "mono" }, T.el("div", { class: "truncate queue-name", title: q.name }, q.name)),
      T.el("td", {}, T.el("span", { class: "badge " + (q.paused ? "badge-paused" : "badge-active") }, q.paused ? "paused" : "active")),
      T.el("td", { class: "depth-cell" }, total ? depthBar(sums, total) : T.el("span", { class: "muted small" }, "empty")),
      GROUPS.map(([key]) => T.el("td", { class: "num", dataset: { count: key } }, link(key, sums[key]))),
      T.el("td", { class: "num" }, T.fmt.int(total)),
      T.el("td", { class: "actions" }, T.el("button", {
        type: "button", class: "btn btn-sm" + (q.paused ? " btn-primary" : ""), dataset: { action, queue: q.name },
        onclick: () => toggle(q.name, action, sums),
      }, q.paused ? "Resume" : "Pause")));
  }

  async function toggle(name, action, sums) {
    const waiting = sums.queued + sums.retry_wait;
    const text = action === "pause"
      ? "Workers stop claiming jobs from “" + name + "”. " + waiting + " waiting " + (waiting === 1 ? "job stays" : "jobs stay") +
        " queued; " + sums.running + " running " + (sums.running === 1 ? "job finishes" : "jobs finish") + " normally."
      : "Workers start claiming the " + waiting + " waiting " + (waiting === 1 ? "job" : "jobs") + " in “" + name + "” again.";
    const done = await T.confirm({
      title: (action === "pause" ? "Pause" : "Resume") + " queue “" + name + "”?", text,
      okLabel: action === "pause" ? "Pause queue" : "Resume queue",
      run: () => T.api("POST", "/queues/" + encodeURIComponent(name) + "/" + action),
    });
    if (done) {
      T.flash("Queue “" + name + "” " + (action === "pause" ? "paused" : "resumed") + ".");
      poller.now();
    }
  }

  async function refresh() {
    let queues;
    try {
      queues = T.items(await T.api("GET", "/queues"));
    } catch (err) {
      if (err.status === 403) {
        notice("Your token may not see queues: they span projects, so this page needs an admin token.");
        T.fill($("queues-body"), T.emptyRow(GROUPS.length + 5, "Not available with this token."));
        T.fill($("queues-stats"));
        return;
      }
      throw err;
    }
    notice("");
    queues.sort((a, b) => a.name.localeCompare(b.name));
    const sum = (states) => queues.reduce((n, q) => n + states.reduce((m, s) => m + ((q.counts || {})[s] || 0), 0), 0);
    const attention = sum(["failed", "interrupted"]);
    const paused = queues.filter((q) => q.paused).length;
    T.stats($("queues-stats"), [
      ["Waiting", T.fmt.int(sum(["queued", "retry_wait"]))],
      ["Running", T.fmt.int(sum(["leased", "running", "pausing", "cancelling"]))],
      ["Paused jobs", T.fmt.int(sum(["paused"]))],
      ["Failed or interrupted", T.fmt.int(attention), attention ? "bad" : null],
      ["Paused queues", paused + " of " + queues.length, paused ? "warn" : null],
    ]);
    T.fill($("queues-body"), queues.length ? queues.map(row) : T.emptyRow(GROUPS.length + 5, "No queues yet."));
  }

  const poller = T.poll(refresh);
})();
