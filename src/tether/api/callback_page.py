"""The pages a person sees at a callback URL: a confirmation form (GET) and the outcome.

An email link is opened by a browser with ``GET``, and mail scanners and link previewers
fetch links before anyone clicks them, so ``GET`` only shows the question and a form; the
answer is the form's ``POST`` to the same URL. The pages load nothing, run no script and
send no referrer (the URL holds the token).
"""

from __future__ import annotations

import json
from datetime import datetime
from html import escape
from typing import Any

HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; style-src 'unsafe-inline'; "
                                "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
    "X-Content-Type-Options": "nosniff",
}
"""Every callback page's headers: nothing loaded from anywhere, the token sent to no site."""

_STYLE = ("body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;"
          "padding:0 1rem;color:black}h1{font-size:1.3rem}.prompt{font-size:1.1rem;"
          "white-space:pre-wrap}button{font:inherit;padding:.5rem 1.2rem;margin-right:.5rem}"
          "textarea{width:100%;font:inherit}pre{background:whitesmoke;padding:.5rem;"
          "overflow:auto}.muted{color:dimgray;font-size:.9rem}")


def _page(title: str, body: str) -> str:
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
            f"<body><h1>{escape(title)}</h1>{body}</body></html>")


def confirm(*, job_id: int, signal: str, prompt: str | None, schema: Any,
            expires_at: datetime) -> str:
    """The question and the form that answers it (posted to this same URL)."""
    question = (f'<p class="prompt">{escape(prompt)}</p>' if prompt
                else f"<p>Job {job_id} waits for the signal <b>{escape(signal)}</b>.</p>")
    expected = ("" if schema is None else
                f'<p class="muted">Expected value:</p><pre>{escape(json.dumps(schema, indent=2))}'
                "</pre>")
    return _page(f"Job {job_id} asks", (
        f"{question}{expected}"
        '<form method="post">'
        '<p><label for="value">Comment or value (optional; JSON is sent as JSON)</label>'
        '<textarea id="value" name="value" rows="3"></textarea></p>'
        '<button type="submit" name="approved" value="true">Approve</button>'
        '<button type="submit" name="approved" value="false">Reject</button>'
        "</form>"
        f'<p class="muted">This link answers once and expires {escape(expires_at.isoformat())}'
        ". Approve sends {\"approved\": true, \"value\": ...}, Reject "
        "{\"approved\": false, \"value\": ...}.</p>"))


def outcome(title: str, message: str) -> str:
    """The page after an answer, or in place of the form when the link is refused."""
    return _page(title, f"<p>{escape(message)}</p>")
