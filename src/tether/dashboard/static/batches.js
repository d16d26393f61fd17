/* Job page: the card of a job's provider batches (ctx.batch), waiting or settled: the
 * provider's batch id, items done / failed / in all, money reserved and settled at the batch
 * price beside the same usage at the standard price. job.js draws it on every refresh. */
"use strict";

(function () {
  const T = window.tether;
  const $ = (id) => document.getElementById(id);
  const HEAD = ["Batch", "Provider", "Batch id", "Status", "Done", "Failed", "Items", "Reserved", "Settled", "At standard price"];

  function renderBatches(batches) {
    $("batches-card").hidden = !batches.length;
    if (!batches.length) return;
    const settled = batches.reduce((sum, b) => sum + Number(b.settled_usd || 0), 0);
    const standard = batches.reduce((sum, b) => sum + Number(b.standard_usd || 0), 0);
    $("batches-total").textContent = batches.length + (batches.length === 1 ? " batch" : " batches") +
      (standard ? " · " + T.fmt.usd(settled) + " instead of " + T.fmt.usd(standard) : "");
    T.fill($("job-batches"), T.el("div", { class: "table-scroll" }, T.el("table", { class: "table table-compact" },
      T.el("thead", {}, T.el("tr", {}, HEAD.map((h, i) => T.el("th", { class: i >= 4 ? "num" : "" }, h)))),
      T.el("tbody", {}, batches.map((b) => T.el("tr", { dataset: { batch: b.key } },
        T.el("td", { class: "mono small" }, b.key),
        T.el("td", {}, T.el("span", { class: "muted" }, b.provider + " · "), b.model),
        T.el("td", { class: "mono small" }, b.remote_id || "(not sent yet)"),
        T.el("td", {}, T.badge(b.status)),
        T.el("td", { class: "num" }, T.fmt.int(b.items_done)),
        T.el("td", { class: "num" }, T.fmt.int(b.items_failed)),
        T.el("td", { class: "num" }, T.fmt.int(b.items_total)),
        T.el("td", { class: "num muted" }, T.fmt.usd(b.reserved_usd)),
        T.el("td", { class: "num" }, b.settled_usd === null ? "—" : T.fmt.usd(b.settled_usd)),
        T.el("td", { class: "num muted" }, b.standard_usd === null ? "—" : T.fmt.usd(b.standard_usd))))))));
  }

  T.renderBatches = renderBatches;
})();
