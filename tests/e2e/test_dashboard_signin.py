"""Signing in through ``/login?next=``: only a page of the dashboard's own origin is followed.

Issue 21 defect 4: ``next=/%5Cevil.example/x`` and ``next=/%09/evil.example`` passed a "starts
with one slash" check, and browsers read both as ``//evil.example``. Requests to any other origin
are aborted and recorded, so a redirect off-site shows even though the host does not resolve.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, context, expect, site)

pytestmark = MARKS

HOSTILE = [
    "/\\evil.example/x",      # /%5Cevil.example/x
    "/\t/evil.example",       # /%09/evil.example: the URL parser drops the tab
    "/\\t/evil",
    "//evil.example",
    "https://evil.example",
    "javascript:alert(1)",
    "/.//evil.example",       # a same-origin URL whose path alone reads //evil.example
    "/login?next=//evil.example",
]


def _sign_in_via(context, site, next_value: str):
    off_site: list[str] = []

    def refuse(route):
        off_site.append(route.request.url)
        route.abort()

    context.route(re.compile("^(?!" + re.escape(site.url) + "/)"), refuse)
    page = context.new_page()
    page.goto("/login?next=" + quote(next_value, safe=""))
    page.fill("#token", site.tokens["admin"])
    page.click("#sign-in")
    return page, off_site


@pytest.mark.parametrize("next_value", HOSTILE)
def test_a_hostile_next_goes_to_the_dashboard_home(context, site, next_value):
    page, off_site = _sign_in_via(context, site, next_value)
    expect(page).to_have_url(site.url + "/jobs")
    expect(page.locator("#jobs-body tr[data-job-id]").first).to_be_visible()
    assert off_site == []
    assert page.evaluate("location.origin") == site.url


def test_a_same_origin_next_is_followed_with_its_query(context, site):
    page, off_site = _sign_in_via(context, site, "/jobs?state=failed")
    expect(page).to_have_url(site.url + "/jobs?state=failed")
    expect(page.locator("#f-state")).to_have_value("failed")
    assert off_site == []
