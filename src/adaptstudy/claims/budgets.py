"""A chapter's declared budgets (its declaration's `budgets`): what a stage of work may spend, and the days whose
records it pays for, as data beside the claims rather than constants in the code that reads them."""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Budget(BaseModel):
    """A stage of work's CPU budget, declared before it ran: its CPU-hours, and the days whose records it pays for
    (`since` up to, not including, `until`): what a chapter's code reads when a date decides which runs a stage
    made (the chapter names the budget among its protocol's parts, so a changed date fails the ledgers)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    cpu_hours: float = Field(gt=0)
    since: date
    until: date
    pays_for: str

    @model_validator(mode="after")
    def _since_before_until(self):
        if self.until <= self.since:
            raise ValueError(f"budget from {self.since} until {self.until}: `until` must come after `since`")
        return self
