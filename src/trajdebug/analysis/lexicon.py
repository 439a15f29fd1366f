"""Every English word list and phrase pattern the analysis reads, as data, in one place.

The analysis reads values (numbers, dates, ids) the same in every language; a
few of its rules also read words: a range written "between 5 and 10", a tool
error that blames its input ("not found", "invalid"), a user saying "yes, go
ahead".  Those words live here, in one `Lexicon`, so the language boundary of
the analysis is one module and the count of its phrases is visible
(`Lexicon.count`).  The stages pass `ENGLISH` along (`Options.lexicon`); the
modules that read words take it as a default argument.

No other module under ``trajdebug/analysis`` may compile a pattern of English
words (``tests/test_lexicon.py`` scans for them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType


_NUM = r"(\d[\d,]*(?:\.\d+)?)"


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The words and phrases of one language the analysis reads (a pattern or a set of words per rule)."""

    # -- Messages: how a failure, an error or a tool result is worded

    range_: re.Pattern[str]
    """A range of numbers in a message ("300-900", "between 5 and 10"): the bounds of a check. "From 40 to
    400" is a change, not a range."""

    stopwords: frozenset[str]
    """Words too common to say what a failure misses (four letters and up)."""

    short_stopwords: frozenset[str]
    """Three-letter function words, which ``stopwords`` (four letters and up) leaves in."""

    boolean_words: frozenset[str]
    """Words that are a yes/no or an empty value, never a record's identity."""

    default_words: frozenset[str]
    """Words a store answers with for what it does not know or hold (a status ``unknown``, ``n/a``): the same for
    every key it is asked about, so no answer of its own."""

    status_text: re.Pattern[str]
    """An HTTP status written in text ("HTTP/1.1 503", "status code: 404")."""

    exit_status: re.Pattern[str]
    """A process exit status written in text ("exited with code 2", "returncode=1")."""

    error_line: re.Pattern[str]
    """A line of text that reports an error ("ValueError: ...", "FATAL: ...")."""

    input_caused: re.Pattern[str]
    """Words of a tool error that blame what it was given ("not found", "invalid", "missing")."""

    check_text: re.Pattern[str]
    """Words of an error raised by a check that judged its input ("check failed", "expected", "mismatch")."""

    check_types: re.Pattern[str]
    """Words of an exception type raised by a check (``ValidationError``, ``AssertionError``)."""

    format_codes: frozenset[str]
    """Letters-and-digits words that name a format, codec, protocol or type (``utf-8``, ``base64``, ``sha256``,
    ``HTTP2``), never a record a failure is about; compared as written, so a capitalised form is listed only
    when the format is written so (``SHA256``) and ``H2``, ``S3`` stay a record's codes."""

    environment: re.Pattern[str]
    """Errors of the tool or its environment; any other tool error is taken as a rejection of its arguments.
    A refusal ("refund refused", "not on this account") is a rejection: only a refused connection, a 5xx
    status or a service said to be down or overloaded speaks of the environment ("van overloaded" rejects
    the load it was given; "Overloaded", "server overloaded" speak of the service)."""

    state_error: re.Pattern[str]
    """Words of an error that says the object is in the wrong state for the call ("already", "no longer")."""

    truncation: re.Pattern[str]
    """A marker that a tool's output was cut ("[truncated]", a trailing ellipsis)."""

    result_count: re.Pattern[str]
    """A count of results a tool's output states ("12 results", "3 rows")."""

    # -- Conversations: what a user or an assistant says

    options: re.Pattern[str]
    """A prompt that lists the options a model must choose from ("classify as billing, shipping or other")."""

    option_count: re.Pattern[str]
    """A count of options an assistant states ("3 available models")."""

    available: re.Pattern[str]
    """Words that restrict a count to what is available."""

    lowest: re.Pattern[str]
    """Words that claim the cheapest option."""

    highest: re.Pattern[str]
    """Words that claim the most expensive option."""

    yes: re.Pattern[str]
    """A user's confirmation ("yes", "go ahead", "sounds good")."""

    no: re.Pattern[str]
    """Words that take a confirmation back or hold it ("not yet", "wait", "instead")."""

    cannot: re.Pattern[str]
    """An assistant saying it cannot do something ("I can't", "we are unable to")."""

    all_done: re.Pattern[str]
    """An assistant claiming every item was handled ("all of them were updated")."""

    reversal: re.Pattern[str]
    """A user changing their mind ("actually", "never mind", "on second thought")."""

    handoff_words: re.Pattern[str]
    """A user asking for a person ("a human", "your supervisor")."""

    # -- Names: English words in tool names and keys

    read_tool: re.Pattern[str]
    """Tool names that read rather than change (``get_order``, ``search_flights``)."""

    write_tool: re.Pattern[str]
    """Tool names that change something (``cancel_order``, ``update_address``)."""

    handoff_tool: re.Pattern[str]
    """Tool names that hand the conversation to a person (``transfer_to_human``)."""

    identifier_path: re.Pattern[str]
    """Fields that name or identify rather than claim: call ids the model mints, tool (or sub-agent) names
    it picks from its tool list, message roles and types, and free text it composes (a search query, a
    prompt, a message).  A call's argument called ``name`` is none of them: the name the call is about."""

    naming_path: re.Pattern[str]
    """Fields whose values name things (ids, names, roles) rather than carry content."""

    stale_keys: re.Pattern[str]
    """Field names that say a result came from a cache.  Freshness fields such as ``as_of`` or
    ``updated_at`` are left out: fresh results carry them too."""

    bound_field: re.Pattern[str]
    """A bound by its name: ``min_capacity``, ``price_max``, ``minPrice``, ``priceMax`` (``min``/``max``; a
    separator or a capital is required: ``minutes`` and ``admin`` bound nothing)."""

    bound_words: frozenset[str]
    """Words that, among the three before a number in a failure's message, make it a limit the run broke
    ("exceeds the limit of 2500", "above 80%", "at most 3"), not the value of a quantity."""

    absence_words: frozenset[str]
    """Words that say something is not there ("no drop at X", "X is missing", "without X"): a name a failure
    writes near one is what it says is absent, not a name it mentions for another reason."""

    empty_words: frozenset[str]
    """Words a message writes for an empty value ("visit_date None", "field ref is empty"): the value a step
    answered with when it swallowed an error."""

    handle_words: frozenset[str]
    """The last word of a field that names what a call made or found (``hold_id``, ``booking_ref``,
    ``reservation``, ``confirmation``): a call that did its work answers it; one that answers it empty beside
    an otherwise filled record answered a default (`trajdebug.analysis._unfilled.unfilled_handles`)."""

    identifier_words: frozenset[str]
    """Of ``handle_words``, those that only ever name an identifier (``id``, ``ref``): a field named by them alone
    names the record it sits in, so it is the call's own handle (``parent_id``, qualified, is another's)."""

    record_name_words: frozenset[str]
    """The last word of a field's name that makes it name its record in a list (``item_name``, ``sku``; any name
    ending in ``id`` too): records lined up by it for the same-input comparison (`reference._fields`)."""

    value_field_words: frozenset[str]
    """The field that makes a record a named value (an attribute list's ``{"name": "price_eur", "value": 42}``,
    `reference._fields`)."""

    value_name_fields: tuple[str, ...]
    """The fields that name such a value, in the order tried."""

    granted_words: frozenset[str]
    """Words of a yes/no field that says whether a call's request was granted (``available``, ``approved``,
    ``success``): false there is a service saying no, an honest answer, not one that failed to answer."""

    sign_offs: frozenset[str]
    """Closing words of a letter, written before a comma and the sender's name ("**Thanks**, Ana", "**Kind
    regards**, Ana Silva"): a text that ends so was signed, not cut."""

    bound_nouns: frozenset[str]
    """Words that, right after a number (and its unit), make it a limit ("the $3,200 ceiling", "a 30 kg
    maximum")."""

    abbreviations: frozenset[str]
    """Words written with a full stop that ends no sentence ("stock **approx.** 2 units", "**e.g.** 5 kg"),
    lowercased and without their last stop: a number after one is read in the same clause as the words before it."""

    percent_words: frozenset[str]
    """Of ``measure_suffixes``, those that mean a percentage (``charge_pct``): a number written with ``%``
    is a reading of that measure."""

    measure_suffixes: frozenset[str]
    """Units of measure a field name ends with (``charge_pct``, ``hull_c``, ``mass_kg``): a number under one
    is a reading of that measure.  Currencies are left out: a budget in pounds may be restated as a price."""

    # -- Requests: what a tool or a retrieval was asked, by its arguments' names

    count_words: frozenset[str]
    """Words of an argument that asks for how many items (``n``, ``limit``, ``top_k``, ``page_size``,
    ``max_results``): every word of its name is one of these."""

    exact_count_words: frozenset[str]
    """Of ``count_core``, those that ask for exactly so many (``top``, ``n``), not at most (``limit``, ``max``)."""

    count_core: frozenset[str]
    """Of ``count_words``, those that make a name a count (``page`` alone is a page number, ``results``
    alone the results)."""

    more_words: frozenset[str]
    """Words of a result's field that says more follows (``next_cursor``, ``next_page_token``,
    ``has_more``): a name holding ``next`` or ``more`` with one of these."""

    include_words: frozenset[str]
    """Words of a flag that lets a kind of item in (``include_cancelled``): the rest of its name is the kind."""

    exclude_words: frozenset[str]
    """Words of a flag that keeps a kind of item out (``exclude_expired``)."""

    exclude_argument_words: frozenset[str]
    """Words of an argument's name that make the values given under it ones the answer should leave out
    (``exclude``, ``except_ids``, ``not_in``, ``blacklist``): codes given there are not asked about
    (`request-series`).  Wider than `exclude_words`, which name a boolean flag's kind: ``not_shipped=True``
    names no kind kept out with certainty, while ``not_in=["R-101"]`` leaves R-101 out."""

    fresh_words: frozenset[str]
    """Words of a field that says how fresh an answer is (``record_version``, ``updated_at``, ``revision``);
    ``as_of`` is read as its two words."""

    cache_values: frozenset[str]
    """Values of a freshness field that say the answer came from a cache (``fetched: cache``)."""

    change_words: frozenset[str]
    """Words that, added to a field's name, name the value the field is to become (``new_date`` for ``date``,
    ``revised_total``): a step handed it and writing it under the field made the change it was handed, where a
    ``suggested_`` or ``default_`` value is no such order (`_picked.replaced_named`)."""

    # -- Settings: what a caller picks rather than reports

    duration_text: re.Pattern[str]
    """A span of time a text sets, an interval or a length ("every 24 hours", "for 18 min"): group 1 is the
    number.  A bare span ("took 44 minutes", "lead time: 12 days") is a claim about the world."""

    duration_value: re.Pattern[str]
    """A whole value that is a span of time (``15m``, ``24h``, ``7 days``, ISO ``PT15M``)."""

    duration_words: frozenset[str]
    """Words of a field name that make its number a span of time (``every_hours``, ``minutes``,
    ``windowDays``); ``min`` is left out (``min_price`` is a bound)."""

    request_stamp_words: frozenset[str]
    """Words of an input field that stamps one request rather than says what it asks (``request_id``,
    ``received_at``, ``session``): with `identifier_words` and `timing_words`, what a retry of the same request
    changes (`trajdebug.analysis.reference.same_request`)."""

    timing_words: frozenset[str]
    """Words of a field name that make its number a reading of the run's own clock or counter (``elapsed_ms``,
    ``latencyMs``, ``attempt``): new in every run, never a value the run computed."""

    hours_length: re.Pattern[str]
    """A number a text gives as a length in hours (``'hours': 3``, ``duration_h=2.5``, ``2 hrs``): group
    ``a`` or ``b`` is the number."""

    minutes_length: re.Pattern[str]
    """A number a text gives as a length in minutes (``"minutes": 90``, ``slot_mins=45``, ``45 min``): group
    ``a`` or ``b`` is the number."""

    # -- Field names and word forms

    naming_fields: frozenset[str]
    """Field names whose value names who acts or what is called (``assignee``, ``to_agent``): a choice of
    actor, not a value put in place of a task word."""

    plural_suffixes: tuple[str, ...]
    """Endings that make a noun plural (``days`` of ``day``): a field counted in the plural, an item of it
    labelled in the singular."""

    unit_synonyms: Mapping[str, str] = field(hash=False)
    """Other spellings of a unit (``percent`` of ``%``, ``$`` of ``usd``), each to the one compared (`unit`):
    a field's passing values that write one quantity two ways have one unit."""

    es_plural_after: tuple[str, ...] = ()
    """Endings after which a plural takes ``-es`` (``boxes``, ``inches``), not ``-s``."""

    def singular(self, word: str) -> str:
        """``word`` without its plural ending (``days`` -> ``day``), or as it is when it has none."""
        for s in self.plural_suffixes:
            if len(word) > len(s) and word.endswith(s):
                return word[: -len(s)]
        return word

    def unit(self, word: str) -> str:
        """A unit word as compared (``days`` and ``day``, ``boxes`` and ``box``, ``percent`` and ``%``): lower
        case, without its plural ending (``-es`` only after a hissing ending: ``miles`` is ``mile``), then its
        `unit_synonyms` spelling.  A word of two letters keeps its ``s`` (``ms`` is no plural of ``m``), and so
        does one in ``-ss`` or ``-us`` (``celsius``)."""
        w = word.lower()
        w = self.unit_synonyms.get(w, w)
        if len(w) > 3 and w.endswith("es") and w[:-2].endswith(self.es_plural_after):
            w = w[:-2]
        elif len(w) > 2 and w.endswith("s") and not w.endswith(("ss", "us")):
            w = w[:-1]
        return self.unit_synonyms.get(w, w)

    def count(self) -> dict[str, int]:
        """How many phrases each field holds (a pattern, its alternatives at any depth; a set, its words)."""
        out: dict[str, int] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, re.Pattern):
                out[f.name] = _alternatives(v.pattern)
            elif isinstance(v, (frozenset, tuple, Mapping)):
                out[f.name] = len(v)
        return out


def _alternatives(pattern: str) -> int:
    """The alternatives of a regular expression, at any depth (``\\b(yes|ok)\\b|sure`` -> 3), classes left out."""
    n, i, in_class = 1, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "|" and not in_class:
            n += 1
        i += 1
    return n


ENGLISH = Lexicon(
    # -- Messages: how a failure, an error or a tool result is worded
    range_=re.compile(
        rf"(?<![\w.-]){_NUM}\s*[-–]\s*{_NUM}(?![\w.]|-\d)|\bbetween\s+{_NUM}\s+and\s+{_NUM}(?![\w.])", re.I
    ),
    stopwords=frozenset(
        ["what", "which", "with", "from", "that", "this", "have", "were", "does", "there", "their", "about", "into", "when", "where", "than", "then", "they", "them", "most", "more", "some", "each", "only", "also", "many", "much", "been", "being", "very", "will", "would", "should", "could", "answer", "check", "checks", "failed", "failure", "error", "errors", "none", "null", "true", "false", "value", "values", "step", "steps"]
    ),
    short_stopwords=frozenset(
        ["the", "and", "not", "new", "all", "any", "for", "but", "are", "was", "has", "had", "its", "out", "one", "can", "our", "you", "per", "via", "off", "too", "yet", "nor", "own", "who", "why", "how", "may", "did", "got", "let", "use"]
    ),
    boolean_words=frozenset({"true", "false", "yes", "no", "none", "null"}),
    default_words=frozenset(
        {"unknown", "not found", "not_found", "notfound", "n/a", "na", "nil", "undefined", "missing", "empty",
         "unavailable", "not available", "no data", "no_data", "-", "--", "?"}
    ),
    status_text=re.compile(r"\b(?:HTTP(?:/\d(?:\.\d)?)?\s+|status(?:\s+code)?[:=\s]+)([1-5]\d\d)\b", re.I),
    exit_status=re.compile(r"(?:exit(?:ed)?\s+(?:code|status)|non-zero exit status|returncode)[:=\s]+(-?\d+)", re.I),
    error_line=re.compile(r"(?m)^\s*(?:[A-Z][A-Za-z0-9_.]*)?(?:Error|Exception|ERROR|FATAL|Fatal)\s*:\s*\S.*$"),
    input_caused=re.compile(
        r"syntax|invalid|malformed|not found|no such|unknown|missing|required|unexpected|bad request|"
        r"does not exist|cannot parse|could not parse|validation|unprocessable|check failed|expected",
        re.I,
    ),
    check_text=re.compile(
        r"\bcheck(?:s)? failed|\bfailed (?:the )?check|\bverif(?:y|ication) failed|assert|"
        r"does not match|doesn't match|mismatch|\bexpected\b|\bshould (?:be|have)\b|\bis missing\b|\bare missing\b",
        re.I,
    ),
    check_types=re.compile(r"check|assert|validation|verif|mismatch", re.I),
    # Compared as written: a lower-case word names a format (``s3``, ``h2``, ``mp3`` in prose about storage,
    # protocols, files); the same letters capitalised are as often a record's code (shelf S3, tank H2, bay
    # MP3), so only formats conventionally capitalised are listed capitalised too.
    format_codes=frozenset(
        ["UTF-8", "UTF8", "UTF-16", "UTF-32", "Latin-1", "ISO-8859-1", "Base64", "MD5", "SHA1", "SHA-1", "SHA256",
         "SHA-256", "SHA384", "SHA512", "SHA-512", "SHA3", "CRC32", "HTTP1", "HTTP2", "HTTP3", "IPv4", "IPv6",
         "IPV4", "IPV6", "TLS1", "TLSv1", "OAuth2", "PKCS12", "PKCS7", "X509", "Python3",
         "utf-8", "utf8", "utf-16", "utf16", "utf-32", "utf32", "latin-1", "latin1", "cp1252", "iso-8859-1",
         "base16", "base32", "base58", "base64", "base85", "md5", "sha1", "sha-1", "sha224", "sha256", "sha-256",
         "sha384", "sha512", "sha-512", "sha3", "crc32", "http1", "http2", "http3", "h2", "h3", "ipv4", "ipv6",
         "tls1", "tlsv1", "oauth2", "x86", "x64", "x86_64", "amd64", "arm64", "aarch64", "int8", "int16", "int32",
         "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64", "bf16", "fp16", "fp32",
         "utc0", "mp3", "mp4", "h264", "h265", "p12", "pkcs12", "pkcs7", "x509", "s3", "ec2", "py3", "python3"]
    ),
    environment=re.compile(
        r"time(?:d)? ?out|timeout|unavailable|unreachable|rate.?limit|too many requests|quota|overloaded_error|"
        r"(?:server|service|api|model|backend|upstream)s?(?: is| are)?(?: currently)? overload|"
        r"\boverloaded\W*$|"
        r"internal (?:server )?error|temporar|connection (?:refused|reset|error|closed|aborted|lost|failed)|reset by peer|"
        r"(?:status|http(?:/[\d.]+)?|code|error|returned)[ :=]*5\d\d\b|\b5\d\d (?:error|internal|bad gateway|service)|bad gateway|"
        r"service (?:is )?(?:down|unavailable|error)|network|dns|ssl|broken pipe",
        re.I,
    ),
    state_error=re.compile(
        r"already|no longer|cannot be (?:modified|changed|cancell?ed)|locked|status|state|conflict",
        re.I,
    ),
    truncation=re.compile(
        r"\[(?:output |response |text )?(?:truncated|cut|clipped|omitted)[^\]]{0,40}\]|\(truncated\)|"
        r"<truncated>|\btruncated (?:at|after) \d+|(?:\.\.\.|…)\s*$",
        re.I,
    ),
    result_count=re.compile(
        r"\b(\d{1,6})\s+(?:results?|items?|rows?|records?|matches|hits|lines?|failed|entries)\b", re.I
    ),
    # -- Conversations: what a user or an assistant says
    options=re.compile(
        r"\b(?:choose|chose|pick|select|classify|route|decide|answer with|reply with|one of|either)\b[^.\n]{0,60}?"
        r"((?:[a-z][\w-]*,\s*)*[a-z][\w-]*,?\s+or\s+[a-z][\w-]*)\b",
        re.I,
    ),
    option_count=re.compile(
        r"\b(\d{1,4})\s+(?:(?:different|distinct|available|total|unique|matching|such|in[- ]stock)\s+)*"
        r"(?:[A-Za-z-]+\s+){0,2}?(options|variants|items|products|orders|choices|models|types|kinds|versions|results)\b",
        re.I,
    ),
    available=re.compile(r"available|in[- ]stock", re.I),
    lowest=re.compile(r"\b(cheapest|lowest[- ]priced|least expensive|lowest price|most affordable)\b", re.I),
    highest=re.compile(r"\b(most expensive|highest[- ]priced|priciest|highest price)\b", re.I),
    yes=re.compile(
        r"\b(yes|yeah|yep|sure|confirm(?:ed)?|go ahead|proceed|please do|do it|sounds (?:good|perfect|great)|"
        r"that works|works for me|let'?s do|correct|ok(?:ay)?|perfect)\b",
        re.I,
    ),
    no=re.compile(r"\b(no|not yet|don'?t|do not|wait|hold on|instead|actually|rather)\b", re.I),
    cannot=re.compile(
        r"\b(?:i|we)\s+(?:can ?not|can'?t|am unable to|are unable to|am not able to|'m unable to|'m not able to|do not have|don'?t have)\b",
        re.I,
    ),
    all_done=re.compile(
        r"\b(?:all|both|every|everything)\b[^.\n]{0,80}?\b(?:updated|completed|done|processed|modified|"
        r"cancell?ed|changed|returned|exchanged)\b",
        re.I,
    ),
    reversal=re.compile(
        r"\b(actually|instead|no need|never ?mind|leave (?:it|them|the \w+|that)|not (?:just )?yet|forget|"
        r"changed my mind|on second thought|rather)\b",
        re.I,
    ),
    handoff_words=re.compile(r"\b(human|agent|representative|transfer|escalat\w*|supervisor|manager)\b", re.I),
    # -- Names: English words in tool names and keys
    read_tool=re.compile(
        r"^(?:get|find|list|search|read|lookup|look_up|fetch|query|calculate|compute|think|check|view|show)", re.I
    ),
    write_tool=re.compile(
        r"modify|cancel|return|exchange|update|transfer|delete|remove|create|place|book|refund|send|pay|"
        r"charge|submit|write|insert|add|set|change|escalate|handoff|hand_off",
        re.I,
    ),
    handoff_tool=re.compile(r"transfer_to|escalat|handoff|hand_off|human", re.I),
    identifier_path=re.compile(
        # A tool call's ``name`` is the tool it picks; an argument called ``name`` (the applicant's) is a value it claims.
        r"(?:^|\.|\])(?:id|call_id|tool_call_id|(?<!arguments\.)name|type|role|tool|tool_name|agent|query|q|search|prompt|"
        r"text|message)$"
    ),
    naming_path=re.compile(r"(?:^|\.|\])(?:id|name|type|role|tool|tool_name|agent|function|kind)$"),
    stale_keys=re.compile(r"^(?:cached|from_cache|cache_hit|served_from_cache|stale|is_stale|cached_at)$", re.I),
    bound_field=re.compile(
        r"^(?:(min|max)(?:imum)?_([a-z]\w*)|([a-z]\w*?)_(min|max)(?:imum)?"
        r"|(min|max)(?:imum)?([A-Z]\w*)|([a-z]\w*?)(Min|Max)(?:imum)?)$"
    ),
    bound_words=frozenset(
        {"exceed", "exceeds", "exceeded", "exceeding", "above", "below", "over", "under", "beyond", "than",
         "most", "least", "limit", "limits", "maximum", "minimum", "max", "min", "cap", "ceiling", "floor",
         "threshold", "tolerance", "within", "allowed", "permitted"}
    ),
    absence_words=frozenset(
        {"no", "not", "missing", "without", "absent", "lacks", "lacking", "lack", "omitted", "omits", "skipped", "skips", "never"}
    ),
    empty_words=frozenset({"none", "null", "nil", "empty", "blank", "unset"}),
    handle_words=frozenset(
        {"id", "uuid", "ref", "reference", "booking", "reservation", "confirmation", "receipt", "ticket", "hold",
         "slot", "locator", "tracking"}
    ),
    identifier_words=frozenset({"id", "uuid", "guid", "ref", "reference"}),
    record_name_words=frozenset({"id", "key", "code", "sku", "name", "slug", "title", "label"}),
    value_field_words=frozenset({"value", "values", "val"}),
    value_name_fields=("name", "key"),
    granted_words=frozenset(
        {"ok", "success", "successful", "succeeded", "available", "approved", "accepted", "confirmed", "granted",
         "allowed", "eligible", "valid", "found", "exists", "held", "booked", "reserved", "done", "completed"}
    ),
    sign_offs=frozenset(
        {"thanks", "thank you", "many thanks", "regards", "best regards", "kind regards", "warm regards", "best",
         "cheers", "sincerely", "yours sincerely", "yours truly", "best wishes", "yours"}
    ),
    bound_nouns=frozenset(
        {"limit", "maximum", "minimum", "max", "min", "cap", "ceiling", "floor", "threshold", "tolerance", "buffer"}
    ),
    abbreviations=frozenset({"approx", "vs", "e.g", "i.e", "incl", "ca", "no", "est", "min", "max", "etc"}),
    percent_words=frozenset({"pct", "percent"}),
    measure_suffixes=frozenset(
        {"pct", "percent", "c", "f", "degc", "degf", "deg", "v", "mv", "kv", "a", "ma", "w", "kw", "kwh", "wh",
         "mah", "kg", "g", "mg", "lb", "lbs", "oz", "km", "m", "cm", "mm", "mi", "ft", "l", "ml", "s", "ms",
         "sec", "hz", "khz", "db", "psi", "kpa", "hpa", "bar", "rpm", "kph", "kmh", "mph", "lux", "ppm"}
    ),
    count_words=frozenset(
        {"n", "k", "top", "limit", "count", "size", "num", "number", "max", "results", "items", "page", "per", "of", "rows", "hits"}
    ),
    count_core=frozenset({"n", "k", "top", "limit", "count", "size", "num", "max"}),
    exact_count_words=frozenset({"n", "k", "top", "count", "num"}),
    more_words=frozenset({"next", "more", "cursor", "token", "page", "has", "offset", "continuation", "marker"}),
    include_words=frozenset({"include", "including", "with", "show", "allow", "return"}),
    exclude_words=frozenset({"exclude", "excluding", "without", "skip", "hide", "omit", "no"}),
    exclude_argument_words=frozenset(
        {"exclude", "excluding", "excluded", "except", "without", "skip", "hide", "omit", "no", "not", "blacklist",
         "blocklist", "denylist"}
    ),
    fresh_words=frozenset(
        {"version", "revision", "rev", "updated", "fetched", "asof", "snapshot", "refreshed", "retrieved", "modified", "timestamp", "etag"}
    ),
    cache_values=frozenset({"cache", "cached", "stale"}),
    change_words=frozenset({"new", "updated", "revised", "corrected", "amended", "changed", "next", "rescheduled"}),

    # -- Settings: what a caller picks rather than reports
    duration_text=re.compile(
        r"\b(?:every|for)\s+(\d+(?:\.\d+)?)[\s-]*(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?)\b", re.I
    ),
    duration_value=re.compile(
        r"^\s*(?:\d+(?:\.\d+)?\s*(?:s|m|h|d|w|secs?|seconds?|mins?|minutes?|hrs?|hours?|days?|weeks?)"
        r"|p(?=\w*\d)(?:\d+[dw])*(?:t(?:\d+[hms])+)?)\s*$",
        re.I,
    ),
    hours_length=re.compile(
        r"\b(?:\w+_)?(?:hours?|hrs?|(?<=_)h)['\"]?\s*[:=]\s*(?P<a>\d{1,5}(?:\.\d{1,3})?)(?![\d.])|\b(?P<b>\d{1,5}(?:\.\d{1,3})?)\s*(?:hours?|hrs?|h)\b",
        re.I,
    ),
    minutes_length=re.compile(
        r"\b(?:\w+_)?(?:minutes?|mins?)['\"]?\s*[:=]\s*(?P<a>\d{1,5}(?:\.\d{1,3})?)(?![\d.])|\b(?P<b>\d{1,5}(?:\.\d{1,3})?)\s*(?:minutes?|mins?)\b",
        re.I,
    ),
    duration_words=frozenset(
        ["seconds", "secs", "minutes", "mins", "hours", "hrs", "days", "weeks", "interval", "window", "timeout", "ttl", "duration"]
    ),
    request_stamp_words=frozenset(
        {"received", "sent", "created", "requested", "submitted", "nonce", "session", "trace", "span"}
    ),
    timing_words=frozenset(
        ["elapsed", "latency", "took", "duration", "runtime", "uptime", "ms", "millis", "msec", "ns", "us",
         "epoch", "ts", "timestamp", "tick", "ticks", "seq", "counter", "attempt", "attempts", "retries", "iteration"]
    ),
    # The Agents SDK's handoff span names its two ends ``from_agent`` and ``to_agent``.
    naming_fields=frozenset(
        ["agent", "agent_name", "from_agent", "to_agent", "tool_name", "function", "assignee", "owner", "to", "target"]
    ),
    plural_suffixes=("s",),
    unit_synonyms=MappingProxyType(
        {"percent": "%", "pct": "%", "per cent": "%", "$": "usd", "dollar": "usd", "us$": "usd", "€": "eur",
         "euro": "eur", "£": "gbp", "hr": "hour", "h": "hour", "min": "minute", "sec": "second",
         "microgram": "mcg", "µg": "mcg", "ug": "mcg", "milligram": "mg", "gram": "g", "kilogram": "kg",
         "kilo": "kg", "kilometre": "km", "kilometer": "km", "metre": "m", "meter": "m", "litre": "l",
         "liter": "l", "millilitre": "ml", "milliliter": "ml", "ounce": "oz", "foot": "ft",
         "feet": "ft", "mile": "mi"}
    ),
    es_plural_after=("s", "x", "z", "ch", "sh"),
)
"""The English the analysis reads (the only lexicon today)."""


__all__ = ["ENGLISH", "Lexicon"]
