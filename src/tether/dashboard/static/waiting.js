/* Job page: the card of a waiting job (what it waits for: an answer, a timer, its children)
 * and answering a signal with Approve / Reject. job.js draws it on every refresh. */
"use strict";

(function () {
  const T = window.tether;
  const $ = (id) => document.getElementById(id);
  const base = "/jobs/" + document.body.dataset.jobId;
  let waitKey = null;  // the wait the value field was typed for

  function fact(label, ...value) {
    return [T.el("dt", {}, label), T.el("dd", {}, ...value)];
  }

  const KIND_TITLE = { signal: "Waiting for an answer", timer: "Waiting for a timer", children: "Waiting for its children", provider_batch: "Waiting for a provider batch" };

  function renderWaiting(job) {
    const w = job.state === "waiting" ? job.waiting_for : null;
    $("waiting-card").hidden = !w;
    if (!w) { waitKey = null; return; }
    $("waiting-card").dataset.kind = w.kind;
    $("waiting-title").textContent = KIND_TITLE[w.kind] || "Waiting";
    const facts = [];
    if (w.kind === "signal") {
      facts.push(fact("Signal", T.el("span", { class: "mono", id: "waiting-signal" }, w.signal)));
      facts.push(fact("Deadline", w.wake_at ? T.fmt.time(w.wake_at) + " (" + T.fmt.until(w.wake_at) + "), then signal_timeout" : "none"));
    } else if (w.kind === "timer") {
      facts.push(fact("Wakes", T.fmt.time(w.wake_at) + " (" + T.fmt.until(w.wake_at) + ")"));
    } else if (w.kind === "provider_batch") {
      const b = w.batch || {};
      facts.push(fact("Batch", T.el("span", { class: "mono", id: "waiting-batch" }, b.provider + " " + (b.remote_id || "(not sent yet)"))));
      facts.push(fact("Items", b.items_done + " done, " + b.items_failed + " failed, " + b.items_total + " in all"));
      facts.push(fact("Reserved", "$" + b.reserved_usd + " at the batch price"));
    } else {
      facts.push(fact("Children", T.el("span", { id: "waiting-children" }, w.children_done + " of " + w.children + " done")));
    }
    if (w.since) facts.push(fact("Since", T.fmt.time(w.since)));
    T.fill($("waiting-facts"), facts.flat());
    const prompt = w.kind === "signal" ? w.prompt : null;
    $("waiting-prompt").hidden = !prompt;
    $("waiting-prompt").textContent = prompt || "";
    const hasSchema = w.kind === "signal" && w.schema !== null && w.schema !== undefined;
    $("waiting-schema").hidden = !hasSchema;
    $("waiting-schema").textContent = hasSchema ? "Expected value: " + JSON.stringify(w.schema, null, 2) : "";
    $("answer-form").hidden = w.kind !== "signal";
    renderCallbacks(w);
    const key = job.id + "|" + w.key;
    if (waitKey !== key) {
      waitKey = key;
      $("answer-value").value = "";
      $("callback-made").hidden = true;
      $("callback-url").value = "";
    }
  }

  /** A signal wait's callback links: each one's state and expiry, never its URL (only the
   *  answer that makes one holds it; it is shown once below the list). */
  function renderCallbacks(w) {
    $("callbacks").hidden = w.kind !== "signal";
    const list = w.kind === "signal" ? (w.callbacks || []) : [];
    $("callbacks-none").hidden = list.length > 0;
    T.fill($("callback-list"), list.map((c) => T.el("li", { "data-callback-id": c.id, "data-state": c.state },
      T.el("span", { class: "mono" }, c.id), " " + c.state + ", expires " + T.fmt.time(c.expires_at) +
      (c.used_at ? ", used " + T.fmt.time(c.used_at) : "") + ", made by " + c.issued_by)));
  }

  async function makeCallback() {
    const page = T.jobPage;
    try {
      const made = await T.api("POST", base + "/callbacks", { body: {} });
      $("callback-url").value = made.url;
      $("callback-made").hidden = false;
      $("callback-url").select();
      T.flash("Made callback link " + made.id + ": copy it now, it is shown once.");
    } catch (err) {
      T.flash("Could not make a callback link: " + err.message, "error");
    }
    if (page) page.refresh();
  }

  /** The value field: empty is null, JSON is parsed, anything else is sent as text. */
  function answerValue() {
    const raw = $("answer-value").value.trim();
    if (!raw) return null;
    try { return JSON.parse(raw); } catch (err) { return raw; }
  }

  async function answer(approved) {
    const page = T.jobPage;
    const job = page && page.view.job;
    const w = job && job.waiting_for;
    if (!w || w.kind !== "signal") return;
    const value = answerValue();
    const verb = approved ? "Approve" : "Reject";
    const done = await T.confirm({
      title: verb + " job #" + job.id + "?",
      text: T.el("div", {},
        w.prompt ? T.el("p", {}, T.el("strong", {}, w.prompt)) : null,
        T.el("p", {}, "Sends the signal ", T.el("span", { class: "mono" }, w.signal), " with ",
          T.el("span", { class: "mono" }, JSON.stringify({ approved, value })), "; the job runs on with it.")),
      okLabel: verb, danger: !approved,
      run: () => T.api("POST", base + "/signals/" + encodeURIComponent(w.signal), { body: { value: { approved, value } } }),
    });
    if (done) {
      T.flash((approved ? "Approved" : "Rejected") + " job #" + job.id + ".");
      $("answer-value").value = "";
      page.refresh();
    }
  }
  $("answer-approve").addEventListener("click", () => answer(true));
  $("answer-reject").addEventListener("click", () => answer(false));
  $("answer-form").addEventListener("submit", (ev) => ev.preventDefault());
  $("callback-make").addEventListener("click", makeCallback);

  T.renderWaiting = renderWaiting;
})();
