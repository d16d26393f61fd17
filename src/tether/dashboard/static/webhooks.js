/* Webhooks page: subscribe a URL to event kinds (the secret is shown once), delete a
   subscription, and follow deliveries live: their state, attempts, and a re-send. */
"use strict";

(function () {
  const T = window.tether;
  const $ = (id) => document.getElementById(id);
  const KINDS = ["job.succeeded", "job.failed", "job.budget_paused", "job.waiting_signal",
    "budget.threshold_crossed", "schedule.missed"];
  const PENDING = new Set(["queued", "running", "retry_wait"]);
  const open = new Set();          // deliveries whose attempts are shown
  const attempts = new Map();      // delivery id -> its attempts, as last read

  T.fill($("wh-kinds"), T.el("legend", { class: "field-label" }, "Events"), KINDS.map((k) =>
    T.el("label", { class: "check" }, T.el("input", { type: "checkbox", name: "kinds", value: k,
      checked: k === "job.failed" }), " ", k)));
  T.fill($("webhooks-head"), T.el("tr", {}, ["Id", "Project", "URL", "Events", "Description",
    "Created", ""].map((h) => T.el("th", {}, h))));
  T.fill($("deliveries-head"), T.el("tr", {}, ["Delivery", "Event", "State", "Sends", "URL",
    "Created", ""].map((h) => T.el("th", {}, h))));

  function notice(id, text, kind) {
    $(id).textContent = text || "";
    $(id).className = "notice" + (kind ? " notice-" + kind : "");
    $(id).hidden = !text;
  }

  $("webhook-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const kinds = [...document.querySelectorAll("input[name=kinds]:checked")].map((c) => c.value);
    const body = { url: $("wh-url").value.trim(), kinds, description: $("wh-description").value };
    if ($("wh-project").value.trim()) body.project = $("wh-project").value.trim();
    $("webhook-error").hidden = true;
    try {
      const sub = await T.api("POST", "/webhooks", { body });
      notice("webhook-secret", "Webhook " + sub.id + " added. Its signing secret, shown only now: " + sub.secret);
      $("webhook-form").reset();
      poller.now();
    } catch (err) {
      $("webhook-error").textContent = (err.data && (err.data.detail || err.data.title)) || String(err);
      $("webhook-error").hidden = false;
    }
  });

  function subRow(s) {
    return T.el("tr", { dataset: { webhook: s.id } },
      T.el("td", { class: "mono" }, s.id),
      T.el("td", {}, s.project || T.el("span", { class: "muted" }, "every project")),
      T.el("td", { class: "mono" }, T.el("div", { class: "truncate", title: s.url }, s.url)),
      T.el("td", {}, s.kinds.join(", ")),
      T.el("td", {}, s.description),
      T.el("td", {}, T.fmt.time(s.created_at)),
      T.el("td", { class: "actions" }, T.el("button", {
        type: "button", class: "btn btn-sm btn-danger", dataset: { action: "delete" },
        onclick: () => remove(s) }, "Delete")));
  }

  async function remove(s) {
    const done = await T.confirm({
      title: "Delete webhook " + s.id + "?", okLabel: "Delete webhook", danger: true,
      text: "No new deliveries are made for it; its deliveries stay visible.",
      run: () => T.api("DELETE", "/webhooks/" + encodeURIComponent(s.id)),
    });
    if (done) { T.flash("Webhook " + s.id + " deleted."); poller.now(); }
  }

  function stateOf(d) {
    return d.dead ? T.el("span", { class: "badge badge-failed", dataset: { state: "dead" } }, "dead")
      : T.badge(d.state);
  }

  function deliveryRows(d) {
    const rows = [T.el("tr", { dataset: { delivery: d.id } },
      T.el("td", { class: "mono" }, T.el("button", {
        type: "button", class: "btn btn-link", dataset: { action: "attempts" },
        title: "Show the attempts", onclick: () => toggle(d) }, d.id)),
      T.el("td", {}, d.kind),
      T.el("td", {}, stateOf(d)),
      T.el("td", {}, T.el("a", { href: "/jobs/" + d.job_id, title: "The delivery job" }, String(d.sends))),
      T.el("td", { class: "mono" }, T.el("div", { class: "truncate", title: d.url }, d.url)),
      T.el("td", {}, T.fmt.time(d.created_at)),
      T.el("td", { class: "actions" }, PENDING.has(d.state) ? null : T.el("button", {
        type: "button", class: "btn btn-sm", dataset: { action: "resend" },
        onclick: () => resend(d) }, "Re-send")))];
    if (open.has(d.id)) {
      const list = attempts.get(d.id) || [];
      rows.push(T.el("tr", { class: "attempts", dataset: { attemptsOf: d.id } }, T.el("td", { colspan: 7 },
        list.length ? T.el("ol", {}, list.map((a) => T.el("li", { dataset: { status: a.status === null ? "none" : String(a.status) } },
          T.fmt.time(a.at) + ": " + (a.status !== null ? "HTTP " + a.status : "no answer") +
          (a.error ? " (" + a.error + ")" : "") + ", " + Math.round(a.duration_ms) + " ms")))
          : T.el("span", { class: "muted" }, "No attempt yet."))));
    }
    return rows;
  }

  async function toggle(d) {
    if (open.has(d.id)) open.delete(d.id); else open.add(d.id);
    poller.now();
  }

  async function resend(d) {
    const done = await T.confirm({
      title: "Re-send delivery " + d.id + "?", okLabel: "Re-send",
      text: "It is sent again with the same webhook-id and body; a receiver that deduplicates by id ignores a copy it already has.",
      run: () => T.api("POST", "/deliveries/" + encodeURIComponent(d.id) + "/resend"),
    });
    if (done) { T.flash("Delivery " + d.id + " queued again."); poller.now(); }
  }

  async function refresh() {
    const [subs, deliveries] = await Promise.all([T.api("GET", "/webhooks"),
      T.api("GET", "/deliveries", { query: { limit: 100 } })]);
    const found = T.items(deliveries);
    await Promise.all([...open].map(async (id) => {
      attempts.set(id, (await T.api("GET", "/deliveries/" + encodeURIComponent(id))).attempts);
    }));
    notice("webhooks-notice", found.some((d) => d.dead)
      ? "Some deliveries are dead: every attempt failed. Fix the receiver, then re-send them." : "");
    const items = T.items(subs);
    T.fill($("webhooks-body"), items.length ? items.map(subRow) : T.emptyRow(7, "No webhooks yet."));
    T.fill($("deliveries-body"), found.length ? found.flatMap(deliveryRows) : T.emptyRow(7, "No deliveries yet."));
  }

  const poller = T.poll(refresh);
})();
