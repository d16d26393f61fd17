"""Agent frameworks run inside tether jobs: every model request a journaled, budgeted
``ctx.acall``, tools checkpointed on request (docs/agents.md).

``tether.integrations.pydantic_ai`` needs the ``pydantic-ai`` extra and
``tether.integrations.openai_agents`` the ``openai-agents`` extra; tether itself never imports
either, so it stays importable without them.
"""
