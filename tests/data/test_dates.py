"""attnlab.data.make_dates: CLDR dates in many locales -> Chinese, checked against the dates used, Babel's own
names, and every numeric pattern CLDR has."""

from __future__ import annotations

import datetime as dt
import random
import re
from functools import cache

import pytest
from babel import Locale, localedata
from babel.dates import format_date, get_date_format, get_day_names, get_month_names

from attnlab.data import (
    DATE_LOCALES,
    ambiguity,
    calendar_problem,
    date_formats,
    date_pair,
    date_readings,
    held_out_negatives,
    input_problem,
    make_dates,
    parts_problem,
    year_problem,
)
from attnlab.data._dates import date_split, is_numeric
from attnlab.errors import InputError

ZH = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日(?:星期([一二三四五六日]))?")


def parse_zh(target: str) -> tuple[dt.date, str | None]:
    """The date a Chinese target names, and its weekday character (None when it names none)."""
    m = ZH.fullmatch(target)
    assert m, f"not a Chinese date: {target!r}"
    return dt.date(int(m[1]), int(m[2]), int(m[3])), m[4]


def weekday_names(locale: str) -> list[str]:
    names = [*get_day_names("wide", locale=locale).values(), *get_day_names("wide", "stand-alone", locale).values()]
    return [n.lower() for n in names]


def month_names(locale: str, month: int) -> list[str]:
    return [get_month_names(width, context, locale)[month].lower()
            for width in ("wide", "abbreviated") for context in ("format", "stand-alone")]


def sample_dates() -> list[dt.date]:
    rng = random.Random(1)
    edges = [dt.date(1900, 1, 1), dt.date(2049, 12, 31), dt.date(2000, 2, 29), dt.date(2099, 12, 31),
             dt.date(2021, 3, 5), dt.date(1987, 11, 12)]
    return edges + [dt.date.fromordinal(rng.randrange(dt.date(1900, 1, 1).toordinal(),
                                                      dt.date(2099, 12, 31).toordinal())) for _ in range(30)]


@pytest.mark.parametrize("locale", DATE_LOCALES)
def test_every_locale_and_format_keeps_the_date(locale: str) -> None:
    """The Chinese target names exactly the date used; the source holds its year, day and month (as a number or
    one of the locale's month names); 星期 appears iff the source names the locale's weekday, and it is right."""
    formats = date_formats(locale)
    assert {name for name, _ in formats} >= {"full", "long"}
    for day in sample_dates():
        for _, pattern in formats:
            source, target = date_pair(day, locale, pattern)
            parsed, weekday = parse_zh(target)
            assert parsed == day, (locale, pattern, source, target)
            numbers = [int(n) for n in re.findall(r"\d+", source)]
            assert day.year in numbers and day.day in numbers, (source, day)
            low = source.lower()
            assert day.month in numbers or any(n in low for n in month_names(locale, day.month)), (source, day)
            names_weekday = any(n in low for n in weekday_names(locale))
            assert (weekday is not None) == names_weekday, (locale, pattern, source, target)
            if weekday is not None:
                assert weekday == "一二三四五六日"[day.weekday()]


def test_the_issues_examples_and_the_weekday_rule() -> None:
    day = dt.date(2021, 3, 5)
    assert date_pair(day, "en_US") == ("Friday, March 5, 2021", "2021年3月5日星期五")
    assert date_pair(day, "en_GB", "long") == ("5 March 2021", "2021年3月5日")
    assert date_pair(day, "fr_FR")[0] == "vendredi 5 mars 2021"
    assert date_pair(day, "de_DE")[0] == "Freitag, 5. März 2021"
    assert date_pair(day, "es_ES")[0] == "viernes, 5 de marzo de 2021"
    assert date_pair(dt.date(2021, 3, 7), "ja_JP") == ("2021年3月7日日曜日", "2021年3月7日星期日")


def test_odd_whitespace_becomes_one_plain_space() -> None:
    day = dt.date(2021, 3, 5)
    raw = get_date_format("long", locale="ru_RU").pattern
    assert "\u202f" in raw  # Babel's ru_RU pattern really has a narrow no-break space before "г."
    assert date_pair(day, "ru_RU", "long")[0] == "5 марта 2021 г."
    for locale in DATE_LOCALES:
        for _, pattern in date_formats(locale):
            source = date_pair(day, locale, pattern)[0]
            assert all(c == " " or not c.isspace() for c in source) and "  " not in source, (locale, source)
            assert source == source.strip()


# --- numeric formats: kept only when every CLDR locale reads them as one date -----------------------------


@cache
def cldr_numeric_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Every numeric date pattern of every CLDR locale Babel has, as a regex with groups y, M, d."""
    patterns: dict[str, str] = {}
    for name in localedata.locale_identifiers():
        try:
            formats = Locale.parse(name).date_formats
        except Exception:  # a few identifiers Babel lists but cannot build on its own
            continue
        for width in ("short", "medium", "long", "full"):
            if width in formats:
                patterns.setdefault(formats[width].pattern, name)
    out = []
    for pattern, name in patterns.items():
        regex = as_regex(pattern)
        if regex is not None:
            out.append((f"{name} {pattern!r}", regex))
    return tuple(out)


def as_regex(pattern: str) -> re.Pattern[str] | None:
    """A numeric CLDR pattern as a regex (None for a pattern with names, weekdays or eras)."""
    parts, seen = [], set()
    for m in re.finditer(r"'([^']*)'|(([A-Za-z])\3*)|(.)", pattern, flags=re.S):
        quoted, field, letter, other = m[1], m[2], m[3], m[4]
        if field:
            if letter not in "yMLd" or (letter in "ML" and len(field) > 2):
                return None
            key = "M" if letter == "L" else letter
            if key in seen:
                return None
            seen.add(key)
            digits = r"\d{2}" if field == "yy" else r"\d+" if letter == "y" else r"\d{1,2}"
            parts.append(f"(?P<{key}>{digits})")
        else:
            text = other if quoted is None else quoted or "'"  # '' is a quote
            parts.append(" " if text.isspace() else re.escape(text))
    if seen != {"y", "M", "d"}:
        return None
    return re.compile("".join(re.sub(r" +", " ", p) for p in parts).strip())


def readings(source: str) -> dict[dt.date, str]:
    """Every valid date some CLDR numeric pattern reads ``source`` as, with one pattern that reads it so."""
    out: dict[dt.date, str] = {}
    for where, regex in cldr_numeric_patterns():
        m = regex.fullmatch(source)
        if m:
            try:
                out.setdefault(dt.date(int(m["y"]), int(m["M"]), int(m["d"])), where)
            except ValueError:
                continue
    return out


@pytest.mark.slow
def test_kept_numeric_formats_are_read_as_one_date_by_every_cldr_locale() -> None:
    kept = [(loc, p) for loc in DATE_LOCALES for _, p in date_formats(loc) if is_numeric(p)]
    numeric = [(loc, p) for loc, p in kept if as_regex(p) is not None]  # digits and separators only
    assert len(numeric) == 9 and {loc for loc, _ in numeric} >= {"de_DE", "ru_RU", "nl_NL", "ja_JP", "sv_SE"}
    days = [dt.date(y, m, d) for y in (1921, 2021) for m in (1, 3, 11, 12) for d in (2, 5, 12)]
    for locale, pattern in numeric:
        for day in days:
            source = date_pair(day, locale, pattern)[0]
            assert readings(source) == {day: readings(source)[day]}, (locale, pattern, source, readings(source))


@pytest.mark.parametrize(("locale", "width", "example"), [
    ("en_GB", "short", "05/03/2021"),  # May 3 in a month-first locale
    ("en_US", "short", "3/5/21"),  # two-digit year: 1921 or 2021, and month-first
    ("de_DE", "short", "05.03.21"),
    ("it_IT", "short", "05/03/21"),
])
def test_ambiguous_numeric_formats_are_left_out(locale: str, width: str, example: str) -> None:
    """Left out, and for the reason given: CLDR reads the string as two dates, or two dates a century apart (both
    in 1900-2049) are written the same."""
    day, century_before = dt.date(2021, 3, 5), dt.date(1921, 3, 5)
    assert format_date(day, width, locale=locale) == example
    pattern = get_date_format(width, locale=locale).pattern
    assert pattern not in {p for _, p in date_formats(locale)}
    assert len(readings(example)) > 1 or format_date(century_before, width, locale=locale) == example
    with pytest.raises(InputError, match="ambiguous"):
        date_pair(day, locale, width)


def test_the_checker_can_fail() -> None:
    assert set(readings("05/03/2021")) == {dt.date(2021, 3, 5), dt.date(2021, 5, 3)}  # en_GB against iu_CA
    assert set(readings("05.03.2021")) == {dt.date(2021, 3, 5)}


def test_unknown_locale_is_an_error() -> None:
    with pytest.raises(InputError, match="en_US"):
        date_pair(dt.date(2021, 3, 5), "xx_XX")


# --- the task ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def task():
    return make_dates(n_train=6000, n_valid=800, n_test=800, n_unseen=800, seed=5)


def dates_of(pairs) -> set[dt.date]:
    return {parse_zh(t)[0] for t in pairs.target}


def test_sizes_tags_and_every_locale_present(task) -> None:
    assert (len(task.train), len(task.valid), len(task.test)) == (6000, 800, 800)
    assert len(task.extra["unseen_years"]) == 800 and task.source == "dates"
    for pairs in (task.train, task.valid, task.test, task.extra["unseen_years"]):
        assert set(pairs.tag) == set(DATE_LOCALES)
    counts = task.train.counts()
    assert min(counts.values()) > 6000 / len(DATE_LOCALES) * 0.75  # locales drawn uniformly
    assert "unseen_years (extra test set): 800 pairs" in task.summary()


def test_split_by_date_no_test_date_in_training(task) -> None:
    train, valid, test = dates_of(task.train), dates_of(task.valid), dates_of(task.test)
    assert not train & test and not train & valid and not valid & test
    assert {date_split(d) for d in train} == {"train"} and {date_split(d) for d in test} == {"test"}
    other = make_dates(n_train=6000, n_valid=0, n_test=0, n_unseen=0, seed=6)  # the split ignores the seed
    assert not dates_of(other.train) & test
    all_days = [dt.date(1900, 1, 1) + dt.timedelta(n) for n in range(0, 54787, 7)]
    share = sum(date_split(d) == "test" for d in all_days) / len(all_days)
    assert 0.08 < share < 0.12


def test_year_ranges(task) -> None:
    for pairs in (task.train, task.valid, task.test):
        years = {d.year for d in dates_of(pairs)}
        assert min(years) >= 1900 and max(years) <= 2049
    train_years = {d.year for d in dates_of(task.train)}
    assert min(train_years) <= 1903 and max(train_years) >= 2046  # drawn over the whole range
    unseen = {d.year for d in dates_of(task.extra["unseen_years"])}
    assert min(unseen) >= 2050 and max(unseen) <= 2099 and len(unseen) > 40
    assert not unseen & train_years


def test_deterministic_for_a_seed(task) -> None:
    again = make_dates(n_train=6000, n_valid=800, n_test=800, n_unseen=800, seed=5)
    assert again == task
    assert make_dates(n_train=50, n_valid=0, n_test=0, n_unseen=0, seed=9).train != task.train
    assert make_dates(n_train=0, n_valid=0, n_test=0, n_unseen=0).train.source == ()


@pytest.mark.slow
def test_every_pair_round_trips_and_names_a_weekday_iff_its_source_does(task) -> None:
    for pairs in (task.train, task.test, task.extra["unseen_years"]):
        for source, target, locale in zip(pairs.source, pairs.target, pairs.tag, strict=True):
            day, weekday = parse_zh(target)
            assert source in {date_pair(day, locale, p)[0] for _, p in date_formats(locale)}, (source, target)
            named = any(n in source.lower() for n in weekday_names(locale))
            assert (weekday is not None) == named, (locale, source, target)
    assert 0.2 < sum("星期" in t for t in task.train.target) / len(task.train) < 0.4


def test_cases_rewrites_a_share_of_the_training_sources_only() -> None:
    plain = make_dates(n_train=3000, n_valid=100, n_test=100, n_unseen=100, seed=3)
    cased = make_dates(n_train=3000, n_valid=100, n_test=100, n_unseen=100, seed=3, cases=0.4)
    # the same dates, targets, locales and held-out splits: only the case of some training sources differs
    assert cased.train.target == plain.train.target and cased.train.tag == plain.train.tag
    assert (cased.valid, cased.test, cased.extra) == (plain.valid, plain.test, plain.extra)
    pairs = list(zip(plain.train.source, cased.train.source, strict=True))
    assert all(c in (p, p.upper(), p.lower(), p.title()) for p, c in pairs)
    changed = [c for p, c in pairs if c != p]
    assert 0.2 < len(changed) / len(pairs) < 0.4  # 0.4 drawn, less those already in the case drawn
    assert {"upper", "lower", "title"} <= {k for c in changed for k, f in
                                           (("upper", str.upper), ("lower", str.lower), ("title", str.title))
                                           if c == f(c)}
    assert make_dates(n_train=3000, n_valid=0, n_test=0, n_unseen=0, seed=3, cases=0.4).train == cased.train


def test_bad_sizes() -> None:
    with pytest.raises(InputError, match="n_test"):
        make_dates(n_test=-1)
    for bad in (-0.1, 1.5, True, "0.3"):
        with pytest.raises(InputError, match="cases must be a share between 0 and 1"):
            make_dates(n_train=1, cases=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(("output", "problem"), [
    ("2021年3月5日星期五", None),
    ("2021年3月5日", None),
    ("2020年2月29日", None),
    ("2021年2月30日", "no day 30 of month 2"),
    ("2021年2月29日", "no day 29 of month 2"),
    ("2021年13月5日", "month 13"),
    ("2021年3月0日", "no day 0"),
    ("2021年3月5日星期六", "wrong weekday: 2021-03-05 is a 星期五, not a 星期六"),
    ("Hello", "not a date of the form"),
    ("2021年3月5", "not a date of the form"),
])
def test_a_dates_output_that_is_no_calendar_date_is_named(output: str, problem: str | None) -> None:
    got = calendar_problem(output)
    assert got is None if problem is None else problem in (got or "")


def test_every_valid_target_of_the_task_is_a_calendar_date() -> None:
    splits = make_dates(n_train=0, n_valid=300, n_test=0, n_unseen=300, seed=3)
    for target in splits.valid.target + splits.extra["unseen_years"].target:
        assert calendar_problem(target) is None, target
    for source, target in zip(splits.valid.source, splits.valid.target, strict=True):
        assert ambiguity(source) is None and year_problem(source, target) is None, source


@pytest.mark.parametrize(("text", "readings"), [
    ("3/5/2021", ["March 5, 2021 (month first, 2021年3月5日)", "3 May 2021 (day first, 2021年5月3日)"]),
    ("05/03/2021", ["May 3, 2021 (month first", "5 March 2021 (day first"]),
    ("05.03.21", ["5 March 1921", "5 March 2021"]),
    ("3-5-21", ["3 May 1921", "3 May 2021"]),
    ("10/12/99", ["October 12, 1999", "10 December 1999", "October 12, 2099", "10 December 2099"]),
    ("13/5/2021", None),  # only day first is a date
    ("5/5/2021", None),  # both orders read the same
    ("05.03.2021", None),  # a dot is day first in every CLDR locale
    ("2021-03-05", None),
    ("March 5, 2021", None),
])
def test_an_ambiguous_numeric_date_names_every_reading(text: str, readings: list[str] | None) -> None:
    got = ambiguity(text)
    if readings is None:
        assert got is None
        return
    assert got is not None and got.startswith(f"{text} is ambiguous: ")
    assert all(r in got for r in readings) and got.count(" or ") == len(readings) - 1, got
    assert len(date_readings(text)) == len(readings)


def test_years_outside_the_task_are_named_in_the_input_or_the_output() -> None:
    assert year_problem("July 4, 1776", "1976年7月4日") is not None
    assert "1776" in (year_problem("July 4, 1776", "1976年7月4日") or "")
    assert year_problem("hello", "2150年1月1日") is not None
    assert year_problem("July 4, 1976", "1976年7月4日") is None
    assert year_problem("1 January 2099", "2099年1月1日") is None


@pytest.mark.parametrize(("text", "parts"), [
    ("2021", 1), ("March 2021", 2), ("hello", 0), ("the fifth of March, 2021", 2), ("2021年", 1), ("Guten Tag", 0),
    ("Sept. 5, 2021", None), ("MARCH 5, 2021", None), ("2021年3月5日", None), ("5 мар. 2021 г.", None),
    ("Tues. Feb. 14, 2017", None), ("3/5/2021", None), ("2021. 3. 5.", None), ("14 juillet 1789", None),
])
def test_an_input_with_fewer_than_three_parts_of_a_date_is_named(text: str, parts: int | None) -> None:
    problem = parts_problem(text)
    if parts is None:
        assert problem is None
    else:
        assert problem is not None and f"holds {parts} of the three parts" in problem and repr(text) in problem


def test_every_source_of_the_task_has_three_parts_of_a_date() -> None:
    task = make_dates(n_train=20_000, n_valid=2_000, n_test=2_000, n_unseen=2_000, seed=1, cases=0.3)
    for pairs in (task.train, task.valid, task.test, task.extra["unseen_years"]):
        assert [s for s in pairs.source if parts_problem(s) is not None] == []
    for locale in DATE_LOCALES:  # every format, on a date whose month is the longest word: September
        for _, pattern in date_formats(locale):
            assert parts_problem(date_pair(dt.date(2021, 9, 30), locale, pattern)[0]) is None, (locale, pattern)


@pytest.mark.parametrize(("text", "words"), [
    ("Feb 30, 2021", ["names 30 February 2021, which does not exist", "February 2021 has 28 days"]),
    ("30. Februar 2021", ["names 30 February 2021, which does not exist"]),
    ("31 avril 2021", ["names 31 April 2021", "April 2021 has 30 days"]),
    ("Feb 29, 2100", ["names 29 February 2100", "has 28 days"]),  # not a leap year
    ("2021年2月30日", ["names 30 February 2021, which does not exist"]),
    ("2021-02-29", ["names 29 February 2021"]),
    ("30/02/2021", ["30/02/2021 names no real date (read day first or month first)"]),
    ("Monday, March 5, 2021", ["weekday is wrong: 5 March 2021 is a Friday, not a Monday"]),
    ("martes, 5 de marzo de 2021", ["5 March 2021 is a Friday, not a Tuesday"]),
    ("2021年3月5日星期一", ["5 March 2021 is a Friday, not a Monday"]),
    ("2021년 3월 5일 월요일", ["5 March 2021 is a Friday, not a Monday"]),
    ("Friday, March 5, 2021", None), ("Feb 29, 2020", None), ("2021年3月5日金曜日", None), ("3/5/2021", None),
    ("I had pizza for lunch", None), ("March 2021", None), ("пятница, 5 марта 2021 г.", None),
    ("MARCH 5, 2021", None), ("2020-02-29", None),
])
def test_an_input_that_names_no_real_date_is_named(text: str, words: list[str] | None) -> None:
    problem = input_problem(text)
    if words is None:
        assert problem is None, problem
    else:
        assert problem is not None, text
        for w in words:
            assert w in problem, f"{w!r} missing from {problem!r}"


def test_no_source_the_task_writes_is_said_to_name_no_real_date() -> None:
    rng = random.Random(0)
    days = [dt.date(1900, 1, 1) + dt.timedelta(days=rng.randrange(200 * 365)) for _ in range(60)]
    days += [dt.date(2020, 2, 29), dt.date(2021, 2, 28), dt.date(1999, 12, 31), dt.date(2021, 9, 30)]
    flagged = [(locale, pattern, date_pair(d, locale, pattern)[0]) for locale in DATE_LOCALES
               for _, pattern in date_formats(locale) for d in days
               if input_problem(date_pair(d, locale, pattern)[0]) is not None]
    assert flagged == []
    task = make_dates(n_train=3_000, n_valid=500, n_test=500, n_unseen=500, seed=2, cases=0.3)  # cased sources too
    assert [s for s in task.train.source if input_problem(s) is not None] == []


def test_held_out_negatives_are_deterministic_of_every_kind_and_use_no_training_date() -> None:
    neg = held_out_negatives(300, seed=1)
    assert neg == held_out_negatives(300, seed=1) and neg != held_out_negatives(300, seed=2)
    assert [k for _, k in neg[:3]] == ["non_date", "year_outside", "garbled"] and len(neg) == 300
    assert all(text.strip() for text, _ in neg)
    for text, kind in neg:
        if kind == "year_outside":
            assert year_problem(text, "") is not None, text
    targets = set(make_dates(n_train=2000, n_valid=0, n_test=0, n_unseen=0).train.source)
    assert not targets & {t for t, _ in neg}
    with pytest.raises(InputError, match="whole number"):
        held_out_negatives(-1)
