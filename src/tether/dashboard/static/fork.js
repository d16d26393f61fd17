/* Job page: "Fork from stage…". The stage picker lists the job's
 * checkpointed stages in order (and the stage it stopped in); the fork reuses every stage
 * before the one picked, so their calls are not paid again. A request sent again after its
 * answer was lost carries the same Idempotency-Key, so it cannot make a second fork. */
"use strict";

(function () {
  const T = window.tether;
  const page = T.jobPage;
  const button = document.getElementById("fork-job");
  if (!page || !button) return;

  /** Stage names in run order: the checkpoints by position, then the stage the job is in. */
  function stageNames(job, stages) {
    const names = (stages || []).slice().sort((a, b) => a.position - b.position).map((c) => c.stage);
    if (job.stage && !names.includes(job.stage)) names.push(job.stage);
    return names;
  }

  function parsePayload(text) {
    if (!text.trim()) return undefined;
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new Error("The payload is not valid JSON: " + err.message);
    }
  }

  button.addEventListener("click", async () => {
    const job = page.view.job;
    const names = stageNames(job, page.view.stages);
    if (!names.length) return;
    const pick = T.el("select", { class: "input", id: "fork-stage", name: "from_stage" },
      names.map((name, i) => T.el("option", { value: name, selected: i === Math.min(1, names.length - 1) }, (i + 1) + ". " + name)));
    const reuse = T.el("span", { class: "field-hint", id: "fork-reuse" });
    const explain = () => {
      const before = names.slice(0, names.indexOf(pick.value));
      reuse.textContent = before.length ? "Reused from job #" + job.id + ", not paid again: " + before.join(", ") + "." : "Nothing is reused: the fork runs every stage.";
    };
    pick.addEventListener("change", explain);
    explain();
    const payload = T.el("textarea", { class: "input", id: "fork-payload", name: "payload", rows: "6", spellcheck: "false" });
    payload.value = JSON.stringify(job.payload, null, 2);
    let created = null;
    let sent = null;
    let key = null;
    const done = await T.confirm({
      title: "Fork job #" + job.id + " from a stage",
      text: "A new job of type " + job.type + " runs from the stage you pick with the payload below. The finished stages before it and their calls are carried over: not run, paid or counted again. The fork keeps this job's budget limits.",
      extra: [T.el("div", { class: "stack" },
        T.el("label", { class: "field" }, T.el("span", { class: "field-label" }, "Run from stage"), pick, reuse),
        T.el("label", { class: "field" }, T.el("span", { class: "field-label" }, "Payload (JSON; empty: this job's)"), payload))],
      okLabel: "Fork job",
      run: async () => {
        const body = { from_stage: pick.value };
        const value = parsePayload(payload.value);
        if (value !== undefined) body.payload = value;
        if (JSON.stringify(body) !== sent) {  // a retry of the same fork reuses its key
          sent = JSON.stringify(body);
          key = T.newKey("dashboard-fork-");
        }
        created = await T.api("POST", "/jobs/" + job.id + "/fork",
          { body, headers: { "Idempotency-Key": key } });
      },
    });
    if (done && created) window.location.assign("/jobs/" + created.id);
  });
})();
