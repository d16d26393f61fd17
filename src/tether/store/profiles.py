"""Price profiles in the store: a job pins the profile it was submitted under, so its calls
are priced by the rates of that day even after the prices change."""

from __future__ import annotations

import json

from ..core.pricing import ModelPrice, PriceProfile
from .transitions import Transitions
from .tx import Row, Tx


class Profiles(Transitions):
    """Saving, reading and applying pinned price profiles."""

    def save_profile(self, profile: PriceProfile) -> str:
        with self._write() as tx:
            self._save_profile(tx, profile, self._now(tx, None))
        return profile.id

    def _save_profile(self, tx: Tx, profile: PriceProfile, now: float) -> None:
        tx.run("save_profile", id=profile.id, name=profile.name,
               effective_date=profile.effective_date,
               body=json.dumps(profile.to_dict(), sort_keys=True), now=now)

    def get_profile(self, profile_id: str) -> PriceProfile | None:
        with self._read() as tx:
            row = tx.one("get_profile", id=profile_id)
        return PriceProfile.from_dict(json.loads(row["body"])) if row else None

    def _pinned_price(self, tx: Tx, job: Row, provider: str,
                      model: str) -> ModelPrice | None:
        if not job.get("price_profile"):
            return None
        row = tx.one("get_profile", id=job["price_profile"])
        if row is None:
            return None
        return PriceProfile.from_dict(json.loads(row["body"])).models.get((provider, model))
