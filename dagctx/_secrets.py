"""Secrets: which files are secret-bearing by their name, and redaction of secrets in text.

:func:`secret_file_reason` names the files dagctx withholds by default: environment files
(``.env``, ``.env.*``, ``*.env``, ``.envrc``), private keys and keystores (``*.pem``,
``*.key``, ``id_rsa`` and the other SSH key names, ``*.p12``, ``*.jks``, ...), certificates
(``*.crt``, ``*.cer``, ``*.der``), credential files (``.npmrc``, ``.pypirc``, ``.netrc``,
``.git-credentials``, ``.pgpass``, ``.htpasswd``, ``.aws/credentials``,
``.docker/config.json``) and Terraform state.

:func:`redact` replaces secrets found in text: whole PEM private key blocks (the body
lines emptied, so line numbers stay the file's), and the values found by the
format-specific detectors of ``detect-secrets`` (AWS, GitHub, GitLab, Slack, Stripe, npm,
PyPI, OpenAI, JWT, basic-auth URLs, ... and its keyword detector for ``password = "..."``
style assignments of a long value; with ``unquoted=True``, for text that is not code —
command output, notes — also its config-file form, ``NAME=value`` and ``name: value``
without quotes, which is what ``cat .env`` or ``env`` prints). Detectors run only on
candidate lines (a long run of
token characters that mixes letters and digits and is not a hex hash, or names a
credential; a ``user:password@`` URL; a private key header), found by ``bytes.find``
in byte masks of the text (no regex step per character), so a file without any costs a
few scans; the
detect-secrets import (about 0.4 s) happens at the first candidate line. Nothing here
uses the network (its verification step is never called). Its high-entropy detectors are
not used: they flag every commit hash and lock-file checksum.

Imports nothing from dagctx.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

_ENV = "environment file"
_KEY = "private key file"
_KEYSTORE = "keystore"
_CERT = "certificate"
_CREDS = "credentials file"

_NAMES = {
    ".envrc": _ENV,
    "id_rsa": _KEY, "id_dsa": _KEY, "id_ecdsa": _KEY, "id_ed25519": _KEY,
    "id_ecdsa_sk": _KEY, "id_ed25519_sk": _KEY,
    ".npmrc": _CREDS, ".pypirc": _CREDS, ".netrc": _CREDS, "_netrc": _CREDS,
    ".git-credentials": _CREDS, ".pgpass": _CREDS, ".htpasswd": _CREDS,
    ".dockercfg": _CREDS, "terraform.tfstate": _CREDS, "terraform.tfstate.backup": _CREDS,
}  # fmt: skip
_SUFFIXES = {
    ".env": _ENV,
    ".pem": _KEY, ".key": _KEY, ".p8": _KEY, ".ppk": _KEY,
    ".p12": _KEYSTORE, ".pfx": _KEYSTORE, ".jks": _KEYSTORE, ".keystore": _KEYSTORE,
    ".bks": _KEYSTORE, ".kdbx": _KEYSTORE,
    ".crt": _CERT, ".cer": _CERT, ".der": _CERT,
    ".tfstate": _CREDS,
}  # fmt: skip
_PATHS = {".aws/credentials": _CREDS, ".docker/config.json": _CREDS}

_KEYWORD_KIND = "Secret Keyword"  # detect-secrets' KeywordDetector.secret_type
#: What a redacted value becomes: ``[REDACTED <kind>]``.
REDACTED = "[REDACTED {}]"

_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----\r?\n(.*?)\r?\n-----END \1-----",
    re.DOTALL,
)
_DIGITS = frozenset(string.digits)
# A user:password@ URL and a private key header (one regex each: each starts with a literal,
# which the regex engine finds fast; their alternation is searched a character at a time).
_URL_CREDENTIALS = re.compile(r"://[^\s/:@]+:[^\s/@]+@")
_KEY_HEADER = re.compile(r"BEGIN [A-Z ]*PRIVATE KEY")


def _mask(chars: str) -> bytes:
    """A ``bytes.translate`` table: b"a" for the ASCII ``chars``, b" " for every other byte."""
    table = bytearray(b" " * 256)
    for char in chars.encode("ascii"):
        table[char] = ord("a")
    return bytes(table)


# The runs _candidate_lines looks for, as byte masks of a text's ASCII bytes.
_PART_MASK = _mask(string.ascii_letters + string.digits + "+=")
_PART_RUN = b"a" * 16
_RUN_MASK = _mask(string.ascii_letters + string.digits + "+/=_.-")
_RUN_RUN = b"a" * 20
_RUN_END = re.compile(r"[A-Za-z0-9+/=_.\-]*")
_KEYWORD = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred")
_KEYWORD_LOWER = re.compile(r"pass|pwd|secret|token|key|auth|cred")  # 10x faster on lower()
_WORDS = (b"pass", b"pwd", b"secret", b"token", b"key", b"auth", b"cred")  # _KEYWORD's
# Regex detectors of detect-secrets left out: an address is not a secret, and private key
# blocks are redacted whole here (the detector flags only the header line).
_NOT_USED = frozenset({"IPPublicDetector", "PrivateKeyDetector"})


def secret_file_reason(path: str) -> str | None:
    """Why the file at ``path`` (relative, "/"-separated) is secret-bearing, or None."""
    name = path.rpartition("/")[2].lower()
    reason = _NAMES.get(name)
    if reason is not None:
        return reason
    if name == ".env" or name.startswith(".env."):
        return _ENV
    dot = name.rfind(".")
    if dot > 0 or (dot == 0 and name.count(".") > 1):
        reason = _SUFFIXES.get(name[dot:])
        if reason is not None:
            return reason
    lowered = path.lower()
    for tail, reason in _PATHS.items():
        if lowered == tail or lowered.endswith("/" + tail):
            return reason
    return None


def _regex_finder(denylist: Iterable[re.Pattern[str]]) -> Callable[[str], Iterator[str]]:
    """A finder yielding, for each match of a detector's regexes, the secret: its longest
    group of 6 or more characters that does not start the match (the value of a
    ``key = "value"`` or ``user:password@`` pattern); else the whole match without
    surrounding quotes, spaces, ``=`` and ``:``, extended to the end of its run of token
    characters (a token whose group is only its prefix, such as GitHub's ``ghp``, or
    whose pattern stops early, such as a JWT's)."""
    patterns = tuple(denylist)

    def find(line: str) -> Iterator[str]:
        for pattern in patterns:
            for match in pattern.finditer(line):
                inside = [
                    match.group(n)
                    for n in range(1, (pattern.groups or 0) + 1)
                    if match.start(n) > match.start() and len(match.group(n) or "") >= 6
                ]
                if inside:
                    yield max(inside, key=len)
                    continue
                end = _RUN_END.match(line, match.end()).end()  # type: ignore[union-attr]
                yield line[match.start() : end].strip(" \t=:\"'")

    return find


@functools.cache
def _detectors() -> tuple[tuple[str, Callable[[str], Iterable[str]]], ...]:
    """(kind, finder) for each detect-secrets detector used, imported on first call."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    found: list[tuple[str, Callable[[str], Iterable[str]]]] = []
    classes: dict[str, Any] = get_mapping_from_secret_type_to_class()
    for kind, cls in sorted(classes.items()):
        denylist = getattr(cls, "denylist", None)
        if cls.__name__ not in _NOT_USED and isinstance(denylist, (list, tuple)):
            found.append((kind, _regex_finder(denylist)))
    found.append((_KEYWORD_KIND, _keyword_finder(unquoted=False)))
    return tuple(found)


@functools.cache
def _keyword_finder(unquoted: bool) -> Callable[[str], Iterator[str]]:
    """detect-secrets' keyword detector: quoted assignments (``key = "value"``), or with
    ``unquoted`` its config-file patterns (``KEY=value``, ``key: value``). Each of its
    quoted patterns (``QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP``) matches a quote
    character, so without ``unquoted`` a line holding none is not handed to it."""
    from detect_secrets.filters.heuristic import (
        is_potential_uuid,
        is_sequential_string,
        is_templated_secret,
    )
    from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, KeywordDetector

    analyze: Any = KeywordDetector().analyze_string
    denylist = CONFIG_DENYLIST_REGEX_TO_GROUP if unquoted else None

    def keyword(line: str) -> Iterator[str]:
        if not unquoted and "'" not in line and '"' not in line and "`" not in line:
            return
        # Values long enough to be a credential, and not what detect-secrets' heuristics
        # call placeholders (sequences, UUIDs, templates).
        for value in analyze(line, denylist):
            if (
                len(value) >= 12
                and not is_sequential_string(value)
                and not is_potential_uuid(value)
                and not is_templated_secret(value)
            ):
                yield value

    return keyword


def _keyword_lines(lines: list[str]) -> list[str]:
    """The lines that name a credential (``password``, ``secret``, ``token``, ``key``,
    ...): only those can hold a keyword detector's find."""
    return [line for line in lines if _KEYWORD.search(line)]


def _line_at(text: str, at: int) -> tuple[int, int]:
    """(start, end) of the line of ``text`` holding offset ``at``."""
    end = text.find("\n", at)
    return text.rfind("\n", 0, at) + 1, len(text) if end == -1 else end


def _candidate_lines(text: str) -> list[str]:
    """The distinct lines of ``text`` a detector could flag, in order: lines with a
    ``user:password@`` URL or a private key header; with a part of a token (16 or more
    letters and digits between ``/ . _ -``) that holds a digit and is not all hex (hex is
    what hashes, commit ids and lock-file checksums are made of); or with a run of 20
    token characters and a word naming a credential (``key``, ``token``, ``secret``, ...).

    Token characters are ASCII, so the runs are searched in the text's ASCII bytes (one
    byte per character, "?" for any other) through byte masks (:func:`_part_lines`,
    :func:`_credential_lines`), with no regex step per character.
    """
    data = text.encode("ascii", "replace")
    starts = _part_lines(text, data)
    _credential_lines(text, data, starts)
    for needle, pattern in (("://", _URL_CREDENTIALS), ("PRIVATE KEY", _KEY_HEADER)):
        if needle in text:  # what every match of the pattern holds
            for match in pattern.finditer(text):
                first, end = _line_at(text, match.start())
                starts[first] = end
    return list(dict.fromkeys(text[first : starts[first]] for first in sorted(starts)))


def _part_lines(text: str, data: bytes) -> dict[int, int]:
    """{line start: line end} of the lines of ``text`` (``data``: its ASCII bytes) with a
    whole run of 16 or more ``[A-Za-z0-9+=]`` that holds a digit, is not all digits and
    not all hex.

    The run's characters become "a" in a byte mask of the text (``bytes.translate``, every
    other byte " "), where ``bytes.find`` finds the runs; a search resumes after the run
    (or the line) just looked at, so each run is found at its first character.
    """
    starts: dict[int, int] = {}
    parts = data.translate(_PART_MASK)
    at = parts.find(_PART_RUN)
    while at != -1:
        end = parts.find(b" ", at + len(_PART_RUN))
        end = len(parts) if end == -1 else end
        part = text[at:end]
        if part.strip(string.hexdigits) and not part.isdigit() and not _DIGITS.isdisjoint(part):
            first, end = _line_at(text, at)  # the rest of this line need not be looked at
            starts[first] = end
        at = parts.find(_PART_RUN, end)
    return starts


def _credential_lines(text: str, data: bytes, starts: dict[int, int]) -> None:
    """Add to ``starts`` the lines of ``text`` (``data``: its ASCII bytes) with a run of
    20 ``[A-Za-z0-9+/=_.-]`` (found in a byte mask, as :func:`_part_lines` does) and a
    word naming a credential (any case). The search for each starts at the line of the
    other's last find, so it steps over the lines that hold only one (most lines with a
    long run name no credential, and the reverse)."""
    runs = data.translate(_RUN_MASK)
    at = runs.find(_RUN_RUN)
    if at == -1:
        return
    named_at = _word_finder(data.lower()) if text.isascii() else None
    lowered = text.lower() if named_at is None else ""
    while at != -1:
        first, end = _line_at(text, at)
        if named_at is not None:
            named = named_at(first)
        else:  # any case of a word, as the regex finds it (a Kelvin sign is a K)
            found = (
                _KEYWORD_LOWER.search(lowered, first)
                if len(lowered) == len(text)  # offsets kept
                else _KEYWORD.search(text, first)
            )
            named = -1 if found is None else found.start()
        if named == -1:
            return
        if named < end:  # the run's line names a credential
            starts[first] = end
            at = runs.find(_RUN_RUN, end)
        else:  # the next credential word is on a later line: the next run from there
            at = runs.find(_RUN_RUN, text.rfind("\n", 0, named) + 1)


def _word_finder(lowered: bytes) -> Callable[[int], int]:
    """A function giving the offset of the first credential word (:data:`_WORDS`) in
    ``lowered`` at or after an offset (-1: none), for offsets that do not decrease: each
    word's next place is kept and searched again (``bytes.find``) only once passed."""
    ahead = [lowered.find(word) for word in _WORDS]

    def named_at(at: int) -> int:
        best = -1
        for k, place in enumerate(ahead):
            if 0 <= place < at:
                place = ahead[k] = lowered.find(_WORDS[k], at)
            if place >= 0 and (best < 0 or place < best):
                best = place
        return best

    return named_at


def redact(text: str, *, unquoted: bool = False) -> tuple[str, Counter[str]]:
    """``text`` with its secrets replaced, and how many of each kind were replaced;
    ``unquoted`` also finds credential-named assignments without quotes (``KEY=value``:
    for command output and notes, not for code, where it would flag expressions).

    A PEM private key block keeps its BEGIN and END lines; its first body line becomes
    ``[REDACTED private key]`` and the other body lines empty. Every occurrence of a
    value a detector found becomes ``[REDACTED <kind>]``. The result has the same number
    of lines as ``text``.
    """
    found: Counter[str] = Counter()
    if "PRIVATE KEY" in text:

        def blank(match: re.Match[str]) -> str:
            found["private key"] += 1
            body_lines = match.group(2).count("\n")
            block = match.group(0)
            head, tail = block.split("\n", 1)[0], block.rsplit("\n", 1)[1]
            return "\n".join([head, REDACTED.format("private key"), *[""] * body_lines, tail])

        text = _PEM.sub(blank, text)
    candidates = _candidate_lines(text)
    if not candidates:
        return text, found
    # Each detector scans the candidate lines once, joined (its patterns do not span
    # lines); the keyword detector, the costly one, scans only the lines naming a credential.
    joined, named = ["\n".join(candidates)], _keyword_lines(candidates)
    finders = [*_detectors()]
    if unquoted:
        finders.append((_KEYWORD_KIND, _keyword_finder(unquoted=True)))
    values: dict[str, str] = {}
    for kind, find in finders:
        for part in named if kind == _KEYWORD_KIND else joined:
            for value in find(part):
                if value and "\n" not in value and len(value) >= 4:
                    values.setdefault(value, kind)
    for value in sorted(values, key=len, reverse=True):
        count = text.count(value)
        if count:
            text = text.replace(value, REDACTED.format(values[value]))
            found[values[value]] += count
    return text, found


def describe(found: Counter[str]) -> str:
    """``found`` as a phrase: ``"2 secrets redacted (GitHub Token, AWS Access Key)"``."""
    total = sum(found.values())
    kinds = ", ".join(kind for kind, _ in found.most_common())
    return f"{total} secret{'s' if total != 1 else ''} redacted ({kinds})"
