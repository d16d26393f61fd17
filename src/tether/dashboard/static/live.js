/* tether dashboard: pages kept current by the REST API's live event streams (Server-Sent
 * Events), with polling (common.js, T.poll) only when no stream can be had. */
"use strict";

(function () {
  const T = window.tether;

  /** Read a Server-Sent Events stream of the REST API. EventSource cannot send the bearer
   *  token this dashboard signs in with (and a token in the URL would land in logs), so the
   *  stream is read with fetch. Calls onEvent({id, event, data}) per event and onOpen() once
   *  connected; `done` resolves when the server ends the stream and rejects with ApiError (or
   *  a network error) when it fails. `close()` aborts it. */
  T.stream = function (path, opts) {
    opts = opts || {};
    const ctrl = new AbortController();
    const done = (async () => {
      const headers = { Accept: "text/event-stream" };
      const token = T.token.get();
      if (token) headers.Authorization = "Bearer " + token;
      if (opts.lastEventId) headers["Last-Event-ID"] = String(opts.lastEventId);
      const resp = await fetch(T.url(path, opts.query), { headers, cache: "no-store", signal: ctrl.signal });
      if (resp.status === 401) {
        T.token.clear();
        T.signIn();
      }
      if (!resp.ok || !resp.body) {
        let problem = null;
        try { problem = await resp.json(); } catch (err) { problem = null; }
        throw new T.ApiError(resp.status, problem);
      }
      if (opts.onOpen) opts.onOpen();
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "", msg = { data: [] };
      for (;;) {
        const { value, done: ended } = await reader.read();
        if (ended) return "ended";
        buffer += value;
        let nl;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl).replace(/\r$/, "");
          buffer = buffer.slice(nl + 1);
          if (line === "") {
            if (msg.event || msg.data.length) {
              opts.onEvent({ id: msg.id, event: msg.event || "message", data: JSON.parse(msg.data.join("\n")) });
            }
            msg = { data: [] };
          } else if (!line.startsWith(":")) {
            const at = line.indexOf(":");
            const field = at < 0 ? line : line.slice(0, at);
            const text = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
            if (field === "data") msg.data.push(text);
            else if (field === "id") msg.id = text;
            else if (field === "event") msg.event = text;
          }
        }
      }
    })();
    return { done, close: () => ctrl.abort() };
  };

  /** Keep a page current from a live stream, polling only when no stream can be had.
   *  `refresh` redraws the page (it may return T.STOP); `spec()` names the stream to follow
   *  ({path, query, lastEventId}) or null when there is nothing (more) to follow; `onEvent` sees
   *  each event. Every event is followed by one refresh (never two at once; events arriving
   *  meanwhile share the next one), and there is no timer while the stream is open. A
   *  stream that fails three times in a row (or is refused) hands over to T.poll for good. */
  T.live = function (refresh, { spec, onEvent, onOpen, onFail }) {
    let stream = null, stopped = false, poller = null, failures = 0, running = null, again = false;
    const run = async () => {
      if (running) { again = true; return running; }
      running = (async () => {
        do {
          again = false;
          try {
            if ((await refresh()) === T.STOP) {
              stopped = true;
              if (stream) stream.close();
              T.setLive(false, "Not updating");
              return;
            }
            if (stream) T.setLive(true, "Live · streaming");
          } catch (err) {
            if (err && err.status === 401) return;
            T.setLive(false, err && err.status ? "Error " + err.status : "Offline, retrying");
          }
        } while (again && !stopped);
      })();
      try { await running; } finally { running = null; }
    };
    const fallBack = () => {
      if (onFail) onFail();
      poller = T.poll(refresh);
    };
    const connect = async () => {
      if (stopped || stream || poller) return;
      const want = spec();
      if (!want) return T.setLive(false, "Finished · not updating");
      const current = (stream = T.stream(want.path, {
        query: want.query, lastEventId: want.lastEventId,
        onOpen: () => { failures = 0; if (onOpen) onOpen(); T.setLive(true, "Live · streaming"); },
        onEvent: (msg) => { onEvent(msg); run(); },
      }));
      let error = null;
      try { await current.done; } catch (err) { error = err || new Error("stream failed"); }
      stream = null;
      if (stopped || (error && error.name === "AbortError")) return;
      if (!error) {
        await run();  // the server ended the stream: one last look decides what comes next
        if (!spec()) return T.setLive(false, "Finished · not updating");
      }
      failures++;
      if (failures >= 3 || (error && [403, 404, 405, 429].includes(error.status))) return fallBack();
      setTimeout(connect, 500 * 2 ** failures);
    };
    run().then(connect);
    return {
      async now() {
        if (poller) return poller.now();
        await run();
        connect();
      },
    };
  };
})();
