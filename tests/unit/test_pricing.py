from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether import Estimate, Usage
from tether.core.estimate import CallEstimate, estimate_cost
from tether.core.pricing import PriceProfile, load_profile
from tether.errors import ConfigurationError, InvalidPayload, UnpricedModel


def test_default_profile_is_dated_and_covers_the_major_providers():
    p = load_profile()
    d = p.to_dict()
    assert d["profile"] == "tether-default" and d["effective_date"]
    providers = {m["provider"] for m in d["models"]}
    assert {"openai", "anthropic", "google", "simulated"} <= providers
    for m in d["models"]:
        assert Decimal(m["input_per_mtok"]) > 0 and Decimal(m["output_per_mtok"]) > 0
    assert p.price("openai", "gpt-4o-mini").input_per_mtok == Decimal("0.15")


def test_unpriced_model_is_an_error_never_zero():
    with pytest.raises(UnpricedModel) as info:
        load_profile().price("openai", "gpt-99")
    assert info.value.code == "unpriced_model"


def test_user_profile_overrides_and_adds(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('name = "acme"\neffective_date = "2026-11-01"\n'
                 '[[models]]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
                 'input_per_mtok = "0.10"\noutput_per_mtok = "0.40"\n'
                 '[[models]]\nprovider = "local"\nmodel = "llama"\n'
                 'input_per_mtok = "0.01"\noutput_per_mtok = "0.02"\n')
    p = load_profile(f)
    assert p.name == "acme" and p.price("openai", "gpt-4o-mini").input_per_mtok == Decimal("0.10")
    assert p.price("local", "llama").output_per_mtok == Decimal("0.02")
    assert p.price("anthropic", "claude-sonnet-4-5")  # inherited from the default
    assert p.id != load_profile().id and p.id.startswith("acme@2026-11-01#")
    assert load_profile().price("openai", "gpt-4o-mini").input_per_mtok != Decimal("0.10")


def test_profiles_are_read_only_so_the_shipped_one_can_be_shared():
    shared = load_profile()
    assert load_profile() is shared
    with pytest.raises(TypeError):
        shared.models[("local", "free")] = shared.price("openai", "gpt-4o-mini")  # type: ignore[index]
    assert ("local", "free") not in load_profile().models


def test_bad_profile_is_a_clear_error(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('name = "x"\n[[models]]\nprovider = "a"\n')
    with pytest.raises(ConfigurationError):
        load_profile(f)


def test_cost_uses_cached_rate_for_cached_tokens_only():
    price = load_profile().price("openai", "gpt-4o-mini")
    cost = price.cost(Usage(input_tokens=1_000_000, output_tokens=1_000_000,
                            cached_input_tokens=400_000))
    assert cost == Decimal("0.09") + Decimal("0.030") + Decimal("0.60")
    assert price.worst_case(1_000_000, 1_000_000) == Decimal("0.75")


def test_anthropic_cache_writes_cost_more_than_input_and_reads_less():
    price = load_profile().price("anthropic", "claude-sonnet-4-5")
    assert (price.cache_write_per_mtok, price.cache_write_1h_per_mtok) == (Decimal("3.75"),
                                                                           Decimal("6.00"))
    # 1M input: 100k read, 300k written (100k of them for an hour), 600k fresh; 10k out.
    usage = Usage(input_tokens=1_000_000, output_tokens=10_000, cached_input_tokens=100_000,
                  cache_write_tokens=300_000, cache_write_1h_tokens=100_000)
    assert price.cost(usage) == (Decimal("0.03") + Decimal("0.75") + Decimal("0.60")
                                 + Decimal("1.80") + Decimal("0.15"))
    # the worst case prices every input token at the dearest input-side rate (1-hour write)
    assert price.worst_case(1_000_000, 10_000) == Decimal("6.00") + Decimal("0.15")


def test_missing_cache_write_rates_fall_back_up_the_chain(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('name = "acme"\neffective_date = "2026-11-01"\nreplace_default = true\n'
                 '[[models]]\nprovider = "p"\nmodel = "plain"\n'
                 'input_per_mtok = "2"\noutput_per_mtok = "4"\n'
                 '[[models]]\nprovider = "p"\nmodel = "five"\n'
                 'input_per_mtok = "2"\noutput_per_mtok = "4"\ncache_write_per_mtok = "2.5"\n')
    p = load_profile(f)
    writes = Usage(input_tokens=1_000_000, cache_write_tokens=1_000_000,
                   cache_write_1h_tokens=400_000)
    assert p.price("p", "plain").cost(writes) == Decimal(2)  # no surcharge: billed as input
    assert p.price("p", "five").cost(writes) == Decimal("2.5")  # 1-hour falls back to 5-minute
    assert p.price("p", "five").to_dict()["cache_write_per_mtok"] == "2.5"
    assert "cache_write_1h_per_mtok" not in p.price("p", "five").to_dict()


@given(st.sampled_from(sorted(load_profile().models)), st.integers(0, 10**6),
       st.integers(0, 10**5), st.data())
def test_no_usage_within_the_estimate_costs_more_than_its_worst_case(key, tin, tout, data):
    """The reservation promise: whatever mix of fresh, cached and cache-written input a call
    reports, if its token counts are within the estimate its cost is within the worst case."""
    price = load_profile().models[key]
    used_in = data.draw(st.integers(0, tin))
    cached = data.draw(st.integers(0, used_in))
    written = data.draw(st.integers(0, used_in - cached))
    hour = data.draw(st.integers(0, written))
    usage = Usage(input_tokens=used_in, output_tokens=data.draw(st.integers(0, tout)),
                  cached_input_tokens=cached, cache_write_tokens=written,
                  cache_write_1h_tokens=hour)
    assert price.cost(usage) <= price.worst_case(tin, tout)


def test_a_calls_reservation_is_its_estimates_worst_case():
    price = load_profile().price("anthropic", "claude-sonnet-4-5")
    est = Estimate(input_tokens=12_000, max_output_tokens=800)
    r = price.reservation(est)
    assert (r.input_tokens, r.output_tokens, r.calls) == (12_000, 800, 1)
    assert r.cost_usd == price.worst_case(12_000, 800) > price.cost(
        Usage(input_tokens=12_000, output_tokens=800))  # cache writes may bill above input


def test_usage_parts_cannot_exceed_their_whole():
    with pytest.raises(InvalidPayload):
        Usage(input_tokens=10, cached_input_tokens=6, cache_write_tokens=5)
    with pytest.raises(InvalidPayload):
        Usage(input_tokens=10, cache_write_tokens=2, cache_write_1h_tokens=3)


def test_estimate_byte_length_is_the_input_upper_bound():
    text = "héllo wörld ✓"
    assert Estimate(input_text=text, max_output_tokens=5).input_upper_bound == len(text.encode())
    assert Estimate(input_tokens=7, max_output_tokens=5).input_upper_bound == 7
    with pytest.raises(InvalidPayload):
        Estimate(max_output_tokens=5)
    with pytest.raises(InvalidPayload):
        Usage(input_tokens=-1)


def test_estimate_cost_from_call_estimates():
    est = estimate_cost([CallEstimate("simulated", "sim-small", 10, 1000, 100)], load_profile())
    assert est.calls == 10 and est.cost_usd == Decimal(10) * (
        Decimal(1000) * Decimal("0.50") + Decimal(100) * Decimal("1.50")) / 10**6


def test_batch_tier_halves_every_rate_of_openai_and_anthropic():
    profile = load_profile()
    for provider, model in (("openai", "gpt-4o-mini"), ("anthropic", "claude-sonnet-4-5")):
        std, batch = profile.price(provider, model), profile.batch_price(provider, model)
        assert batch.input_per_mtok == std.input_per_mtok / 2
        assert batch.output_per_mtok == std.output_per_mtok / 2
        assert batch.cached_input_per_mtok == std.cached_input_per_mtok / 2
        usage = Usage(input_tokens=1000, output_tokens=500)
        assert batch.cost(usage) == std.cost(usage) / 2


def test_batch_price_is_overridable_and_never_defaults_to_standard(tmp_path):
    with pytest.raises(UnpricedModel):
        load_profile().batch_price("google", "gemini-2.5-pro")
    path = tmp_path / "p.toml"
    path.write_text('name = "mine"\neffective_date = "2026-01-01"\n'
                    '[[batch_tiers]]\nprovider = "openai"\nmultiplier = "0.6"\n'
                    '[[models]]\nprovider = "openai"\nmodel = "gpt-4o"\n'
                    'input_per_mtok = "2.50"\noutput_per_mtok = "10.00"\n'
                    'batch_input_per_mtok = "1.00"\n')
    mine = load_profile(path)
    assert mine.batch_price("openai", "gpt-4o").input_per_mtok == Decimal("1.00")
    assert mine.batch_price("openai", "gpt-4o").output_per_mtok == Decimal("6.0000")
    assert mine.batch_price("anthropic", "claude-haiku-4-5").input_per_mtok == Decimal("0.5")
    again = PriceProfile.from_dict(mine.to_dict())
    assert again.id == mine.id and again.batch_tiers == mine.batch_tiers
