"""What faces providers: usage adapters, error classification, the simulated provider, prices."""
