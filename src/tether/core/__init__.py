"""Pure logic: no I/O, no imports from the store, worker or interfaces."""
