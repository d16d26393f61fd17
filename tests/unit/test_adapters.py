from types import SimpleNamespace as NS

import pytest

from tether import Metered, Usage
from tether.errors import InvalidPayload
from tether.providers.adapters import extract, usage_from


def test_metered_passes_through():
    assert extract(Metered({"a": 1}, Usage(3, 4))) == ({"a": 1}, Usage(3, 4))


def test_openai_chat_completion_shape():
    raw = {"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 50,
                                    "prompt_tokens_details": {"cached_tokens": 40},
                                    "completion_tokens_details": {"reasoning_tokens": 20}}}
    assert extract(raw)[1] == Usage(100, 50, 40, 20)


def test_openai_responses_shape():
    u = NS(input_tokens=10, output_tokens=5, total_tokens=15,
           input_tokens_details=NS(cached_tokens=2), output_tokens_details=NS(reasoning_tokens=1))
    assert usage_from(u) == Usage(10, 5, 2, 1)


def test_anthropic_shape_counts_cache_reads_and_writes_as_input():
    u = NS(input_tokens=10, output_tokens=7, cache_read_input_tokens=30,
           cache_creation_input_tokens=5)
    assert usage_from(u) == Usage(45, 7, 30, 0, cache_write_tokens=5)
    assert usage_from(NS(input_tokens=10, output_tokens=7, cache_read_input_tokens=None,
                         cache_creation_input_tokens=None)) == Usage(10, 7)


def test_anthropic_cache_writes_keep_their_one_hour_part():
    u = {"input_tokens": 10, "output_tokens": 7, "cache_read_input_tokens": 0,
         "cache_creation_input_tokens": 50,
         "cache_creation": {"ephemeral_5m_input_tokens": 30, "ephemeral_1h_input_tokens": 20}}
    assert usage_from(u) == Usage(60, 7, 0, 0, cache_write_tokens=50, cache_write_1h_tokens=20)
    u = NS(input_tokens=1, output_tokens=1, cache_read_input_tokens=None,
           cache_creation_input_tokens=4, cache_creation=NS(ephemeral_1h_input_tokens=None))
    assert usage_from(u) == Usage(5, 1, cache_write_tokens=4)


def test_sdk_objects_are_stored_as_json():
    class Resp:
        usage = NS(prompt_tokens=1, completion_tokens=2)

        def model_dump(self, mode):
            return {"id": "x", "mode": mode}
    value, usage = extract(Resp())
    assert value == {"id": "x", "mode": "json"} and usage == Usage(1, 2)


def test_no_usage_is_a_clear_error():
    with pytest.raises(InvalidPayload):
        extract({"text": "no usage here"})
