"""Sending one webhook: where a URL may point, and the delivery job that POSTs it.

Targets: only http(s); with an allow list, only hosts on it (``example.com`` exactly, or
``*.example.com`` for its subdomains); and, unless ``allow_private``, no host that resolves
to a private, loopback, link-local, multicast, reserved or unspecified address. The host is
resolved and EVERY address checked, at subscription time and again before every try (DNS
may change in between). The check and httpx's own resolution are two lookups, so a host
whose DNS answers change between them (rebinding) could still reach a refused address
within that moment; an allow list of hosts you control closes that gap.

The delivery job (``tether.webhook``) loads its delivery and subscription, signs the stored
body with the subscription's secret and this try's timestamp (``core/webhooks.py``) and
POSTs it with httpx. A 2xx is delivered; anything else (no answer, a refused target, a 3xx,
4xx or 5xx) is a ``TransientError``: the job retries with full-jitter backoff, and after
``max_attempts`` tries it fails, which is the dead letter a re-send starts over from. Every
try is recorded as an attempt, with the status or the error.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import time
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from ..core.retry import RetryPolicy
from ..core.serialize import dumps
from ..core.webhooks import DELIVERY_QUEUE, DELIVERY_TYPE, check_url, headers
from ..errors import MissingExtra, PolicyBlock, TransientError, WebhookTargetRefused
from ..registry import JobType
from ..store.base import Store

Resolver = Callable[[str, int], Sequence[str]]


def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise WebhookTargetRefused(f"webhook host {host!r} does not resolve: {exc}",
                                   argument="url") from None
    return sorted({str(info[4][0]) for info in infos})


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class WebhookSettings:
    """How this app sends webhooks (set the same in every app whose workers run).

    ``allow_private`` (env ``TETHER_WEBHOOK_ALLOW_PRIVATE=1``) lets targets resolve to
    private, loopback and link-local addresses; ``allow_hosts`` (env
    ``TETHER_WEBHOOK_ALLOW_HOSTS``, comma-separated) limits targets to those hosts. A
    sending is tried ``max_attempts`` times, waiting full-jitter backoff from ``backoff_s``
    doubling up to ``backoff_cap_s`` between tries; one try waits ``timeout_s``."""

    allow_private: bool = False
    allow_hosts: tuple[str, ...] = ()
    max_attempts: int = 15
    backoff_s: float = 2.0
    backoff_cap_s: float = 600.0
    timeout_s: float = 10.0

    @classmethod
    def from_env(cls) -> WebhookSettings:
        hosts = os.environ.get("TETHER_WEBHOOK_ALLOW_HOSTS", "")
        return cls(allow_private=_env_flag("TETHER_WEBHOOK_ALLOW_PRIVATE"),
                   allow_hosts=tuple(h.strip().lower() for h in hosts.split(",") if h.strip()))

    def check(self, url: str, *, resolve: Resolver = _resolve) -> list[str]:
        """The addresses ``url``'s host resolves to, all of them allowed; else
        ``WebhookTargetRefused`` naming the first that is not."""
        check_url(url)
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if self.allow_hosts and not any(_host_matches(host, pattern)
                                        for pattern in self.allow_hosts):
            raise WebhookTargetRefused(f"webhook host {host!r} is not on the allow list",
                                       argument="url")
        addresses = resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
        if not addresses:
            raise WebhookTargetRefused(f"webhook host {host!r} has no address", argument="url")
        if not self.allow_private:
            for text in addresses:
                if _internal(text):
                    raise WebhookTargetRefused(
                        f"webhook host {host!r} resolves to {text}, a private, loopback or "
                        "link-local address (allow_private / TETHER_WEBHOOK_ALLOW_PRIVATE)",
                        argument="url")
        return list(addresses)

    def job_type(self, store: Callable[[], Store]) -> JobType:
        """The internal job type that delivers, over the app's ``store``."""
        def deliver(ctx: Any, payload: dict[str, Any]) -> dict[str, Any]:
            return send(store(), self, str(payload["delivery"]), ctx.id)
        return JobType(name=DELIVERY_TYPE, fn=deliver, max_attempts=self.max_attempts,
                       queue=DELIVERY_QUEUE, safe_to_retry=True,
                       retry=RetryPolicy(base_s=self.backoff_s, cap_s=self.backoff_cap_s))


def _host_matches(host: str, pattern: str) -> bool:
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def _internal(text: str) -> bool:
    ip = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return bool(ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
                or ip.is_reserved or ip.is_unspecified)


def send(store: Store, settings: WebhookSettings, delivery: str, job_id: int, *,
         now: Callable[[], float] = time.time) -> dict[str, Any]:
    """One try of ``delivery``: its result (``status``) on a 2xx, else ``TransientError``
    (retried), or ``PolicyBlock`` (failed at once) when its subscription is gone."""
    try:
        import httpx  # the webhooks extra; only a worker that delivers needs it
    except ModuleNotFoundError as exc:
        raise MissingExtra("sending webhooks", "webhooks", module=exc.name) from exc

    found = store.get_delivery(delivery)
    sub = None if found is None else store.get_webhook(found.subscription_id)
    if found is None or sub is None:
        raise PolicyBlock(f"delivery {delivery}: its subscription was deleted")
    body = dumps(found.body).encode()
    began = time.perf_counter()
    status: int | None = None
    error: str | None = None
    try:
        settings.check(found.url)
        sent = headers(sub.secret, delivery, int(now()), body)
        # Streamed and closed unread: only the status matters, and a receiver's body
        # (however large) is never loaded.
        with httpx.stream("POST", found.url, content=body, headers=sent,
                          timeout=settings.timeout_s, follow_redirects=False) as response:
            status = response.status_code
        if not 200 <= status < 300:
            error = f"the receiver answered {status}"
    except WebhookTargetRefused as exc:
        error = exc.message
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    store.record_webhook_attempt(delivery, job_id, status=status, error=error,
                                 duration_ms=(time.perf_counter() - began) * 1000)
    if error is not None:
        raise TransientError(f"delivery {delivery} to {found.url}: {error}", status=status)
    return {"delivery": delivery, "status": status}
