"""The Python client of the query service (``simplemem serve``): synchronous and asynchronous,
typed by :mod:`simplemem.schemas`, retrying 429 and 503 after ``Retry-After``.

It imports httpx, tenacity and the schemas (pydantic) only: never the pipeline's models
(``tests/test_client.py`` checks it)::

    from simplemem.client import Client, Conversation

    with Client("http://127.0.0.1:8080", key) as memory:
        chat = Conversation("trip-planning", user="Riley")
        memory.send(chat.said("My sister Hana lives in Copenhagen."), chat.answered("Noted!"))
        print(memory.query("Where does Hana live?").context)
"""

from simplemem.client.aio import AsyncClient
from simplemem.client.conversation import Conversation
from simplemem.client.errors import (
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    RateLimited,
    ServiceError,
    Unauthorized,
    Unavailable,
)
from simplemem.client.retry import RetryPolicy
from simplemem.client.sync import Client
from simplemem.schemas.api import (
    Accepted,
    EventsAccepted,
    FeedbackAnswer,
    FeedbackBody,
    KeyCreated,
    MemoryPage,
)
from simplemem.schemas.browse import (
    BrowseCounts,
    BrowseFilter,
    BrowsePage,
    Forgotten,
    MemoryRow,
    Provenance,
    SourceMessage,
)
from simplemem.schemas.events import Role, Turn
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.query import QueryFilters, QueryResult, RetrievedMemory

__all__ = [
    "Accepted",
    "AsyncClient",
    "BrowseCounts",
    "BrowseFilter",
    "BrowsePage",
    "Client",
    "Conflict",
    "Conversation",
    "EventsAccepted",
    "FeedbackAnswer",
    "FeedbackBody",
    "Forbidden",
    "Forgotten",
    "InvalidRequest",
    "KeyCreated",
    "MemoryPage",
    "MemoryRow",
    "MemoryUnit",
    "NotFound",
    "Provenance",
    "QueryFilters",
    "QueryResult",
    "RateLimited",
    "RetrievedMemory",
    "RetryPolicy",
    "Role",
    "ServiceError",
    "SourceMessage",
    "Turn",
    "Unauthorized",
    "Unavailable",
]
