"""Provider calls: reserve, call, settle; usage adapters; the simulated provider; prices."""
