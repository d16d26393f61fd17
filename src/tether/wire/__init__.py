"""What every remote interface (REST, MCP, the dashboard's API) speaks alike.

``principal`` (tokens and project scope), ``problems`` (error codes and their HTTP statuses),
``models`` (the JSON shapes of jobs, events, budgets), ``pagination`` (page cursors) and
``idempotency`` (keyed submission). The interfaces import this package and the facade, never
each other.
"""
