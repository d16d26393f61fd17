/* Queues page, flow control: job types with pause and resume, and concurrency limits with the
 * slots held now (running / limit, in all and per key). Admin tokens only, as the queues. */
"use strict";

(function () {
  const T = window.tether;
  const $ = (id) => document.getElementById(id);
  const RUNNING = ["leased", "running", "pausing", "cancelling"];
  const count = (t, states) => states.reduce((n, s) => n + ((t.counts || {})[s] || 0), 0);

  function typeRow(t) {
    const action = t.paused ? "resume" : "pause";
    const queued = count(t, ["queued"]);
    return T.el("tr", { dataset: { type: t.name, paused: t.paused ? "true" : "false" } },
      T.el("td", { class: "mono" }, T.el("a", { href: "/jobs?type=" + encodeURIComponent(t.name) }, t.name)),
      T.el("td", {}, T.el("span", { class: "badge " + (t.paused ? "badge-paused" : "badge-active") }, t.paused ? "paused" : "active")),
      T.el("td", { class: "num", dataset: { count: "queued" } }, T.fmt.int(queued)),
      T.el("td", { class: "num", dataset: { count: "running" } }, T.fmt.int(count(t, RUNNING))),
      T.el("td", { class: "actions" }, T.el("button", {
        type: "button", class: "btn btn-sm" + (t.paused ? " btn-primary" : ""), dataset: { action, type: t.name },
        onclick: () => toggle(t.name, action, queued),
      }, t.paused ? "Resume" : "Pause")));
  }

  async function toggle(name, action, queued) {
    const text = action === "pause"
      ? "Workers stop claiming “" + name + "” jobs in every queue. " + queued + " queued " + (queued === 1 ? "job stays" : "jobs stay") + " queued; running ones finish normally."
      : "Workers start claiming the " + queued + " queued “" + name + "” " + (queued === 1 ? "job" : "jobs") + " again.";
    const done = await T.confirm({
      title: (action === "pause" ? "Pause" : "Resume") + " job type “" + name + "”?", text,
      okLabel: action === "pause" ? "Pause type" : "Resume type",
      run: () => T.api("POST", "/types/" + encodeURIComponent(name) + "/" + action),
    });
    if (done) {
      T.flash("Job type “" + name + "” " + (action === "pause" ? "paused" : "resumed") + ".");
      poller.now();
    }
  }

  function usageRow(u) {
    const whole = u.key === null;
    const full = u.limit !== null && u.running >= u.limit;
    return T.el("tr", { dataset: { scope: u.scope, name: u.name, key: whole ? "" : u.key } },
      T.el("td", {}, u.scope),
      T.el("td", { class: "mono" }, u.name),
      T.el("td", { class: whole ? "muted" : "mono" }, whole ? "(all)" : u.key),
      T.el("td", { class: "num" + (full ? " full" : ""), dataset: { usage: "" } },
        u.running + " / " + (u.limit === null ? "—" : u.limit)));
  }

  async function refresh() {
    let types, limits;
    try {
      [types, limits] = await Promise.all([T.api("GET", "/types"), T.api("GET", "/limits")]);
    } catch (err) {
      if (err.status === 403) return T.STOP;  // the queues table says why
      throw err;
    }
    $("types-card").hidden = false;
    T.fill($("types-body"), T.items(types).length ? T.items(types).map(typeRow) : T.emptyRow(5, "No job types yet."));
    $("limits-card").hidden = false;
    T.fill($("limits-body"), limits.usage.length ? limits.usage.map(usageRow) : T.emptyRow(4, "No limits. Set one with `tether limit set` or PUT /api/v1/limits/{scope}/{name}."));
  }

  const poller = T.poll(refresh);
})();
