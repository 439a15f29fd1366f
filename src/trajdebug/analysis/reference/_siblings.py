"""A step's other occurrences in the same run as its reference, profiled in linear time.

A step called many times in one run (a lookup per item, a converter per line)
is its own reference (`sibling_profiles`): each occurrence is checked against
a profile of all the *other* occurrences (leave one out).  Observing the k - 1
others for each of k occurrences costs k² observations, which made a run with
a few steps called ~200 times each take seconds.  Here each occurrence is read
once (`_record`) and each leave-one-out profile is derived from the totals:

- counts lose the left-out occurrence's share;
- lists (numbers, ratios, sizes) lose its slice;
- key order (a profile's dicts are in first-seen order, and `violations`
  reads them in that order) is kept by remembering where each key was seen
  first and second: a key first seen in the left-out occurrence moves to
  where the others first had it;
- capped tallies (a field's first `VALUES_CAP` distinct values, a step's first
  `SCHEMAS_CAP` output shapes and `INTRODUCED_CAP` introduced values) are
  recounted only for the occurrences seen before the cap filled, the only ones
  whose removal changes them.

The result equals observing the others one by one; ``tests/test_reference.py``
checks that against the direct construction.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from trajdebug.analysis.lineage import Lineage
from trajdebug.analysis.reference._profile import (
    INTRODUCED_CAP,
    MIN_SUPPORT,
    SCHEMAS_CAP,
    VALUES_CAP,
    Profile,
    StepKey,
    _FieldStats,
    _Obs,
    _record,
    _StepStats,
    step_key,
)
from trajdebug.core.model import CONTAINER_KINDS, Run, Step


MAX_OCCURRENCES = 200
"""A step called more often than this in one run gets no sibling profile (its calls are too many to say
what one of them should have done)."""

_K = TypeVar("_K", bound=Hashable)

_Place = tuple[int, int]
"""(occurrence, position within it) where a key was seen."""


class _Tally(Generic[_K]):
    """Counts of keys over a sequence of occurrences (each a list of keys), in first-seen order.

    ``without(i)`` is the tally of all occurrences but the i-th: what counting
    the others one by one gives, order included.  With ``cap``, counting stops
    for good once ``cap`` distinct keys are held (as `_apply` does), and the
    first raw text of each key is kept.
    """

    def __init__(
        self, events: Sequence[Sequence[_K]], raws: Sequence[Sequence[str]] | None = None, cap: int | None = None
    ) -> None:
        self.events = events
        self.raws = raws
        self.cap = cap
        self.total: dict[_K, int] = {}
        self.places: dict[_K, list[tuple[int, int, str]]] = {}
        self.own: list[dict[_K, int]] = []
        for j, ev in enumerate(events):
            mine: dict[_K, int] = {}
            for pos, key in enumerate(ev):
                if key not in mine:
                    seen = self.places.setdefault(key, [])
                    if len(seen) < 2:
                        seen.append((j, pos, raws[j][pos] if raws is not None else ""))
                mine[key] = mine.get(key, 0) + 1
                self.total[key] = self.total.get(key, 0) + 1
            self.own.append(mine)
        # The occurrence during which a capped tally filled up (None: it never did).
        self.full_at: int | None = None
        self.full: tuple[dict[_K, int], dict[_K, str]] = ({}, {})
        if cap is not None and len(self.total) >= cap:
            self.full, self.full_at = self._replay(-1)

    def _replay(self, skip: int) -> tuple[tuple[dict[_K, int], dict[_K, str]], int | None]:
        """Count occurrence by occurrence (leaving ``skip`` out) under the cap; also where it filled."""
        counts: dict[_K, int] = {}
        first: dict[_K, str] = {}
        cap = self.cap if self.cap is not None else len(self.total) + 1
        for j, ev in enumerate(self.events):
            if j == skip:
                continue
            for pos, key in enumerate(ev):
                if len(counts) >= cap:
                    return (counts, first), j
                counts[key] = counts.get(key, 0) + 1
                if self.raws is not None and key not in first:
                    first[key] = self.raws[j][pos]
            if len(counts) >= cap:
                return (counts, first), j
        return (counts, first), None

    def without(self, i: int) -> tuple[dict[_K, int], dict[_K, str]]:
        """The counts (and first raw texts) of every occurrence but the i-th, in first-seen order."""
        if self.full_at is not None:
            if i < 0 or i > self.full_at:
                return dict(self.full[0]), dict(self.full[1])
            return self._replay(i)[0]
        mine = self.own[i] if i >= 0 else {}
        kept: list[tuple[_Place, _K, int, str]] = []
        for key, n in self.total.items():
            m = n - mine.get(key, 0)
            if m > 0:
                seen = self.places[key]
                j, pos, raw = seen[0] if seen[0][0] != i else seen[1]
                kept.append(((j, pos), key, m, raw))
        if any(self.places[key][0][0] == i for _, key, _, _ in kept):
            kept.sort(key=lambda t: t[0])  # a key first seen in the one left out: where the others first had it
        counts = {key: m for _, key, m, _ in kept}
        raws = {key: raw for _, key, _, raw in kept} if self.raws is not None else {}
        return counts, raws


def _without(items: list[_K], at: int | None) -> list[_K]:
    return items if at is None else items[:at] + items[at + 1 :]


FOLLOWS = 0.25
"""A number follows its call's category (`_follows`) when the spread of its values within a category is at most
this share of their spread over all the calls (orders of magnitude)."""


def _follows(groups: Mapping[Hashable, Sequence[float]]) -> bool:
    """Whether numbers grouped by their calls' category follow it: they differ between categories while they
    (nearly) hold within each category of two calls or more (a rate per currency), so a call is compared with
    its category's calls only.  A ratio that holds across the categories (litres per bottle, whatever the
    wine's style) or numbers that spread as widely within a category do not: all the calls are its peers."""
    if len(groups) < 2:
        return False
    logs = {k: [math.log10(abs(x)) for x in vs if x] for k, vs in groups.items()}
    every = [x for v in logs.values() for x in v]
    within = [max(v) - min(v) for v in logs.values() if len(v) >= 2]
    if not within or len(every) < 2:
        return False
    between = max(every) - min(every)
    return between > 0 and max(within) <= FOLLOWS * between


def _peers(at: Mapping[int, int], items: Sequence[Sequence[float]], cats: Sequence[Hashable], i: int) -> list[int] | None:
    """The occurrences (other than the i-th) whose numbers the i-th is compared with: those of its category when
    the numbers follow it (`_follows`) and they hold enough numbers to be checked against (`MIN_SUPPORT`), else
    None (all of them, as before categories: rev56b).  A call alone in its category, or with too few calls of
    it, so keeps its check against every other call: a yen rate a hundred times off among dollar and pound
    rates is still an outlier, at the price of a right one seen once (nu29's JPY rate) being one too.
    ``at``: occurrence -> index in ``items``."""
    groups: dict[Hashable, list[float]] = {}
    for j, n in at.items():
        if j != i:
            groups.setdefault(cats[j], []).extend(items[n])
    if len(groups.get(cats[i], ())) < MIN_SUPPORT or not _follows(groups):
        return None
    return sorted(j for j in at if j != i and cats[j] == cats[i])


CATEGORY_LENGTH = 32
"""The longest text an argument's value may be to name a category (a currency code, a mode, a kind)."""


def _categorical(value: Any) -> bool:
    """Whether an argument's value can name a category: a short text of letters, no digit (a date, an amount,
    an id such as ``R-101`` names none)."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= CATEGORY_LENGTH
        and any(c.isalpha() for c in value)
        and not any(c.isdigit() for c in value)
    )


def _arguments(value: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """The scalar arguments of a call's input, by dotted path (mappings only: a list's items are no argument)."""
    if isinstance(value, Mapping) and depth < 4:
        for k, v in value.items():
            yield from _arguments(v, f"{path}.{k}" if path else str(k), depth + 1)
    elif path and not isinstance(value, (list, tuple, Mapping)):
        yield path, value


def _categories(steps: Sequence[Step]) -> list[Hashable] | None:
    """Per call of one step, its category: the values of its categorical arguments; None when the step has none.

    An argument is categorical when its values name categories (`_categorical`) and repeat across the calls:
    at least half of the calls share their value with another call, and not all one value (``currency`` of
    USD, USD, GBP, USD, JPY).  A number a call gave out is then compared only with the calls of its category
    when the numbers follow the categories (`_follows`: a USD rate a hundred times off among USD rates is an
    outlier even where JPY rates widen the range of all the calls) and the category holds enough of them
    (`_peers`: a call alone in its category is compared with all the others, as before).  A loop over unique
    ids (``R-101``, ``alice``, ``bob``) repeats no value: its calls stay one series."""
    args = [dict(_arguments(s.input)) for s in steps]
    paths = dict.fromkeys(p for a in args for p in a)
    chosen: list[str] = []
    for p in paths:
        vals = [a.get(p) for a in args]
        if not all(_categorical(v) for v in vals):
            continue
        counts: dict[Any, int] = {}
        for v in vals:
            counts[v] = counts.get(v, 0) + 1
        shared = sum(n for n in counts.values() if n > 1)
        if len(counts) > 1 and 2 * shared >= len(vals):
            chosen.append(p)
    if not chosen:
        return None
    return [tuple(a.get(p) for p in chosen) for a in args]


class _FieldGroup:
    """One output field over the occurrences that have it."""

    def __init__(self, where: list[int], obs: list[_Obs], name: str) -> None:
        fos = [next(fo for fo in obs[j].fields if fo.name == name) for j in where]
        self.local = {j: n for n, j in enumerate(where)}
        self.runs = [obs[j].run_id for j in where]
        self.grounded = [fo.grounded for fo in fos]
        self.kept_seen = [fo.kept_seen for fo in fos]
        self.kept = [fo.kept_seen and fo.kept for fo in fos]
        self.totals = (sum(self.grounded), sum(self.kept_seen), sum(self.kept))
        # Days and sources (`_profile._days_given`, `field_sources`) per occurrence, to leave one out.
        self.days = [(int(fo.days is not None), int(bool(fo.days))) for fo in fos]
        self.day_totals = (sum(d[0] for d in self.days), sum(d[1] for d in self.days))
        self.dated = [int(fo.dated) for fo in fos]  # (`_profile._years_given`)
        self.marks = [fo.marks for fo in fos]  # (`separator_marks`)
        self.sources = [fo.sources for fo in fos]
        self.source_totals: dict[str, int] = {}
        for parts in self.sources:
            for part in parts or ():
                self.source_totals[part] = self.source_totals.get(part, 0) + 1
        self.sources_seen = sum(parts is not None for parts in self.sources)
        self.formulas = _Tally([fo.formulas for fo in fos])
        self.fits = _Tally([fo.fits for fo in fos])
        self.values = _Tally(
            [[k for k, _ in fo.values] for fo in fos], [[r for _, r in fo.values] for fo in fos], VALUES_CAP
        )
        self.numbers: list[float] = []
        self.units: list[str] = []
        self.spans: list[tuple[int, int]] = []
        for fo in fos:
            self.spans.append((len(self.numbers), len(self.numbers) + len(fo.numbers)))
            self.numbers.extend(fo.numbers)
            self.units.extend(fo.units)

    def without(self, i: int, cats: Sequence[Hashable] | None = None) -> _FieldStats:
        n = self.local.get(i)
        fs = _FieldStats()
        fs.n = len(self.runs) - (n is not None)
        fs.runs = set(_without(self.runs, n))
        g, ks, k = self.totals
        if n is None:
            fs.grounded, fs.kept_seen, fs.kept = g, ks, k
            fs.numbers = list(self.numbers)
            fs.units = list(self.units)
        else:
            fs.grounded = g - self.grounded[n]
            fs.kept_seen = ks - self.kept_seen[n]
            fs.kept = k - self.kept[n]
            a, b = self.spans[n]
            fs.numbers = self.numbers[:a] + self.numbers[b:]
            fs.units = self.units[:a] + self.units[b:]
        if cats is not None:
            # (Numbers only from the calls of its category when they follow it: `_categories`.)
            per = [self.numbers[a:b] for a, b in self.spans]
            peers = _peers(self.local, per, cats, i)
            if peers is not None:
                kept = [self.spans[self.local[j]] for j in peers]
                fs.numbers = [x for a, b in kept for x in self.numbers[a:b]]
                fs.units = [u for a, b in kept for u in self.units[a:b]]
        fs.days_seen, fs.days_grounded = self.day_totals
        fs.dated = sum(self.dated) - (self.dated[n] if n is not None else 0)
        fs.marks = set().union(*_without(self.marks, n))
        fs.sources_seen = self.sources_seen
        fs.source_counts = dict(self.source_totals)
        if n is not None:
            fs.days_seen -= self.days[n][0]
            fs.days_grounded -= self.days[n][1]
            mine = self.sources[n]
            if mine is not None:
                fs.sources_seen -= 1
                for part in mine:
                    fs.source_counts[part] -= 1
                    if not fs.source_counts[part]:
                        del fs.source_counts[part]
        fs.formulas = self.formulas.without(-1 if n is None else n)[0]
        fs.fits = self.fits.without(-1 if n is None else n)[0]
        fs.values, fs.raws = self.values.without(-1 if n is None else n)
        return fs


class _Occurrences:
    """All occurrences of one step in a run, ready to leave each one out."""

    def __init__(self, obs: list[_Obs], cats: list[Hashable] | None = None) -> None:
        self.obs = obs
        self.cats = cats
        self.ids = [o.run_id for o in obs]
        self.empty = [o.empty for o in obs]
        self.schemas: _Tally[frozenset[str]] = _Tally([[o.schema] for o in obs], None, SCHEMAS_CAP)
        self.introduced: _Tally[str] = _Tally(
            [[k for fo in o.fields for k in fo.introduced] for o in obs], None, INTRODUCED_CAP
        )
        self.field_names: _Tally[str] = _Tally([[fo.name for fo in o.fields] for o in obs])
        where: dict[str, list[int]] = {}
        for j, o in enumerate(obs):
            for fo in o.fields:
                where.setdefault(fo.name, []).append(j)
        self.fields = {f: _FieldGroup(js, obs, f) for f, js in where.items()}
        self.ratio_keys: _Tally[tuple[str, str]] = _Tally([[k for k, _ in o.ratios] for o in obs])
        self.ratios: dict[tuple[str, str], tuple[dict[int, int], list[float]]] = {}
        for j, o in enumerate(obs):
            for key, r in o.ratios:
                at, vals = self.ratios.setdefault(key, ({}, []))
                at[j] = len(vals)
                vals.append(r)
        self.unit_keys: _Tally[tuple[str, str, str]] = _Tally([[k for k, _, _ in o.unit_ratios] for o in obs])
        self.unit_ratios: dict[tuple[str, str, str], tuple[dict[int, int], list[tuple[float, float]]]] = {}
        for j, o in enumerate(obs):
            for ukey, r, x in o.unit_ratios:
                uat, uvals = self.unit_ratios.setdefault(ukey, ({}, []))
                uat[j] = len(uvals)
                uvals.append((r, x))
        self.size_at: dict[int, int] = {}
        self.sizes: list[float] = []
        for j, o in enumerate(obs):
            if o.size is not None:
                self.size_at[j] = len(self.sizes)
                self.sizes.append(o.size)

    def without(self, i: int) -> _StepStats:
        """The stats of every occurrence but the i-th (as observing them one by one gives)."""
        st = _StepStats()
        st.n = len(self.obs) - 1
        st.runs = set(_without(self.ids, i))
        st.empty = sum(self.empty) - self.empty[i]
        st.schemas = self.schemas.without(i)[0]
        st.introduced = set(self.introduced.without(i)[0])
        present = self.field_names.without(i)[0]
        cats = self.cats
        st.fields = {f: self.fields[f].without(i, cats) for f in present}
        st.present = present
        for key in self.ratio_keys.without(i)[0]:
            at, vals = self.ratios[key]
            peers = _peers(at, [[v] for v in vals], cats, i) if cats is not None else None
            st.ratios[key] = _without(vals, at.get(i)) if peers is None else [vals[at[j]] for j in peers]
        for ukey in self.unit_keys.without(i)[0]:
            uat, uvals = self.unit_ratios[ukey]
            upeers = _peers(uat, [[v[0]] for v in uvals], cats, i) if cats is not None else None
            st.unit_ratios[ukey] = _without(uvals, uat.get(i)) if upeers is None else [uvals[uat[j]] for j in upeers]
        st.sizes = _without(self.sizes, self.size_at.get(i))
        return st


class SiblingProfiles(Mapping[str, Profile]):
    """Step id -> the profile of that step's other occurrences, made when asked for (`sibling_profiles`).

    Each profile holds its k - 1 occurrences' values, so holding all k of them at
    once would take memory quadratic in k; each is derived from the totals on
    access instead (not kept: read each once).
    """

    def __init__(self, run_id: str, where: dict[str, tuple[StepKey, _Occurrences, int]]) -> None:
        self._run_id = run_id
        self._where = where

    def __getitem__(self, step_id: str) -> Profile:
        key, all_of, i = self._where[step_id]
        return Profile((self._run_id,), {key: all_of.without(i)})

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


def sibling_profiles(run: Run, lineage: Lineage, keys: Iterable[StepKey] | None = None) -> SiblingProfiles:
    """Per step, a profile of the *other* occurrences of the same step in the same run (leave one out).

    A step called several times in one run (a lookup per item, a converter per
    line) is its own reference: an occurrence that breaks what all the others
    did is suspect even with no passing run at hand.  Only steps with more than
    `MIN_SUPPORT` and at most `MAX_OCCURRENCES` occurrences get one.  The
    profiles hold no requests and answers (other occurrences answered other
    requests: no same-input check within a run).
    """
    groups: dict[StepKey, list[Step]] = {}
    # (The plain key: a model's calls in one run compare with each other whatever node made them, as before
    # model calls had roles (`step_key`); splitting them by node left too few to compare.)
    for s in run.steps:
        if s.kind in CONTAINER_KINDS or s.status != "ok":
            continue
        groups.setdefault(step_key(s), []).append(s)
    wanted = None if keys is None else set(keys)
    where: dict[str, tuple[StepKey, _Occurrences, int]] = {}
    for key, occ in groups.items():
        if len(occ) <= MIN_SUPPORT or len(occ) > MAX_OCCURRENCES or (wanted is not None and key not in wanted):
            continue
        # Each occurrence counts as a run of its own (its step id), so an invariant needs two of them.
        all_of = _Occurrences([_record(s, lineage.view(s.step_id), s.step_id) for s in occ], _categories(occ))
        for i, s in enumerate(occ):
            where[s.step_id] = (key, all_of, i)
    return SiblingProfiles(run.run_id, where)


__all__ = ["CATEGORY_LENGTH", "FOLLOWS", "MAX_OCCURRENCES", "SiblingProfiles", "sibling_profiles"]
