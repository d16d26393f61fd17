/* Workers page: live workers, how fresh their heartbeats are, and the jobs they hold. */
"use strict";

(function () {
  const T = window.tether;
  const $ = (id) => document.getElementById(id);
  const LEASED = ["leased", "running", "pausing", "cancelling"];
  const LATE_S = 20;
  const LOST_S = 60;

  function notice(text) {
    $("workers-notice").textContent = text || "";
    $("workers-notice").hidden = !text;
  }

  function health(w) {
    if (w.stopped_at) return "stopped";
    const age = (Date.now() - T.ms(w.last_heartbeat_at)) / 1000;
    return age < LATE_S ? "live" : age < LOST_S ? "late" : "lost";
  }

  function leasedJobs(jobs) {
    if (!jobs || !jobs.length) return T.el("span", { class: "muted" }, "—");
    return T.el("div", { class: "chips" }, jobs.map((j) => T.el("a", {
      class: "chip", href: "/jobs/" + j.id,
      title: j.type + " · " + j.state + (j.lease_expires_at ? " · lease expires " + T.fmt.until(j.lease_expires_at) : ""),
    }, "#" + j.id, T.el("span", { class: "muted" }, " " + j.type +
      (j.lease_expires_at ? " · lease " + T.fmt.until(j.lease_expires_at) : "")))));
  }

  function row(w, held) {
    const status = health(w);
    const leases = w.leases !== undefined ? w.leases : (held || []).length;
    return T.el("tr", { dataset: { worker: w.id, status } },
      T.el("td", { class: "mono small" }, w.id),
      T.el("td", {}, T.el("span", { class: "badge badge-worker-" + status }, status)),
      T.el("td", {}, w.hostname, T.el("span", { class: "muted small" }, " pid " + w.pid)),
      T.el("td", {}, !w.queues || !w.queues.length || w.queues.includes("*")
        ? T.el("span", { class: "muted" }, "all queues") : w.queues.join(", "),
        T.el("div", { class: "muted small worker-types" }, w.types ? "types: " + (w.types.join(", ") || "none") : "every type")),
      T.el("td", { class: "num" }, leases + " / " + w.concurrency),
      T.el("td", {}, leasedJobs(held)),
      T.el("td", { class: "num" }, T.ago(w.last_heartbeat_at, " ago")),
      T.el("td", { class: "num" }, w.stopped_at ? T.el("span", { class: "muted" }, "stopped " + T.fmt.age(w.stopped_at) + " ago") : T.ago(w.started_at)));
  }

  async function leasesByWorker() {
    const lists = await Promise.all(LEASED.map((state) =>
      T.api("GET", "/jobs", { query: { state, limit: 200 } }).then(T.items).catch(() => [])));
    const by = {};
    for (const job of lists.flat()) {
      if (job.lease_owner) (by[job.lease_owner] = by[job.lease_owner] || []).push(job);
    }
    return by;
  }

  async function refresh() {
    let workers;
    try {
      workers = T.items(await T.api("GET", "/workers"));
    } catch (err) {
      if (err.status === 403) {
        notice("Your token may not see workers: they serve every project, so this page needs an admin token.");
        T.fill($("workers-body"), T.emptyRow(8, "Not available with this token."));
        T.fill($("workers-stats"));
        return;
      }
      throw err;
    }
    notice("");
    const held = await leasesByWorker();
    const live = workers.filter((w) => !w.stopped_at);
    const late = live.filter((w) => health(w) !== "live").length;
    const slots = live.reduce((n, w) => n + (w.concurrency || 0), 0);
    const busy = live.reduce((n, w) => n + (w.leases || 0), 0);
    T.stats($("workers-stats"), [
      ["Workers", T.fmt.int(live.length), live.length ? null : "warn"],
      ["Leases held", busy + " of " + slots + " slots"],
      ["Late or lost heartbeats", T.fmt.int(late), late ? "bad" : null],
    ]);
    workers.sort((a, b) => (a.stopped_at ? 1 : 0) - (b.stopped_at ? 1 : 0) || T.ms(b.started_at) - T.ms(a.started_at));
    T.fill($("workers-body"), workers.length ? workers.map((w) => row(w, held[w.id])) : T.emptyRow(8, "No live workers. Start one with tether worker --app MODULE:APP."));
  }

  const poller = T.poll(refresh);
})();
