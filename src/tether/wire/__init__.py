"""What every remote interface (REST, MCP, the dashboard's API) speaks alike.

``principal`` (tokens and project scope), ``problems`` (error codes and their HTTP statuses),
``models`` (the JSON shapes of jobs, events, budgets), ``pagination`` (page cursors) and
``idempotency`` (keyed submission), and the request and answer shapes of each concept. Shapes
and the rules that check them only: what holds state for a request (the live stream hub, the
``?wait=`` slots) lives beside its routes in ``api/``. The interfaces import this package and
the facade, never each other.
"""
