"""What the agent integrations share (``tether/integrations/agent_run.py``): the fields left
out of a request's fingerprint, a run's key, and which tools it checkpoints."""

import pytest

from tether.errors import InvalidArgument
from tether.integrations.agent_run import AgentRun, stable


def test_fields_a_run_stamps_afresh_are_left_out_at_any_depth():
    asked = {"messages": [{"parts": [{"content": "hi", "timestamp": "t1"}], "run_id": "r1",
                           "conversation_id": "c1", "instructions": "be brief"}],
             "settings": {"max_tokens": 500}}
    assert stable(asked) == {"messages": [{"parts": [{"content": "hi"}],
                                           "instructions": "be brief"}],
                             "settings": {"max_tokens": 500}}
    later = {"messages": [{"parts": [{"content": "hi", "timestamp": "t2"}], "run_id": "r2",
                           "conversation_id": "c2", "instructions": "be brief"}],
             "settings": {"max_tokens": 500}}
    assert stable(later) == stable(asked)


@pytest.mark.parametrize("key", ["", "a/b", None])
def test_a_run_key_is_a_non_empty_name_without_a_slash(key):
    with pytest.raises(InvalidArgument):
        AgentRun(None, key=key)


def test_max_output_tokens_must_be_positive():
    with pytest.raises(InvalidArgument):
        AgentRun(None, key="k", max_output_tokens=0)


def test_which_tools_are_checkpointed():
    assert not AgentRun(None, key="k").checkpoints("send")
    assert AgentRun(None, key="k", checkpoint_tools={"send"}).checkpoints("send")
    assert not AgentRun(None, key="k", checkpoint_tools={"send"}).checkpoints("look")
    assert AgentRun(None, key="k", checkpoint_tools=True).checkpoints("look")
    assert not AgentRun(None, key="k", checkpoint_tools=False).checkpoints("look")
    one = AgentRun(None, key="k", checkpoint_tools="send")
    assert one.checkpoints("send") and not one.checkpoints("s"), "a name, not its letters"


def test_pydantic_ai_usage_keeps_cached_reads_and_writes_inside_the_input():
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.usage import RequestUsage

    from tether.core.usage import Usage
    from tether.integrations.pydantic_ai import usage_of
    anthropic_like = RequestUsage(input_tokens=2100, output_tokens=25, cache_read_tokens=2000,
                                  cache_write_tokens=60, cache_write_1h_tokens=15,
                                  output_reasoning_tokens=5)
    assert usage_of(ModelResponse(parts=[TextPart("x")], usage=anthropic_like)) == Usage(
        input_tokens=2100, output_tokens=25, cached_input_tokens=2000, reasoning_tokens=5,
        cache_write_tokens=60, cache_write_1h_tokens=15)
    short = RequestUsage(input_tokens=40, output_tokens=1, cache_read_tokens=2000)
    assert usage_of(ModelResponse(parts=[TextPart("x")], usage=short)).input_tokens == 2000
