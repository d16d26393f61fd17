/* Sign-in: check the token against the API, keep it in this browser, go where the user was. */
"use strict";

(function () {
  const T = window.tether;
  const form = document.getElementById("login-form");
  const input = document.getElementById("token");
  const error = document.getElementById("login-error");
  const button = document.getElementById("sign-in");
  const $noAuth = document.getElementById("no-auth");
  const HOME = "/jobs";

  /** Where to go after signing in: `next` only if it resolves to a page of this origin, else
   *  home. The answer is an absolute URL and its path never starts with `//`, so nothing can
   *  re-read it as another host (`/.//host` resolves to the path `//host`). */
  function destination() {
    const next = new URLSearchParams(location.search).get("next");
    if (!next) return HOME;
    let url;
    try {
      url = new URL(next, location.origin);
    } catch (err) {
      return HOME;
    }
    const web = url.protocol === "http:" || url.protocol === "https:";
    if (!web || url.origin !== location.origin) return HOME;
    if (url.pathname.startsWith("//") || url.pathname === "/login") return HOME;
    return url.href;
  }

  function showError(text) {
    error.textContent = text;
    error.hidden = false;
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    error.hidden = true;
    const token = input.value.trim();
    if (!token) return showError("Paste a token first.");
    button.disabled = true;
    button.textContent = "Checking…";
    try {
      await T.api("GET", "/jobs", { query: { limit: 1 }, token, noRedirect: true });
      T.token.set(token, document.getElementById("remember").checked);
      location.assign(destination());
    } catch (err) {
      if (err.status === 401) showError("This token was not accepted. Check it and try again.");
      else if (err.status === 403) showError("This token may not read jobs.");
      else showError("Could not reach the API: " + err.message);
      button.disabled = false;
      button.textContent = "Sign in";
    }
  });

  T.api("GET", "/jobs", { query: { limit: 1 }, token: "", noRedirect: true })
    .then(() => {
      $noAuth.hidden = false;
      $noAuth.querySelector("a").href = destination();
    })
    .catch(() => {});

  input.focus();
})();
