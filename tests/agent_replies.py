"""What the provider server (``tests/provider_server.py``) answers an agent: a model that calls
its function tools ``AGENT:<n>`` times, then answers, on chat completions (streamed too) and
the Responses API. Pure functions of the request body."""

from __future__ import annotations

import json


def agent_chat(body: dict, steps: int, answer: dict) -> dict:
    """The agent's next move, in ``answer`` (a plain chat completion of ``body``): a function
    tool (each in turn) while fewer than ``steps`` tool results came back, then the answer: an
    output tool's call, JSON for a ``json_schema`` response format, or text; arguments filled
    in from the schema (integers: the steps taken)."""
    done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
    tools = [t["function"] for t in body.get("tools") or [] if t.get("type") == "function"]
    work = [t for t in tools if not t["name"].startswith("final_result")]
    outputs = [t for t in tools if t["name"].startswith("final_result")]
    message: dict = {"role": "assistant", "content": None, "refusal": None}
    fmt = body.get("response_format") or {}
    if done < steps and work:
        tool = work[done % len(work)]
        call = (tool["name"], _fill(tool.get("parameters") or {}, done))
    elif outputs:
        call = (outputs[0]["name"], _fill(outputs[0].get("parameters") or {}, done))
    else:
        call = None
        message["content"] = (json.dumps(_fill(fmt["json_schema"]["schema"], done))
                              if fmt.get("type") == "json_schema" else f"done after {done} steps")
    if call:
        message["tool_calls"] = [{"id": f"call_{done}", "type": "function", "function": {
            "name": call[0], "arguments": json.dumps(call[1])}}]
    answer["choices"][0].update(message=message,
                                finish_reason="tool_calls" if call else "stop")
    return answer


def agent_response(body: dict, steps: int, answer: dict) -> dict:
    """``agent_chat`` for the Responses API (``answer``: a plain response to ``body``): a
    ``function_call`` item, then the answer."""
    done = sum(1 for i in body.get("input") or [] if isinstance(i, dict)
               and i.get("type") == "function_call_output")
    work = [t for t in body.get("tools") or [] if t.get("type") == "function"]
    fmt = (body.get("text") or {}).get("format") or {}
    if done < steps and work:
        tool = work[done % len(work)]
        item = {"type": "function_call", "id": f"fc_{done}", "call_id": f"call_{done}",
                "name": tool["name"], "status": "completed",
                "arguments": json.dumps(_fill(tool.get("parameters") or {}, done))}
    else:
        text = (json.dumps(_fill(fmt["schema"], done)) if fmt.get("type") == "json_schema"
                else f"done after {done} steps")
        item = {"type": "message", "id": f"msg_{done}", "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return dict(answer, id=f"resp_{done}", output=[item])


def chunks(answer: dict, usage: bool) -> bytes:
    """A chat completion as the server-sent events of its stream: the text a word a chunk, the
    tool calls, the finish reason, then the usage (``usage``: asked for) and ``[DONE]``."""
    choice = answer["choices"][0]
    message = choice["message"]
    base = {k: answer[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    deltas = [{"role": "assistant"}]
    words = (message.get("content") or "").split(" ")
    deltas += [{"content": w if i == 0 else f" {w}"} for i, w in enumerate(words) if w]
    deltas += [{"tool_calls": [dict(call, index=i)]}
               for i, call in enumerate(message.get("tool_calls") or [])]
    events = [dict(base, choices=[{"index": 0, "delta": d, "finish_reason": None}])
              for d in deltas]
    events.append(dict(base, choices=[{"index": 0, "delta": {},
                                       "finish_reason": choice["finish_reason"]}]))
    if usage:
        events.append(dict(base, choices=[], usage=answer["usage"]))
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"


def _fill(schema: dict, done: int) -> dict:
    kinds = {"integer": done, "number": done, "boolean": True, "string": f"{done} steps"}
    return {name: kinds.get(prop.get("type"), None)
            for name, prop in (schema.get("properties") or {}).items()}
