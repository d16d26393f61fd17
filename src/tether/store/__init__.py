"""Durable stores: one protocol (``base.Store``), one backend per folder, ``open_store``."""

from .base import Claim, NewJob, Store
from .open import open_store

__all__ = ["Claim", "NewJob", "Store", "open_store"]
