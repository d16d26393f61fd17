"""Durable stores: one protocol (``base.Store``), one backend per folder."""

from .base import Claim, NewJob, Store, open_store

__all__ = ["Claim", "NewJob", "Store", "open_store"]
