"""Dated price profiles: USD per million tokens, per provider and model (docs/design.md,
"Budgets, prices, the ledger"; docs/providers.md).

A profile is a TOML file (``name``, ``effective_date``, ``[[models]]`` with ``provider``,
``model``, ``input_per_mtok``, ``output_per_mtok``, optional ``cached_input_per_mtok``,
``cache_write_per_mtok`` and ``cache_write_1h_per_mtok``). A user file overrides or adds models
on top of the shipped default. Prices are strings in the file so they become exact
``Decimal``s. An unpriced model is an error, never $0.

Provider batch APIs (OpenAI's Batch API, Anthropic's Message Batches) bill at a discount: a
``[[batch_tiers]]`` entry (``provider``, ``multiplier``, e.g. ``"0.5"``) prices a provider's
batches as every standard rate times the multiplier, and a model entry's ``batch_input_per_mtok``
and ``batch_output_per_mtok`` override that for the model. A provider without a tier has no
batch price (``UnpricedModel``): a batch is never priced at the standard rate by accident.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from functools import cache, cached_property
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any
from collections.abc import Mapping

from ..errors import ConfigurationError, UnpricedModel
from .budget import Reservation, to_decimal
from .usage import Estimate, Usage

MTOK = Decimal(1_000_000)
_OPTIONAL_RATES = ("cached_input_per_mtok", "cache_write_per_mtok", "cache_write_1h_per_mtok")
_BATCH_RATES = ("batch_input_per_mtok", "batch_output_per_mtok")
DEFAULT_PROFILE = Path(__file__).resolve().parent.parent / "providers" / "prices" / "default.toml"


@dataclass(frozen=True)
class ModelPrice:
    provider: str
    model: str
    input_per_mtok: Decimal
    output_per_mtok: Decimal
    cached_input_per_mtok: Decimal | None = None
    cache_write_per_mtok: Decimal | None = None
    cache_write_1h_per_mtok: Decimal | None = None
    batch_input_per_mtok: Decimal | None = None
    batch_output_per_mtok: Decimal | None = None

    def scaled(self, multiplier: Decimal) -> ModelPrice:
        """This price with every rate times ``multiplier``; explicit batch rates win."""
        def times(rate: Decimal | None) -> Decimal | None:
            return None if rate is None else rate * multiplier
        return ModelPrice(
            self.provider, self.model,
            self.batch_input_per_mtok if self.batch_input_per_mtok is not None
            else self.input_per_mtok * multiplier,
            self.batch_output_per_mtok if self.batch_output_per_mtok is not None
            else self.output_per_mtok * multiplier,
            times(self.cached_input_per_mtok), times(self.cache_write_per_mtok),
            times(self.cache_write_1h_per_mtok))

    @cached_property
    def write_rates(self) -> tuple[Decimal, Decimal]:
        """(5-minute, 1-hour) cache-write rates. A rate the profile does not list falls back to
        the next one up the chain (1-hour -> 5-minute -> input): a provider without a
        surcharge bills writes as input, and a missing 1-hour rate never prices them at $0."""
        five = self.cache_write_per_mtok if self.cache_write_per_mtok is not None \
            else self.input_per_mtok
        hour = self.cache_write_1h_per_mtok if self.cache_write_1h_per_mtok is not None else five
        return five, hour

    def cost(self, usage: Usage) -> Decimal:
        cached = usage.cached_input_tokens if self.cached_input_per_mtok is not None else 0
        fresh = usage.input_tokens - cached
        total = cached * (self.cached_input_per_mtok or 0) + usage.output_tokens * \
            self.output_per_mtok
        if usage.cache_write_tokens:
            five, hour = self.write_rates
            hour_tokens = usage.cache_write_1h_tokens
            total += (usage.cache_write_tokens - hour_tokens) * five + hour_tokens * hour
            fresh -= usage.cache_write_tokens
        return (total + fresh * self.input_per_mtok) / MTOK

    def worst_case(self, input_tokens: int, output_tokens: int) -> Decimal:
        """The most these token counts can cost: no cache discount, and every input token at
        the dearest input-side rate (a request may write its whole prompt to the cache, which
        Anthropic bills at up to 2x input), so a settled cost never exceeds its reservation."""
        return (input_tokens * self._dearest_input + output_tokens * self.output_per_mtok) / MTOK

    def reservation(self, estimate: Estimate) -> Reservation:
        """What one call with ``estimate`` is reserved before it is made: its worst case."""
        return Reservation(
            cost_usd=self.worst_case(estimate.input_upper_bound, estimate.max_output_tokens),
            input_tokens=estimate.input_upper_bound, output_tokens=estimate.max_output_tokens)

    @cached_property
    def _dearest_input(self) -> Decimal:
        return max(self.input_per_mtok, *self.write_rates)

    def to_dict(self) -> dict[str, Any]:
        out = {"provider": self.provider, "model": self.model,
               "input_per_mtok": str(self.input_per_mtok),
               "output_per_mtok": str(self.output_per_mtok)}
        for name in (*_OPTIONAL_RATES, *_BATCH_RATES):
            value = getattr(self, name)
            if value is not None:
                out[name] = str(value)
        return out


@dataclass(frozen=True)
class PriceProfile:
    name: str
    effective_date: str
    models: Mapping[tuple[str, str], ModelPrice]
    """Read-only: a profile is shared (the shipped default is parsed once a process)."""
    batch_tiers: Mapping[str, Decimal] = field(default_factory=lambda: MappingProxyType({}))
    """Per provider: what its batch API bills, as a multiplier of the standard rates."""

    @cached_property
    def id(self) -> str:
        """``name@date#hash``: what a job pins; the hash changes when any price does."""
        body = json.dumps(self.to_dict(), sort_keys=True).encode()
        return f"{self.name}@{self.effective_date}#{hashlib.sha256(body).hexdigest()[:10]}"

    def price(self, provider: str, model: str) -> ModelPrice:
        try:
            return self.models[(provider, model)]
        except KeyError:
            raise UnpricedModel(
                f"no price for {provider}/{model} in profile {self.name} "
                f"({self.effective_date}); add it to your price profile (TETHER_PRICE_PROFILE)",
                provider=provider, model=model) from None

    def batch_price(self, provider: str, model: str) -> ModelPrice:
        """What one request of a provider batch costs: the provider's batch tier applied to
        the model's price (explicit ``batch_*`` rates of the model win)."""
        price = self.price(provider, model)
        multiplier = self.batch_tiers.get(provider)
        if multiplier is None and price.batch_input_per_mtok is None:
            raise UnpricedModel(
                f"no batch price for {provider}/{model} in profile {self.name} "
                f"({self.effective_date}); add a [[batch_tiers]] entry for {provider}",
                provider=provider, model=model)
        return price.scaled(multiplier if multiplier is not None else Decimal(1))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"profile": self.name, "effective_date": self.effective_date,
                               "models": [m.to_dict() for _, m in sorted(self.models.items())]}
        if self.batch_tiers:
            out["batch_tiers"] = [{"provider": p, "multiplier": str(m)}
                                  for p, m in sorted(self.batch_tiers.items())]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, base: PriceProfile | None = None) -> PriceProfile:
        name = data.get("profile") or data.get("name")
        date = data.get("effective_date")
        if not name or not date:
            raise ConfigurationError("a price profile needs 'name' and 'effective_date'")
        models = dict(base.models) if base else {}
        for entry in data.get("models", []):
            try:
                price = ModelPrice(
                    provider=str(entry["provider"]), model=str(entry["model"]),
                    input_per_mtok=to_decimal(entry["input_per_mtok"], "input_per_mtok"),
                    output_per_mtok=to_decimal(entry["output_per_mtok"], "output_per_mtok"),
                    **{name: to_decimal(entry[name], name)
                       for name in (*_OPTIONAL_RATES, *_BATCH_RATES)
                       if entry.get(name) is not None})
            except KeyError as exc:
                raise ConfigurationError(f"price profile model entry lacks {exc}") from None
            models[(price.provider, price.model)] = price
        tiers = dict(base.batch_tiers) if base else {}
        for entry in data.get("batch_tiers", []):
            try:
                tiers[str(entry["provider"])] = to_decimal(entry["multiplier"], "multiplier")
            except KeyError as exc:
                raise ConfigurationError(f"price profile batch tier lacks {exc}") from None
        return cls(name=str(name), effective_date=str(date), models=MappingProxyType(models),
                   batch_tiers=MappingProxyType(tiers))


def load_profile(path: str | Path | None = None) -> PriceProfile:
    """The shipped default, overridden and extended by the file at ``path`` if given."""
    base = _shipped()
    if path is None:
        return base
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"cannot read price profile {path}: {exc}") from exc
    return PriceProfile.from_dict(data, base=None if data.get("replace_default") else base)


@cache
def _shipped() -> PriceProfile:
    """The shipped default profile, parsed once: it is part of the installed package, and a
    job that builds a provider per run would otherwise parse it every time."""
    return PriceProfile.from_dict(tomllib.loads(DEFAULT_PROFILE.read_text()))
