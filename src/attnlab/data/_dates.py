"""Dates written in many locales (from Babel's CLDR data) -> the same date in Chinese: a translation task that
needs no download and whose alignment crosses (the target is always year-month-day).

A pair is ``("Friday, March 5, 2021", "2021年3月5日星期五")``: the source is ``babel.dates.format_date`` of a
date in one locale and one of its CLDR formats; the target names the weekday (星期五) exactly when the source
does, so a model never has to compute one.  Formats kept per locale: CLDR's ``full``, ``long`` and ``medium``,
and a numeric format (``short`` or ``medium``) only when every CLDR locale that writes numeric dates that way
reads it as the same date: the year in four digits (``"05.03.21"`` is 1921 or 2021 here) and day/month order
fixed by the separator (``"05/03/2021"`` is 5 March in en_GB and May 3 in en_US, so day-first slashes are left
out; every CLDR locale writing ``.`` or ``-`` puts the day before the month, and a year first is followed by
the month everywhere).

Odd whitespace (U+202F after ru_RU's year, U+00A0 in other locales) is mapped to a plain space and runs of
spaces collapsed, because a person typing a date types plain spaces and the tokenizer then sees one kind.

Splits: each date's split is fixed by a hash of its ISO form (the first 4 bytes of its SHA-1 mod 100, as in
:func:`split_by_hash`: 0-9 test, 10-19 valid, the rest train), so no test or valid date is ever in training,
whatever the seed.  Train, valid and test dates are drawn uniformly from 1900-2049; ``extra["unseen_years"]``
from 2050-2099, years never seen in training.  The seed decides which dates, locales and formats are drawn.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import unicodedata
from collections.abc import Sequence
from functools import cache
from typing import Any, Literal

from ..errors import InputError
from ._corpus import hash_bucket
from ._pairs import Pairs, PairSplits

__all__ = [
    "DATE_FORMATS",
    "DATE_LOCALES",
    "ambiguity",
    "calendar_problem",
    "date_formats",
    "date_pair",
    "date_readings",
    "date_split",
    "held_out_negatives",
    "input_problem",
    "make_dates",
    "parts_problem",
    "year_problem",
]

DATE_LOCALES: tuple[str, ...] = (
    "en_US", "en_GB", "fr_FR", "de_DE", "es_ES", "ru_RU", "it_IT", "pt_BR", "nl_NL", "ja_JP",
    "pl_PL", "tr_TR", "ko_KR", "sv_SE",
)
DateFormat = Literal["full", "long", "medium", "short"]
DATE_FORMATS: tuple[DateFormat, ...] = ("full", "long", "medium", "short")  # CLDR's four; numeric: if unambiguous
TRAIN_YEARS = (1900, 2049)  # train, valid and test dates
UNSEEN_YEARS = (2050, 2099)  # extra["unseen_years"]
WEEKDAYS_ZH = "一二三四五六日"  # Monday first, as datetime.weekday()
_QUOTED = re.compile(r"'[^']*'")  # literal text inside a CLDR pattern
_FIELD = re.compile(r"([A-Za-z])\1*")  # a CLDR pattern field: a run of one letter
_SPACES = re.compile(r"\s+")


def _fields(pattern: str) -> list[str]:
    """The fields of a CLDR pattern (``"EEEE, MMMM d, y"`` -> ``["EEEE", "MMMM", "d", "y"]``), literals dropped."""
    return [m.group(0) for m in _FIELD.finditer(_QUOTED.sub("", pattern))]


def names_weekday(pattern: str) -> bool:
    """Whether dates written with ``pattern`` name the weekday (an ``E`` or ``c`` field)."""
    return any(f[0] in "Ec" for f in _fields(pattern))


def is_numeric(pattern: str) -> bool:
    """Whether ``pattern`` writes the month as a number (``M``/``MM``/``L``/``LL``, not its name)."""
    return any(f[0] in "ML" and len(f) <= 2 for f in _fields(pattern))


def numeric_is_unambiguous(pattern: str) -> bool:
    """Whether a numeric pattern is read as one date by every CLDR locale: a four-digit year (``y``, not ``yy``)
    and either year first (year-month-day in every locale) or the day before the month with a separator other
    than ``/`` (every CLDR locale writing ``.`` or ``-`` puts the day first; ``/`` is day-first in en_GB and
    month-first in en_US).  ``tests/data/test_dates.py`` checks the kept ones against every CLDR pattern.
    """
    order = "".join("M" if f[0] == "L" else f[0] for f in _fields(pattern) if f[0] in "yMLd")
    if any(f[0] == "y" and len(f) == 2 for f in _fields(pattern)) or sorted(order) != ["M", "d", "y"]:
        return False
    if order.startswith("y"):
        return True
    return order.index("d") < order.index("M") and "/" not in _QUOTED.sub("", pattern)


@cache
def date_formats(locale: str) -> tuple[tuple[str, str], ...]:
    """The ``(format name, CLDR pattern)`` pairs used for ``locale``, distinct patterns only, in
    :data:`DATE_FORMATS` order (a pattern two formats share is kept under the first name)."""
    from babel.dates import get_date_format

    if locale not in DATE_LOCALES:
        raise InputError(f"unknown date locale {locale!r}; choose one of {', '.join(DATE_LOCALES)}")
    out: dict[str, str] = {}
    for name in DATE_FORMATS:
        pattern = get_date_format(name, locale=locale).pattern
        if is_numeric(pattern) and not numeric_is_unambiguous(pattern):
            continue
        out.setdefault(pattern, name)
    return tuple((name, pattern) for pattern, name in out.items())


@cache
def _compiled(locale: str, pattern: str) -> tuple[Any, Any, bool]:
    """Babel's locale object, the parsed pattern and whether it names the weekday (parsed once: ~10 us a pair)."""
    from babel import Locale
    from babel.dates import parse_pattern

    return Locale.parse(locale), parse_pattern(pattern), names_weekday(pattern)


def chinese_date(day: dt.date, *, weekday: bool) -> str:
    """``2021年3月5日``, with ``星期五`` after it when ``weekday``."""
    text = f"{day.year}年{day.month}月{day.day}日"
    return text + f"星期{WEEKDAYS_ZH[day.weekday()]}" if weekday else text


def clean_spaces(text: str) -> str:
    """Every run of whitespace (U+202F, U+00A0, ...) as one plain space, none at either end."""
    return _SPACES.sub(" ", text).strip()


def date_pair(day: dt.date, locale: str, format: str = "full") -> tuple[str, str]:
    """``(source, target)`` for ``day`` written in ``locale``'s CLDR ``format`` (``"full"``, ``"long"``,
    ``"medium"``, ``"short"`` or a CLDR pattern): ``("Friday, March 5, 2021", "2021年3月5日星期五")``.

    A numeric format that is ambiguous without its locale (en_US ``"short"``) is refused."""
    from babel.dates import get_date_format

    if locale not in DATE_LOCALES:
        raise InputError(f"unknown date locale {locale!r}; choose one of {', '.join(DATE_LOCALES)}")
    pattern = (get_date_format(format, locale=locale).pattern if format in DATE_FORMATS
               else format)
    if is_numeric(pattern) and not numeric_is_unambiguous(pattern):
        kept = ", ".join(n for n, _ in date_formats(locale))
        raise InputError(f"{locale}'s date format {format!r} ({pattern!r}) is numeric and ambiguous without its "
                         f"locale, so the dates task leaves it out; use one of {kept}")
    return _pair(day, locale, pattern)


def _pair(day: dt.date, locale: str, pattern: str) -> tuple[str, str]:
    babel_locale, parsed, weekday = _compiled(locale, pattern)
    return clean_spaces(parsed.apply(day, babel_locale)), chinese_date(day, weekday=weekday)


def _dates(first_year: int, last_year: int) -> list[dt.date]:
    start, end = dt.date(first_year, 1, 1).toordinal(), dt.date(last_year, 12, 31).toordinal()
    return [dt.date.fromordinal(n) for n in range(start, end + 1)]


def date_split(day: dt.date) -> str:
    """``"test"``, ``"valid"`` or ``"train"``, fixed by the date alone (a hash of its ISO form)."""
    b = hash_bucket(day.isoformat())
    return "test" if b < 10 else "valid" if b < 20 else "train"


@cache
def _split_dates() -> dict[str, tuple[dt.date, ...]]:
    parts: dict[str, list[dt.date]] = {"train": [], "valid": [], "test": []}
    for day in _dates(*TRAIN_YEARS):
        parts[date_split(day)].append(day)
    return {name: tuple(days) for name, days in parts.items()}


def _draw(rng: random.Random, days: Sequence[dt.date], n: int) -> Pairs:
    """``n`` pairs: a date uniform in ``days``, a locale uniform in :data:`DATE_LOCALES`, then one of its formats."""
    rows = []
    for _ in range(n):
        day, locale = rng.choice(days), rng.choice(DATE_LOCALES)
        _, pattern = rng.choice(date_formats(locale))
        source, target = _pair(day, locale, pattern)
        rows.append((source, target, locale))
    return Pairs.of(rows)


CASES = (str.upper, str.lower, str.title)  # how ``cases`` rewrites a training source


def make_dates(*, n_train: int = 40_000, n_valid: int = 2_000, n_test: int = 2_000, n_unseen: int = 2_000,
               seed: int = 0, cases: float = 0.0) -> PairSplits:
    """Date pairs in :data:`DATE_LOCALES` -> Chinese, split by date; ``extra["unseen_years"]`` from 2050-2099.

    ``cases``: the share of training sources rewritten in upper case, lower case or title case (one of the three
    at random: ``MARCH 5, 2021``, ``march 5, 2021``), since people type dates so and CLDR writes none of them;
    valid, test and unseen keep CLDR's case.  The pairs drawn do not depend on it.
    The same seed gives the same pairs; the split of a date never depends on the seed."""
    for name, n in (("n_train", n_train), ("n_valid", n_valid), ("n_test", n_test), ("n_unseen", n_unseen)):
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise InputError(f"{name} must be a whole number >= 0, got {n!r}")
    if isinstance(cases, bool) or not isinstance(cases, (int, float)) or not 0 <= cases <= 1:
        raise InputError(f"cases must be a share between 0 and 1, got {cases!r}")
    rng = random.Random(seed)
    parts = _split_dates()
    train, valid, test = (_draw(rng, parts[s], n) for s, n in (("train", n_train), ("valid", n_valid),
                                                                ("test", n_test)))
    if cases:
        recase = random.Random(f"cases {seed}")  # its own stream: the dates drawn stay those of cases=0
        draws = [(recase.random() < cases, recase.choice(CASES)) for _ in train.source]
        train = Pairs(tuple(how(text) if hit else text for text, (hit, how) in zip(train.source, draws, strict=True)),
                      train.target, train.tag)
    unseen = _draw(rng, _dates(*UNSEEN_YEARS), n_unseen)
    stats = {f"{s} dates": len(parts[s]) for s in ("train", "valid", "test")}
    return PairSplits(train, valid, test, "dates", {"unseen_years": unseen}, stats)


# --- checking what a dates translator says -----------------------------------------------------------------------

_CHINESE_DATE = re.compile(r"(\d+)年(\d+)月(\d+)日(?:星期([一二三四五六日]))?")
_NUMERIC_DATE = re.compile(r"(\d{1,2})([/.\-])(\d{1,2})\2(\d{2}|\d{4})")  # day/month or month/day, then the year
_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December")


def calendar_problem(output: str) -> str | None:
    """Why ``output`` (a dates translator's ``2021年3月5日星期五``) is not a real calendar date, or None when it is:
    not of that form, no such day (``2021年2月30日``, ``2021年13月1日``), or a weekday the date does not fall on."""
    m = _CHINESE_DATE.fullmatch(output)
    if m is None:
        return f"{output!r} is not a date of the form 2021年3月5日"
    year, month, day = (int(g) for g in m.group(1, 2, 3))
    try:
        date = dt.date(year, month, day)
    except ValueError:
        return f"{output!r} is not a real calendar date (there is no day {day} of month {month} in {year})"
    if m.group(4) is not None and WEEKDAYS_ZH.index(m.group(4)) != date.weekday():
        return (f"{output!r} names the wrong weekday: {date.isoformat()} is a 星期{WEEKDAYS_ZH[date.weekday()]}, "
                f"not a 星期{m.group(4)}")
    return None


def year_problem(text: str, output: str) -> str | None:
    """Why the year of ``output`` cannot be trusted, or None: ``text`` or ``output`` holds a year (a number of 3
    or more digits) outside the task's years 1900-2099, which the model never saw."""
    first, last = TRAIN_YEARS[0], UNSEEN_YEARS[1]
    m = _CHINESE_DATE.fullmatch(output)
    years = [int(y) for y in re.findall(r"\d{3,}", text)] + ([int(m.group(1))] if m else [])
    outside = [y for y in years if not first <= y <= last]
    if not outside:
        return None
    return (f"the year {outside[0]} is outside the years {first}-{last} the dates task holds; the model's year "
            f"is a guess")


@cache
def _month_words() -> frozenset[str]:
    """Every month name of :data:`DATE_LOCALES` (wide and abbreviated, format and stand-alone, folded by
    :func:`_fold`, no dot) and every start of one at 3 letters or more (``sept``, ``febr``)."""
    from babel import Locale

    names: set[str] = set()
    for locale in DATE_LOCALES:
        months = Locale.parse(locale).months
        for context in ("format", "stand-alone"):
            for width in ("wide", "abbreviated"):
                names.update(_fold(str(v)).rstrip(".") for v in months[context][width].values())
    return frozenset(names | {name[:n] for name in names for n in range(3, len(name))})


def _fold(word: str) -> str:
    """``word`` case-folded without accents, Turkish dotless ı as i: ``KASIM``, ``Kasım`` and ``kasim`` are one."""
    bare = unicodedata.normalize("NFKD", word.casefold().replace("ı", "i"))
    return "".join(c for c in bare if not unicodedata.combining(c))


def parts_problem(text: str) -> str | None:
    """Why ``text`` cannot be a whole date, or None: it holds fewer than three parts a date is written with, counting
    each run of digits and each month name (or its start, ``Sept``) of the task's locales, in any case and with or
    without accents. Every date of the task
    has three (``5 mars 2021``, ``2021年3月5日``, ``Friday, March 5, 2021``); ``2021``, ``March 2021``, ``hello`` and
    ``the fifth of March, 2021`` do not, and whatever date the model writes for them is made up."""
    parts = len(re.findall(r"\d+", text)) + sum(_fold(w) in _month_words() for w in re.findall(r"[^\W\d_]+", text))
    if parts >= 3:
        return None
    return (f"{clean_spaces(text)!r} holds {parts} of the three parts a date is written with (a day, a month and a "
            f"year, as numbers or month names), so the date written for it is made up")


_CJK_DATE = re.compile(r"(\d{3,4})\s*[年년]\s*(\d{1,2})\s*[月월]\s*(\d{1,2})\s*[日일]")  # zh, ja, ko: year month day
_YEAR_FIRST = re.compile(r"(\d{4})([/.\-])(\d{1,2})\2(\d{1,2})")  # 2021-03-05, 2021/03/05: the month follows the year
_WEEKDAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@cache
def _names() -> tuple[dict[str, frozenset[int]], dict[str, frozenset[int]], dict[str, int]]:
    """What a word may name, from the CLDR data of :data:`DATE_LOCALES` (and zh_CN's, the target's language), folded
    by :func:`_fold` without a final dot: month words (wide and abbreviated names, and each start of 3 letters or
    more) -> months 1-12; weekday words (wide and abbreviated names) -> weekdays 0-6, Monday first; and the wide
    weekday names of the languages that write them joined to the date (ja 金曜日, ko 금요일, zh 星期五)."""
    from babel import Locale

    months: dict[str, set[int]] = {}
    weekdays: dict[str, set[int]] = {}
    joined: dict[str, int] = {}
    for locale in (*DATE_LOCALES, "zh_CN"):
        data = Locale.parse(locale)
        for context in ("format", "stand-alone"):
            for width in ("wide", "abbreviated"):
                for month, name in data.months[context][width].items():
                    word = _fold(str(name)).rstrip(".")
                    for n in range(min(3, len(word)), len(word) + 1):
                        months.setdefault(word[:n], set()).add(int(month))
                for day, name in data.days[context][width].items():
                    weekdays.setdefault(_fold(str(name)).rstrip("."), set()).add(int(day))
                    if width == "wide" and locale in ("ja_JP", "ko_KR", "zh_CN"):
                        joined[str(name)] = int(day)
    return ({w: frozenset(m) for w, m in months.items()}, {w: frozenset(d) for w, d in weekdays.items()}, joined)


def _named(day: int, month: int, year: int) -> str:
    return f"{day} {_MONTHS_EN[month - 1]} {year}"


def _judge(year: int, month: int, day: int, weekdays: frozenset[int] | set[int]) -> str | None:
    """What is wrong with the date ``year-month-day`` said to fall on one of ``weekdays`` (empty: none said), or
    None when it is a real date on such a weekday."""
    if not 1 <= year <= 9999 or not 1 <= month <= 12:
        return None  # not a reading this check can judge (year_problem speaks of years outside the task)
    date = _reading(year, month, day)
    if date is None:
        last = (dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)).day if year < 9999 else 31
        return (f"the input names {_named(day, month, year)}, which does not exist ({_MONTHS_EN[month - 1]} {year} "
                f"has {last} days)")
    if weekdays and date.weekday() not in weekdays:
        said = " or ".join(_WEEKDAYS_EN[d] for d in sorted(weekdays))
        return (f"the input's weekday is wrong: {_named(day, month, year)} is a {_WEEKDAYS_EN[date.weekday()]}, not "
                f"a {said}")
    return None


def input_problem(text: str) -> str | None:
    """Why the date ``text`` names is no real date, or None: a day its month does not have (``Feb 30, 2021``:
    ``"the input names 30 February 2021, which does not exist (February 2021 has 28 days)"``) or a weekday the date
    does not fall on (``Monday, March 5, 2021``).  It reads a month name with a day and a year (in any locale of
    the task), a year-month-day date (``2021年2月30日``, ``2021-02-30``) and a numeric day/month date with no real
    reading (``30/02/2021``); any other text, or one with several readings of which one is fine, is None.  When the
    input is the problem, a translator's output that copies it is no fault of the translation."""
    months, weekdays, joined = _names()
    flat = clean_spaces(text)
    cjk = _CJK_DATE.search(flat)
    if cjk is not None:
        year, month, day = (int(g) for g in cjk.group(1, 2, 3))
        said = {d for name, d in joined.items() if name in flat[cjk.end():]}
        return _judge(year, month, day, said)
    first = _YEAR_FIRST.fullmatch(flat)
    if first is not None:
        return _judge(int(first.group(1)), int(first.group(3)), int(first.group(4)), set())
    numeric = _NUMERIC_DATE.fullmatch(flat)
    if numeric is not None:
        if date_readings(flat):
            return None
        read = "day first or month first" if numeric.group(2) == "/" else "day first"
        return f"the input {flat} names no real date (read {read})" if len(numeric.group(4)) == 4 else None
    numbers = re.findall(r"\d+", flat)
    years, days = [int(n) for n in numbers if len(n) >= 3], [int(n) for n in numbers if len(n) <= 2]
    if len(years) != 1 or len(days) != 1:
        return None
    words = [_fold(w).rstrip(".") for w in re.findall(r"[^\W\d_]+", flat)]
    problems = []
    for i, word in enumerate(words):
        for month in sorted(months.get(word, ())):
            said = {d for j, w in enumerate(words) if j != i for d in weekdays.get(w, ())}
            problem = _judge(years[0], month, days[0], said)
            if problem is None:
                return None  # one reading is a real date on the weekday said: the input may be right
            problems.append(problem)
    return problems[0] if problems else None


def _reading(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def date_readings(text: str) -> list[tuple[str, dt.date]]:
    """The ``(how, date)`` readings of a numeric date such as ``3/5/2021`` or ``05.03.21`` (empty for any other
    text): with ``/`` month first (en_US) and day first (en_GB), with ``.`` or ``-`` day first (every CLDR locale);
    a two-digit year as 19yy and 20yy.  Only real calendar dates are kept, each once."""
    m = _NUMERIC_DATE.fullmatch(clean_spaces(text))
    if m is None:
        return []
    a, sep, b, y = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
    years = [int(y)] if len(y) == 4 else [1900 + int(y), 2000 + int(y)]
    orders = [("month first", a, b), ("day first", b, a)] if sep == "/" else [("day first", b, a)]
    out: dict[dt.date, str] = {}
    for year in years:
        for how, month, day in orders:
            date = _reading(year, month, day)
            if date is not None:
                out.setdefault(date, how)
    return [(how, date) for date, how in out.items()]


def ambiguity(text: str) -> str | None:
    """``"3/5/2021 is ambiguous: March 5, 2021 (month first, 2021年3月5日) or 3 May 2021 (day first, 2021年5月3日)"``
    when the numeric date ``text`` has more than one reading (:func:`date_readings`), else None."""
    readings = date_readings(text)
    if len(readings) < 2:
        return None

    def name(how: str, d: dt.date) -> str:
        shown = (f"{_MONTHS_EN[d.month - 1]} {d.day}, {d.year}" if how == "month first"
                 else f"{d.day} {_MONTHS_EN[d.month - 1]} {d.year}")
        return f"{shown} ({how}, {chinese_date(d, weekday=False)})"

    return f"{clean_spaces(text)} is ambiguous: {' or '.join(name(h, d) for h, d in readings)}"


# --- held-out inputs that are not dates the task holds ---------------------------------------------------------

NEGATIVE_KINDS = ("non_date", "year_outside", "garbled")


def _non_date(rng: random.Random) -> str:
    """A text in one of :data:`DATE_LOCALES` that is no date: 1-3 names of countries or languages as that locale
    writes them, a time of day, or a number or an amount of money (CLDR data, through Babel)."""
    from babel import Locale
    from babel.dates import format_time
    from babel.numbers import format_currency, format_decimal

    locale = rng.choice(DATE_LOCALES)
    loc = Locale.parse(locale)
    kind = rng.randrange(4)
    if kind == 0:
        names = sorted(loc.territories.values())
        return " ".join(rng.choice(names) for _ in range(rng.randint(1, 3)))
    if kind == 1:
        names = sorted(loc.languages.values())
        return " ".join(rng.choice(names) for _ in range(rng.randint(1, 3)))
    if kind == 2:
        when = dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60))
        return clean_spaces(format_time(when, rng.choice(("short", "medium", "long")), locale=locale,
                                        tzinfo=dt.timezone.utc))
    value = round(rng.uniform(0, 100_000), 2)
    return clean_spaces(format_currency(value, rng.choice(("EUR", "USD", "JPY")), locale=locale) if rng.random() < 0.5
                        else format_decimal(value, locale=locale))


def garble(text: str, rng: random.Random) -> str:
    """``text`` made unreadable: its characters reversed, the letters inside each word shuffled, its digits
    dropped, or cut in the middle of a word (each changes the text)."""
    for _ in range(10):
        kind = rng.randrange(4)
        if kind == 0:
            out = text[::-1]
        elif kind == 1:
            out = " ".join("".join(rng.sample(w, len(w))) for w in text.split(" "))
        elif kind == 2:
            out = clean_spaces(re.sub(r"\d", "", text))
        else:
            out = text[: rng.randrange(1, max(2, len(text) - 1))].strip()
        if out and out != text:
            return out
    return text[::-1] + "?"


def held_out_negatives(n: int = 2_000, *, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` ``(text, kind)`` inputs a dates translator should warn on, generated with ``seed`` (the same seed, the
    same texts), in equal parts of :data:`NEGATIVE_KINDS`: ``non_date`` (names, times, numbers in the task's
    locales), ``year_outside`` (a date of the valid split's days moved to a year outside 1900-2099, written in one
    of the task's formats) and ``garbled`` (a valid-split date written as the task does, then garbled).  No
    training date is used; the behaviour suites' hand-written cases are separate."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise InputError(f"n must be a whole number >= 0, got {n!r}")
    rng = random.Random(f"held-out negatives {seed}")
    days = _split_dates()["valid"]
    out: list[tuple[str, str]] = []
    for i in range(n):
        kind = NEGATIVE_KINDS[i % len(NEGATIVE_KINDS)]
        if kind == "non_date":
            out.append((_non_date(rng), kind))
            continue
        day, locale = rng.choice(days), rng.choice(DATE_LOCALES)
        _, pattern = rng.choice(date_formats(locale))
        if kind == "year_outside":
            year = rng.choice((rng.randint(1000, 1899), rng.randint(2100, 2999)))
            day = day.replace(year=year, day=min(day.day, 28))
            out.append((_pair(day, locale, pattern)[0], kind))
        else:
            out.append((garble(_pair(day, locale, pattern)[0], rng), kind))
    return out
