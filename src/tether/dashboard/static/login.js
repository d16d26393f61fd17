/* Sign-in: check the token against the API, keep it in this browser, go where the user was. */
"use strict";

(function () {
  const T = window.tether;
  const form = document.getElementById("login-form");
  const input = document.getElementById("token");
  const error = document.getElementById("login-error");
  const button = document.getElementById("sign-in");
  const $noAuth = document.getElementById("no-auth");

  function destination() {
    const next = new URLSearchParams(location.search).get("next") || "";
    return next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/login") ? next : "/jobs";
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
