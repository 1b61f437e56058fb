"""How the embedded lexical store writes a unit and its context: a unit's document (its fields as
JSON, deflated with its context and a fixed dictionary) and a context's stored bytes (compressed, with
the header its statements share). Every format ever written stays readable: a document or context
says by its first byte how it was written.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

import orjson

from simplemem.schemas.memory import MemoryUnit

DOC_COMPRESSION = 6  # zlib level: documents this short gain next to nothing from a higher one


# A unit document is a few hundred bytes: zlib alone spends most of them on the field names. Deflate
# primed with this dictionary (the names and frequent values) writes them as references; its id and
# tenant are in their own columns and left out. Documents written with
# it start with DICT_DOC. Never change these bytes: the documents already written need them as they
# are (another dictionary would need another first byte).
DOC_DICTIONARY = (
    b'"text":"kind":"event_time":"persons":"entities":"keywords":"topic":"location":"source_ids":'
    b'"stated_at":"speaker":"role":"session_id":"status":"context_ids":"superseded_by":"supersedes":'
    b'"has_vector":"archived_in":"assistant""user""fact""code""abstract""archived"false,true,'
    b"\"assistant, item  of '(first)(second)(third)(fourth)(fifth)"
    b" the and to of a in for is you your with that can this or on be are"
)
DICT_DOC = b"\x02"
# A unit with a context is deflated with its context before that dictionary: a statement's words are
# mostly its message's, and deflate writes them as references into it. Reading such a document needs
# its context's text.
CONTEXT_DOC = b"\x03"
# The second dictionary (documents written since file version 16, first bytes DICT_DOC_2 and
# CONTEXT_DOC_2): the first, then what the store's own documents repeat, nearest last: the fields in
# the order a document writes them with the speakers coreference names, the end of a document, the
# opening of a statement and of a long answer's list item. Never change these bytes either.
DOC_DICTIONARY_2 = DOC_DICTIONARY + (
    b'"persons":["User","Assistant"],"keywords":["],"persons":["User"],"keywords":["],'
    b'"persons":["Assistant","User"],"keywords":["],"persons":["Assistant"],"keywords":[],'
    b'"source_ids":["],"context_ids":["],"has_vector":false}'
    b'{"text":"User: {"text":"Assistant, item  (first) (second) (third) (fourth) (fifth), last) of '
    b'{"text":"Assistant: '
)
DICT_DOC_2 = b"\x04"
CONTEXT_DOC_2 = b"\x05"
# (dictionary edition, deflated with a context) -> a document's first byte
_FIRST_BYTES = {
    (1, False): DICT_DOC,
    (1, True): CONTEXT_DOC,
    (2, False): DICT_DOC_2,
    (2, True): CONTEXT_DOC_2,
}
# a document's first byte -> its dictionary, and whether its context precedes it
_DICTIONARIES = {
    DICT_DOC: (DOC_DICTIONARY, False),
    CONTEXT_DOC: (DOC_DICTIONARY, True),
    DICT_DOC_2: (DOC_DICTIONARY_2, False),
    CONTEXT_DOC_2: (DOC_DICTIONARY_2, True),
}


# A context shared by HEADER_MIN_UNITS or more units of one write (a message's statements) keeps a
# header: the JSON of the first one's fields but its own words (when it was said, by whom, in which
# session, from which messages, whom it names). What it holds is read from the message or describes
# it, so forgetting one statement leaves nothing in it that the message's text, kept for the others,
# does not; it leaves with the context. The documents of the statements are deflated with it too and
# write those fields as references into it (the date and session alone are a large part of a short
# document). A stored context with a header opens with HEADED_CONTEXT
# (a zlib stream never does), then the header's length in two bytes, then header and text deflated
# as one.
HEADED_CONTEXT = b"\x01"
_UNIT_OWN_FIELDS = frozenset({"text", "keywords", "topic"})
# the units of one write that share a context before it gets a header (the header costs about as
# much as two documents save)
HEADER_MIN_UNITS = 3
_MAX_HEADER = 0xFFFF


@dataclass(frozen=True)
class StoredContext:
    """A context as read back: its text, and the header its units' documents are deflated with."""

    text: str
    header: bytes = b""


def _dictionary(context: StoredContext | None, names: bytes = DOC_DICTIONARY_2) -> bytes:
    """What a document is deflated with: the context and its header, then the field names (the
    nearest: deflate reaches 32 KB back, so a longer context gives up its beginning, never the names)."""
    if context is None:
        return names
    return context.text.encode("utf-8") + context.header + names


def _fields(unit: MemoryUnit) -> dict[str, object]:
    """The unit's document fields: without its context (in ``contexts``), its id and tenant (columns)
    and the fields that hold their defaults."""
    return unit.model_dump(mode="json", exclude={"context", "id", "tenant_id"}, exclude_defaults=True)


# A keyword is nearly always a word of its unit's text and the topic its first keyword: a document names such a keyword by its word's place in the lowered text
# (``"keywords":[3,7]``) and leaves out a topic that is the first keyword. A document whose keywords
# hold no number is as older documents were (its topic, if any, written out).
# Never change how the words are split: the documents written read their keywords back by it.
_WORD = re.compile(r"\w+")


def _keyword_places(fields: dict[str, object]) -> dict[str, object]:
    """``fields`` with each keyword that is a word of the text as that word's first place."""
    keywords = fields.get("keywords")
    if not isinstance(keywords, list) or not keywords:
        return fields
    places: dict[str, int] = {}
    for i, word in enumerate(_WORD.findall(str(fields.get("text", "")).lower())):
        places.setdefault(word, i)
    coded = [places.get(k, k) for k in keywords]
    if not any(isinstance(c, int) for c in coded):
        return fields
    out = {**fields, "keywords": coded}
    if fields.get("topic") == keywords[0]:
        out.pop("topic", None)
    else:
        out["topic"] = fields.get("topic")  # none is written out: absent means the first keyword
    return out


def _keyword_words(fields: dict[str, object]) -> dict[str, object]:
    """The inverse of :func:`_keyword_places`."""
    coded = fields.get("keywords")
    if not isinstance(coded, list) or not any(isinstance(c, int) for c in coded):
        return fields
    words = _WORD.findall(str(fields["text"]).lower())
    keywords = [words[c] if isinstance(c, int) else c for c in coded]
    return {"topic": keywords[0], **fields, "keywords": keywords}


def shared_header(unit: MemoryUnit) -> bytes:
    """The fields of ``unit`` its message's other statements likely share (:data:`HEADED_CONTEXT`)."""
    header = orjson.dumps({k: v for k, v in _fields(unit).items() if k not in _UNIT_OWN_FIELDS})
    return header if len(header) <= _MAX_HEADER else b""  # its length is kept in two bytes


def encode_doc(unit: MemoryUnit, context: StoredContext | None = None, *, edition: int = 2) -> bytes:
    """The unit as stored (:func:`_fields`), deflated with :func:`_dictionary` of its context as
    stored (``context``, its header included): on an assistant history 626 B of JSON a unit became
    153 B with the context alone (316 B with zlib alone, which the file's older documents keep);
    reading one back costs a few microseconds. ``edition`` 1 writes with the first dictionary, as
    files did before version 16."""
    if unit.context and context is None:
        context = StoredContext(unit.context)
    first = _FIRST_BYTES[(edition, context is not None)]
    names, _ = _DICTIONARIES[first]
    deflate = zlib.compressobj(
        DOC_COMPRESSION, zlib.DEFLATED, -zlib.MAX_WBITS, zdict=_dictionary(context, names)
    )
    return first + deflate.compress(orjson.dumps(_keyword_places(_fields(unit)))) + deflate.flush()


def stored_context(text: str, header: bytes = b"") -> bytes:
    """A context as ``contexts`` keeps it: compressed (the message prose of a long answer is most of
    what the store holds of it), with its header if it has one."""
    body = zlib.compress(header + text.encode("utf-8"), DOC_COMPRESSION)
    return HEADED_CONTEXT + len(header).to_bytes(2, "big") + body if header else body


def open_context(stored: bytes | str | None) -> StoredContext | None:
    """A stored context's text and header: files written before compression hold the text as text."""
    if stored is None or isinstance(stored, str):
        return None if stored is None else StoredContext(stored)
    if stored[:1] != HEADED_CONTEXT:
        return StoredContext(zlib.decompress(stored).decode("utf-8"))
    size = int.from_bytes(stored[1:3], "big")
    raw = zlib.decompress(stored[3:])
    return StoredContext(raw[size:].decode("utf-8"), raw[:size])


def stored_header(stored: bytes | str) -> bytes:
    """A stored context's header alone (only its first bytes are inflated)."""
    if isinstance(stored, str) or stored[:1] != HEADED_CONTEXT:
        return b""
    return zlib.decompressobj().decompress(stored[3:], int.from_bytes(stored[1:3], "big"))


def context_text(stored: bytes | str | None) -> str | None:
    opened = open_context(stored)
    return None if opened is None else opened.text


def doc_json(doc: bytes, context: StoredContext | None = None) -> bytes:
    """A stored doc's JSON: deflated with its context, its header and the dictionary
    (:data:`CONTEXT_DOC` or :data:`CONTEXT_DOC_2`: the context is needed), with the dictionary alone
    (:data:`DICT_DOC`, :data:`DICT_DOC_2`),
    zlib-compressed (files written before the dictionary), or as it is (before compression: it opens
    with "{")."""
    first = doc[:1]
    if first == b"{":
        return doc
    if first in _DICTIONARIES:
        names, with_context = _DICTIONARIES[first]
        if with_context and context is None:
            raise ValueError("this document is deflated with its context: its text is needed")
        inflate = zlib.decompressobj(
            -zlib.MAX_WBITS, zdict=_dictionary(context if with_context else None, names)
        )
        return inflate.decompress(doc[1:]) + inflate.flush()
    return zlib.decompress(doc)


def read_unit(
    uid: str, tenant_id: str, doc: bytes, context: StoredContext | None, *, with_context: bool = True
) -> MemoryUnit:
    """A stored unit: its document, its id and tenant (older documents hold them too), its context
    (read to inflate the document; kept on the unit ``with_context``)."""
    text = None if context is None else context.text
    fields = _keyword_words(orjson.loads(doc_json(doc, context)))
    fields.setdefault("id", uid)
    fields.setdefault("tenant_id", tenant_id)
    if text is not None and with_context:
        fields["context"] = text
    return MemoryUnit.model_validate(fields)
