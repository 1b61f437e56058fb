"""OpenSearch lexical + symbolic store (services mode), behind the same protocols as the SQLite one,
one module per concern: :mod:`.search`, :mod:`.documents`, :mod:`.listing`, :mod:`.names`, :mod:`.provenance`,
:mod:`.admin`; the client, the mappings and the tenant routing in :mod:`.base`."""

from __future__ import annotations

from simplemem.processors.stores.opensearch_lexical.admin import OpenSearchAdmin
from simplemem.processors.stores.opensearch_lexical.base import UNITS_PER_MESSAGE_GUESS
from simplemem.processors.stores.opensearch_lexical.documents import OpenSearchDocuments
from simplemem.processors.stores.opensearch_lexical.listing import OpenSearchListing
from simplemem.processors.stores.opensearch_lexical.names import OpenSearchNames
from simplemem.processors.stores.opensearch_lexical.provenance import OpenSearchProvenance
from simplemem.processors.stores.opensearch_lexical.search import OpenSearchSearch

__all__ = ["UNITS_PER_MESSAGE_GUESS", "OpenSearchLexicalStore"]


class OpenSearchLexicalStore(
    OpenSearchSearch,
    OpenSearchDocuments,
    OpenSearchListing,
    OpenSearchNames,
    OpenSearchProvenance,
    OpenSearchAdmin,
):
    """The whole :class:`~simplemem.processors.stores.protocols.LexicalStore` on two OpenSearch indexes."""
