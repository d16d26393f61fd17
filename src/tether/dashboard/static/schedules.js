/* Schedules page: every schedule the token may see, its next run, live, with pause, resume
   and delete. */
"use strict";

(function () {
  const T = window.tether;
  const $ = (id) => document.getElementById(id);
  const COLS = 9;

  T.fill($("schedules-head"), T.el("tr", {}, T.el("th", {}, "Name"), T.el("th", {}, "Cron"),
    T.el("th", {}, "Time zone"), T.el("th", {}, "Job type"), T.el("th", {}, "Project"),
    T.el("th", {}, "Next run (your time)"), T.el("th", {}, "Last run"), T.el("th", {}, "Status"),
    T.el("th", {})));

  function notice(text) {
    $("schedules-notice").textContent = text || "";
    $("schedules-notice").hidden = !text;
  }

  function when(iso) {
    if (!iso) return T.el("span", { class: "muted" }, "—");
    return T.el("time", { datetime: new Date(T.ms(iso)).toISOString(), title: T.fmt.time(iso) },
      T.fmt.time(iso), T.el("span", { class: "muted small" }, " (" + T.fmt.until(iso) + ")"));
  }

  function button(s, action, label, extraClass) {
    return T.el("button", {
      type: "button", class: "btn btn-sm" + (extraClass ? " " + extraClass : ""),
      dataset: { action, schedule: s.name }, onclick: () => act(s, action),
    }, label);
  }

  function row(s) {
    return T.el("tr", { dataset: { schedule: s.name, paused: s.paused ? "true" : "false" } },
      T.el("td", { class: "mono" }, T.el("div", { class: "truncate", title: s.name }, s.name)),
      T.el("td", { class: "mono", dataset: { field: "cron" } }, s.cron),
      T.el("td", { dataset: { field: "timezone" } }, s.timezone),
      T.el("td", { class: "mono" }, s.type),
      T.el("td", {}, s.project),
      T.el("td", { dataset: { field: "next-run" } }, s.paused
        ? T.el("span", { class: "muted" }, "paused") : when(s.next_run_at)),
      T.el("td", { dataset: { field: "last-run" } }, s.last_job_id
        ? T.el("a", { href: "/jobs/" + s.last_job_id, title: "The job of the last tick" }, when(s.last_run_at))
        : when(s.last_run_at)),
      T.el("td", {}, T.el("span", { class: "badge " + (s.paused ? "badge-paused" : "badge-active") },
        s.paused ? "paused" : "active")),
      T.el("td", { class: "actions" },
        s.paused ? button(s, "resume", "Resume", "btn-primary") : button(s, "pause", "Pause"),
        " ", button(s, "delete", "Delete", "btn-danger")));
  }

  const WORDS = {
    pause: ["Pause", "No tick of “%s” is enqueued until it is resumed; ticks that fall in the pause are skipped.", "paused"],
    resume: ["Resume", "“%s” runs again from its next tick after now.", "resumed"],
    delete: ["Delete", "“%s” is deleted; the jobs it already enqueued stay.", "deleted"],
  };

  async function act(s, action) {
    const [verb, text, past] = WORDS[action];
    const path = "/schedules/" + encodeURIComponent(s.name);
    const done = await T.confirm({
      title: verb + " schedule “" + s.name + "”?", text: text.replace("%s", s.name),
      okLabel: verb + " schedule", danger: action === "delete",
      run: () => action === "delete" ? T.api("DELETE", path) : T.api("POST", path + "/" + action),
    });
    if (done) {
      T.flash("Schedule “" + s.name + "” " + past + ".");
      poller.now();
    }
  }

  async function refresh() {
    const schedules = T.items(await T.api("GET", "/schedules"));
    notice("");
    const paused = schedules.filter((s) => s.paused).length;
    const upcoming = schedules.filter((s) => !s.paused && s.next_run_at)
      .sort((a, b) => T.ms(a.next_run_at) - T.ms(b.next_run_at));
    T.stats($("schedules-stats"), [
      ["Schedules", T.fmt.int(schedules.length)],
      ["Paused", T.fmt.int(paused), paused ? "warn" : null],
      ["Next tick", upcoming.length ? T.fmt.until(upcoming[0].next_run_at) : "—"],
    ]);
    T.fill($("schedules-body"), schedules.length ? schedules.map(row) : T.emptyRow(COLS, "No schedules yet."));
  }

  const poller = T.poll(refresh);
})();
