"""orjson (de)serialisation of the schema models: one place, so every stage writes the same bytes."""

from __future__ import annotations

from typing import TypeVar

import orjson
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def dumps(model: BaseModel) -> bytes:
    """Serialise a model to compact JSON bytes (None fields kept: the contract is explicit)."""
    return orjson.dumps(model.model_dump(mode="json"))
