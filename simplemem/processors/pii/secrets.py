"""Secrets known by their cue: "my password is hunter2", "PIN is 4821", "api key: 3f9a...".

Formats that speak for themselves (``sk_live_``, ``AKIA``...) are in
:mod:`simplemem.processors.pii.secret_formats`. A plain word after a password cue is a secret only when it reads like a noun ("my password is
sunflower", not "... is too short"); in code, an expression after the cue (``os.environ[...]``,
``get_password()``, ``None``) is not a value to hide.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from presidio_analyzer import EntityRecognizer

from simplemem.processors.pii.cues import EXPLICIT, LOOSE, CueRecognizer, Found, cued, token_tag
from simplemem.processors.pii.secret_formats import SECRET

PASSWORD_CUES = ("password", "passwd", "pwd", "pw", "passcode", "pass code")
PHRASE_CUES = (
    "passphrase",
    "pass phrase",
    "seed phrase",
    "recovery phrase",
    "secret phrase",
    "mnemonic",
    "seed words",
    "recovery words",
)
PIN_CUES = (
    "pin",
    "pin code",
    "pin number",
    "door code",
    "gate code",
    "garage code",
    "alarm code",
    "safe code",
    "lock code",
    "locker code",
    "entry code",
    "access code",
    "keypad code",
    "combination",
)
CARD_CODE_CUES = ("cvv", "cvv2", "cvc", "security code")
TOKEN_CUES = (
    "token",
    "access token",
    "auth token",
    "refresh token",
    "api token",
    "bearer",
    "api key",
    "apikey",
    "key",
    "secret",
    "secret key",
    "access key",
    "secret access key",
    "client secret",
    "signing secret",
    "private key",
    "auth",
    "authorization",
    "credential",
    "credentials",
)
LOGIN_CUES = ("login", "credentials", "creds", "username and password", "user and pass")

# Digits, or digit groups as lock combinations are written ("36-24-36").
PIN_VALUE = r"\d+(?:-\d+){0,3}(?![\d-])"
CARD_CODE_VALUE = r"\d{3,4}(?!\d)"
# A bare value ends before a quote, comma, semicolon or a closing bracket; sentence punctuation
# after it is not part of it ("my password is hunter2.").
BARE_VALUE = r"""[^\s"'`,;]*[^\s"'`,;.?:)\]]"""
PHRASE_VALUE = r"""[^\n.,;!?"“”]+"""
TOKEN_VALUE = r"[A-Za-z0-9_\-.+/=~]{15,}[A-Za-z0-9_\-+/=~]"
LOGIN_VALUE = r"""[^\s/:"']+\s*[/:]\s*[^\s"',;]*[^\s"',;.?:]"""

PIN_MIN_DIGITS = 4
PIN_MAX_DIGITS = 8
PHRASE_MIN_WORDS = 3
PHRASE_MAX_WORDS = 24
# Tags of words that describe a password rather than being one: "is too short", "is expired",
# "is on a sticky note", "is Priya's" (names stay). A phrase of several words may open with an
# adjective ("correct horse battery staple"), so only the function-word tags bar it.
FUNCTION_TAGS = frozenset("RB RBR RBS IN DT PDT VBN VBD VBG MD PRP PRP$ TO CC EX WDT WP WP$ WRB".split())
PROPER_TAGS = frozenset(("NNP", "NNPS"))
DESCRIPTIVE_TAGS = FUNCTION_TAGS | PROPER_TAGS | frozenset("JJ JJR JJS VB VBZ VBP".split())
CODE_LITERALS = frozenset("none null nil true false undefined str string bytes int env required".split())
SECRET_STEMS = ("pass", "pwd", "token", "secret", "key", "auth", "cred")
# Calls, subscripts, literals, attribute paths (``os.environ[...]``, ``settings.api_key``); token
# material such as ``hvs.x7If...`` has digits in its parts.
CODE_EXPRESSION = re.compile(r"[()\[\]{}]|^[A-Za-z_]+(?:\.[A-Za-z_]+)+$")
# A quoted value that names where the secret comes from: "${DB_PASSWORD}", "{{ vault.pw }}".
TEMPLATE_REFERENCE = re.compile(r"\$\{|\{\{|%\(")
FILE_PATH = re.compile(r"^(?:~|\.{1,2})?/")


def _looks_like_code(text: str) -> bool:
    """An expression or a variable named after the secret (``password = new_password``)."""
    lowered = text.lower()
    if CODE_EXPRESSION.search(text) or lowered in CODE_LITERALS:
        return True
    return not any(c.isdigit() for c in text) and any(stem in lowered for stem in SECRET_STEMS)


def _has_strong_shape(text: str) -> bool:
    """Digits, symbols or inner capitals: not an English word."""
    return any(c.isdigit() or not c.isalnum() for c in text) or any(c.isupper() for c in text[1:])


def _password(found: Found) -> bool:
    text = found.text
    if found.quoted:
        return not TEMPLATE_REFERENCE.search(text) and text.lower() not in CODE_LITERALS
    if _looks_like_code(text):
        return False
    if text.isdigit():
        return len(text) >= PIN_MIN_DIGITS
    if _has_strong_shape(text):
        return True
    return found.connected and not _descriptive(found, DESCRIPTIVE_TAGS)


def _descriptive(found: Found, tags: frozenset[str]) -> bool:
    """Whether the value's first word is tagged as a describing word. The small model tags some
    lower-case nouns as proper nouns ("as marigold"); a name is only a name when capitalised."""
    tag = token_tag(found.artifacts, found.start)
    if tag in PROPER_TAGS and not found.text[:1].isupper():
        return False
    return tag in tags


def _phrase(found: Found) -> bool:
    words = found.text.split()
    if found.quoted:
        return True
    if not words or len(words) > PHRASE_MAX_WORDS or not found.connected:
        return False
    return not _descriptive(found, FUNCTION_TAGS if len(words) >= PHRASE_MIN_WORDS else DESCRIPTIVE_TAGS)


def _machine_token(found: Found) -> bool:
    """Key material: letters and digits mixed; not an expression, not a file path (``~/.ssh/id_rsa``)."""
    text = found.text
    if CODE_EXPRESSION.search(text) or FILE_PATH.match(text):
        return False
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def _any(found: Found) -> bool:
    return True


def _login_pair(found: Found) -> bool:
    """``user / password``: the user part is a name or address ("Last login: 10:22" is a time)."""
    user = re.split(r"\s*[/:]", found.text, maxsplit=1)[0]
    return any(c.isalpha() for c in user)


def _pin(found: Found) -> bool:
    return PIN_MIN_DIGITS <= sum(c.isdigit() for c in found.text) <= PIN_MAX_DIGITS


def secret_cue_recognizers() -> list[EntityRecognizer]:
    """One recognizer per kind of value: passwords, passphrases, PINs and card codes, tokens, logins."""
    kinds: list[tuple[str, str, Callable[[Found], bool]]] = [
        ("Password", cued(PASSWORD_CUES, BARE_VALUE, LOOSE, quoted=True, aside=True), _password),
        ("Phrase", cued(PHRASE_CUES, PHRASE_VALUE, EXPLICIT, quoted=True, aside=True), _phrase),
        ("Pin", cued(PIN_CUES, PIN_VALUE, aside=True), _pin),
        ("CardCode", cued(CARD_CODE_CUES, CARD_CODE_VALUE), _any),
        ("Token", cued(TOKEN_CUES, TOKEN_VALUE, LOOSE, quoted=True), _machine_token),
        ("Login", cued(LOGIN_CUES, LOGIN_VALUE, aside=True), _login_pair),
    ]
    return [
        CueRecognizer(SECRET, pattern, accept, name=f"{kind}CueRecognizer") for kind, pattern, accept in kinds
    ]
