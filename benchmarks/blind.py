"""The blind suites: root-cause localization on agents written without sight of the analysis.

Each suite under ``benchmarks/heldout/<suite>/`` was written by someone who saw
only the README, the public API and a list of fault kinds (never the analysis
code, never the other suites), then frozen.  Its ``generate.py OUTDIR`` runs the
agents (LangGraph with the tracer, the OpenAI Agents SDK with the processor,
OpenInference exported as OTLP JSON, the recording SDK) against a fake model
server on 127.0.0.1 and writes, per case, the failed run alone
(``failed.*``), the failed run with passing runs of the same agent on other
inputs (``with_refs.*``), and the ground truth (``truth.json``).

Scoring goes through the library's one pipeline, `trajdebug.analyze_source`,
exactly as ``trajdebug analyze SOURCE --run ID`` runs it, in two settings: the
failed run alone, and with its agent's passing runs in the same source.  The
truth step is found by name and occurrence in the failed run as recorded; a
case counts as *on the dependency path* when the truth step lies in the
failing step's backward slice over the edges the analysis used.  Two more settings on request (``--settings``,
`SAME_INPUT_SETTINGS`) add each case's control run, the same input passing, as ``refs``.

Suites: ``suite_dev`` (a development suite: its misses are studied),
``suite_a`` (held out when written, then studied: a development suite now),
``suite_d`` (written blind like the held-out suites, for study: a development suite),
``suite_b``, ``suite_c``, ``suite_e``, ``suite_f``, ``suite_g`` and ``suite_h`` (written blind on the real
frameworks, each scored once held out, then trained on by the learned ranker since 2026-12-02:
development suites now; suite_h's misses were studied too), and ``suite_i`` (written blind after them,
scored once held out on 2026-12-02, its misses studied since: a development suite), and ``suite_j``
(written blind and frozen on 2026-12-02, scored once held out by `benchmarks.score_heldout` the same day,
its misses studied since: a development suite), and ``suite_k`` (written blind the same day, scored once
held out by `benchmarks.score_heldout` at 16:55 UTC, its misses studied since 2026-12-03: a development
suite), and ``suite_l`` (written blind on 2026-12-02, scored once held out by `benchmarks.score_heldout` on
2026-12-03 at 01:56 UTC, its misses studied since 2026-12-03 05:30 UTC: a development suite), and ``suite_m``
(written blind on 2026-12-03, scored once held out by `benchmarks.score_heldout` at 06:39 UTC, its misses
studied since 2026-12-03 07:50 UTC: a development suite), and ``suite_n`` (written blind on 2026-12-03 at 05:39
UTC, scored once held out by `benchmarks.score_heldout` at 09:11 UTC, its misses studied since 09:20 UTC: a
development suite), and ``suite_o`` (written blind on 2026-12-03 at 08:03 UTC, scored once held out by
`benchmarks.score_heldout` at 10:33 UTC, its misses studied since 10:45 UTC: a development suite), and
``suite_p`` (written blind and frozen on 2026-12-03 at 11:02 UTC, scored once held out at 12:19 UTC: a development
suite since), and ``suite_q`` (written blind and frozen on 2026-12-03 at 12:34 UTC, scored once held out at 13:22 UTC
on 6a119af: a development suite since, its misses left unstudied so that it tells whether fixes read from suite P
carry).  ``suite_r`` and ``suite_s`` (written blind and frozen on 2026-12-03 at 13:49 and 14:08 UTC, scored once held out
at 15:23 and 15:24 UTC on 0cede3f: development suites since, their misses not yet studied).  ``suite_t`` (written
blind and frozen on 2026-12-03 at 15:38 UTC, scored once held out at 16:10 UTC on 5cfee08: a development suite since,
its misses left unstudied, a carry check beside suite_q).  ``suite_u`` and ``suite_v`` (written blind and frozen on 2026-12-03 at 16:36 UTC) and
``suite_w`` (frozen at 16:57 UTC), scored once held out at 17:39-17:40 UTC on 1b47148: development suites since, their
misses not yet studied.  ``suite_x`` and ``suite_y`` (written blind and frozen on 2026-12-03 at 18:01 and 18:02 UTC, scored once held out on
2026-12-04 at 15:27 UTC on 2553c9d: development suites since).  ``suite_z`` and ``suite_za`` (written blind and frozen on
2026-12-04 at 15:43 and 15:39 UTC, scored once held out at 16:48-16:49 UTC on e436d3d: development suites since).
``suite_zb`` and ``suite_zc`` (written blind and frozen on 2026-12-04 at 17:06 and 17:02 UTC, scored once held out
at 17:09-17:10 UTC on 37b21b3: development suites since).  ``suite_zd`` and ``suite_ze`` (written blind and
frozen on 2026-12-04 at 17:15 and 17:16 UTC, scored once held out at 18:16-18:18 UTC on d96e64f: development
suites since).  ``suite_zf`` and ``suite_zg`` (written blind and frozen on 2026-12-04 at 18:28 and 18:27 UTC, scored once held out
at 20:17-20:18 UTC on 0282d6f, the round's final analysis: development suites since).  ``suite_zh`` and ``suite_zi``
(written blind and frozen on 2026-12-04 at 20:35 and 20:33 UTC, scored once held out at 20:51 UTC on 0cf1479: development
suites since).  ``suite_zj`` and ``suite_zk`` (written blind and frozen on 2026-12-04 at 21:05 and 21:03 UTC, scored once held out
at 22:45 UTC on c94f54f, the round's final analysis: development suites since).  ``suite_zl`` and ``suite_zm`` (written
blind and frozen on 2026-12-04 at 22:58 and 22:56 UTC, scored once held out at 23:25-23:26 UTC on 96876b2, the last round's
final analysis: development suites since).  ``suite_zn`` and ``suite_zo`` (written blind and frozen on 2026-12-04 at 23:38 and 23:39 UTC, scored once held out
at 01:22-01:23 UTC on 2026-12-05 on 0c3c875, the round's final analysis: development suites since).  ``suite_zp`` and
``suite_zq`` (written blind and frozen on 2026-12-05 at 00:48 UTC, scored once held out at 02:13-02:14 UTC on 6dc16b3,
the last round's final analysis: development suites since).  ``suite_zr`` and ``suite_zs`` (written blind and frozen on
2026-12-05 at 02:26 and 02:30 UTC, scored once held out at 04:26 UTC on 06d4ec0, the round's final analysis:
development suites since).  ``suite_zt`` and ``suite_zu`` (written blind and frozen on 2026-12-05 at 02:47 and
02:46 UTC, scored once held out at 05:43 UTC on 76665b7, the last round's final analysis: development suites since).
``suite_zv`` and ``suite_zw`` (written blind and frozen on 2026-12-05 at 05:55 UTC, scored once held out at 07:37
UTC on e044569, the round's final analysis: development suites since).  ``suite_zx`` and ``suite_zy`` (written blind
and frozen at 06:12 and 06:13 UTC, scored once held out at 08:25 UTC on e7b8ec4, the last round's final analysis:
development suites since).  ``suite_zz`` and ``suite_zza`` (written blind and frozen on 2026-12-05 at 08:42 and
08:38 UTC, scored once held out at 10:29 UTC on 49ca2a9, the round's final analysis: development suites since).
``suite_zzb`` and ``suite_zzc`` (written blind and frozen at 08:57 and 08:53 UTC, scored once held out at 11:11-11:12
UTC on 3b3cfe4, the last round's final analysis: development suites since).  ``suite_zzd`` and
``suite_zze`` (written blind and frozen on 2026-12-05 at 11:25 and 11:23 UTC, scored once held out at 13:19-13:20 UTC
on 17c962d, the round's final analysis: development suites since).  ``suite_zzf`` and
``suite_zzg`` (written blind and frozen on 2026-12-05 at 13:28 and 13:29 UTC, scored once held out at 21:25 UTC on
f513b7e, the last round's final analysis: development suites since).  ``suite_zzh`` and
``suite_zzi`` (written blind and frozen at 21:52 and 21:55 UTC, scored once held out at 23:04 UTC on 14b340c6, the
round's final analysis: development suites since).  ``suite_zzj`` and ``suite_zzk`` (written blind and frozen on 2026-12-05 at 21:46
and 21:48 UTC, scored once held out at 23:49-23:51 UTC on 3627957e, the last round's final analysis: development
suites since).  ``suite_zzl`` and ``suite_zzm`` (written blind and frozen on 2026-12-06 at 00:07 and
00:11 UTC, scored once held out at 01:48-01:49 UTC on cb62dfd6, the round's final analysis: development suites
since).  ``suite_zzn`` and ``suite_zzo`` (written blind and frozen on 2026-12-06 at 02:08 UTC, scored once held
out at 02:36-02:37 UTC on a48e53d7, the last round's final analysis; ZZO's writer saw the README's one-paragraph
account of the method after every fault was written: development suites since).
``suite_zzp`` and ``suite_zzq`` (written blind and frozen on 2026-12-06 at 02:56 UTC, scored once held out at
04:08 UTC on 73c906bb, the round's final analysis: development suites since).  ``suite_zzr`` and
``suite_zzs`` (written blind and frozen on 2026-12-06 at 04:22 and 04:19 UTC, scored once held out at 05:12-05:13
UTC on 24165bf8, the last round's final analysis: development suites since).  ``suite_zzt`` and ``suite_zzu``
(written blind and frozen on 2026-12-06 at 05:26 and 05:27 UTC, scored once held out at 07:50-07:51 UTC on 99516d54,
the last round's final analysis: development suites since).  ``suite_zzv`` and ``suite_zzw`` (written blind and
frozen on 2026-12-06 at 08:04 UTC, scored once held out at 10:36 UTC on 34f1776f, the last round's final analysis:
development suites since).  ``suite_zzx`` and ``suite_zzy`` (written blind and frozen on 2026-12-06 at 10:50 and 10:57 UTC, scored
once held out at 13:18 UTC on 9ad6b575, the last round's final analysis: development suites since).  ``suite_zzz``
and ``suite_zzza`` (written blind and frozen on 2026-12-06 at 13:42 and 13:46 UTC, scored once held out at 16:03 UTC
on 20b1403c, the last round's final analysis: development suites since).  ``suite_zzzb`` and ``suite_zzzc`` (written
blind and frozen on 2026-12-06 at 16:25 and 16:40 UTC, scored once held out at 18:17-18:18 UTC on c93d64db, the
round's final analysis: development suites since).  ``suite_zzzd`` and ``suite_zzze`` (written blind and frozen
at 17:07 and 17:25 UTC, scored once held out at 18:55-18:56 UTC on 79545659, the last round's final analysis:
development suites since).  ``suite_zzzf`` and ``suite_zzzg`` (written blind and frozen
at 19:17 and 19:13 UTC, scored once held out at 20:50-20:51 UTC on 2886c1f5, the last round's final analysis: development
suites since).  ``suite_zzzh`` and ``suite_zzzi`` (written blind and frozen at 20:40 and 20:47 UTC, scored once held
out at 22:04 UTC on 56fb6330, the last round's final analysis: development suites since).  ``suite_zzzj`` and
``suite_zzzk`` (written blind and frozen at 22:22 and 22:26 UTC, scored once held out at 00:03 UTC on 2026-12-07 on
381f97af, the round's final analysis: development suites since).  ``suite_zzzl`` and ``suite_zzzm`` (written blind and frozen
at 00:18 UTC on 2026-12-07, scored once held out at 00:56 UTC on 2d9f3890, the last round's final analysis: development
suites since).  ``suite_zzzn`` and ``suite_zzzo`` (written blind and frozen
at 01:09 and 01:11 UTC, before any change of the round merged, scored once held out at 02:31 UTC on 472e229f, the round's
final analysis: development suites since).  ``suite_zzzp`` and ``suite_zzzq`` (written blind and frozen
at 02:40 and 02:37 UTC, scored once held out at 04:00 UTC on ed5d96ab, the last round's final analysis: development
suites since).  ``suite_zzzr`` and ``suite_zzzs`` (written blind and frozen
at 04:10 and 04:16 UTC, before any change of the round merged, scored once held out at 06:01 UTC on e2dede29, the
round's final analysis: development suites since).  ``suite_zzzt`` and ``suite_zzzu`` (written blind and frozen
at 06:09 and 06:10 UTC, scored once held out at 07:09-07:10 UTC on 9ae6eccd, the last round's final analysis: development
suites since).  ``suite_zzzv`` and ``suite_zzzw`` (written blind and frozen
at 07:25 and 07:26 UTC, before any change of the round merged, scored once held out at 08:41-08:42 UTC on bb44a41c, the
round's final analysis: development suites since).  ``suite_zzzx`` and ``suite_zzzy`` (written blind
at 08:51 UTC, scored once held out at 10:14-10:16 UTC on 92b02ede, the last round's final analysis: development suites
since).  ``suite_zzzz`` and ``suite_zzzza`` (written blind and frozen at 09:54 and 09:51 UTC, before any change of the
round merged, scored once held out at 11:08-11:09 UTC on e394f96a, the round's final analysis: development suites
since).  ``suite_zzzzb`` and ``suite_zzzzc`` (written blind, frozen at 11:02 and 11:03 UTC, scored
once held out at 12:29 UTC on 402375e5, the last round's final analysis: development suites since).
``suite_zzzzd`` and ``suite_zzzze`` (written blind at round 62's start, frozen at 12:53 UTC before any change of
the round merged, scored once held out at 13:59-14:00 UTC on 21289830, the round's final analysis: development
suites since).  ``suite_zzzzf`` and ``suite_zzzzg`` (written blind during the round, frozen at 13:20 and 13:17
UTC, scored once held out at 15:25-15:26 UTC on b5c1cb34, the last round's final analysis: development suites
since).  ``suite_zzzzh`` and ``suite_zzzzi`` (written blind at round 63's start, frozen at 15:40 and 15:41 UTC before
any change of the round merged, scored once held out at 17:15-17:16 UTC on 77685537, the round's final analysis:
development suites since).  ``suite_zzzzj`` and ``suite_zzzzk`` (written blind during the round, frozen at 16:01
and 16:00 UTC, scored once held out at 18:16-18:17 UTC on 07dfceb6, the last round's final analysis: development
suites since).  ``suite_zzzzl`` and ``suite_zzzzm`` (written blind at round 64's start, frozen at 18:43 UTC before
any ranking change of the round merged, scored once held out at 20:19-20:20 UTC on 61886c2c, the round's final
analysis: development suites since).  ``suite_zzzzn`` and ``suite_zzzzo`` (written blind during the round, frozen at
18:39 and 18:42 UTC, scored once held out at 21:28 UTC on 8a02d555, the last round's final analysis: development
suites since).  ``suite_zzzzp`` and ``suite_zzzzq`` (written blind at round 65's start, frozen at 21:42 and 21:45 UTC
before any ranking change of the round merged, scored once held out at 23:08-23:09 UTC on 0271d6ef, the round's final
analysis: development suites since).  ``suite_zzzzr`` and
``suite_zzzzs`` (written blind during the round, frozen at 21:46 and 22:07 UTC: the next round's first measure) are held out
(`benchmarks.corpus.HELD_OUT`).  See ``STATUS``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajdebug.analysis import Analysis, DependencyGraph
from trajdebug.api import analyze_source
from trajdebug.core.model import Run


HERE = Path(__file__).resolve().parent / "heldout"

STATUS = {
    "suite_zzzzs": "held out (written blind on 2026-12-07 during round 65, frozen at 22:07 UTC; not yet scored: the next round's first measure, with suite_zzzzr)",
    "suite_zzzzr": "held out (written blind on 2026-12-07 during round 65, frozen at 21:46 UTC; not yet scored: the next round's first measure, with suite_zzzzs)",
    "suite_zzzzq": "development (scored once held out on 2026-12-07 at 23:09 UTC on 0271d6ef; its misses not yet studied)",
    "suite_zzzzp": "development (scored once held out on 2026-12-07 at 23:08 UTC on 0271d6ef; its misses not yet studied)",
    "suite_zzzzo": "development (scored once held out on 2026-12-07 at 21:28 UTC on 8a02d555; its misses not yet studied)",
    "suite_zzzzn": "development (scored once held out on 2026-12-07 at 21:28 UTC on 8a02d555; its misses not yet studied)",
    "suite_zzzzm": "development (scored once held out on 2026-12-07 at 20:20 UTC on 61886c2c; its misses not yet studied)",
    "suite_zzzzl": "development (scored once held out on 2026-12-07 at 20:19 UTC on 61886c2c; its misses not yet studied)",
    "suite_zzzzk": "development (scored once held out on 2026-12-07 at 18:17 UTC on 07dfceb6; its misses not yet studied)",
    "suite_zzzzj": "development (scored once held out on 2026-12-07 at 18:16 UTC on 07dfceb6; its misses not yet studied)",
    "suite_zzzzi": "development (scored once held out on 2026-12-07 at 17:16 UTC on 77685537; its misses not yet studied)",
    "suite_zzzzh": "development (scored once held out on 2026-12-07 at 17:15 UTC on 77685537; its misses not yet studied)",
    "suite_zzzzg": "development (scored once held out on 2026-12-07 at 15:26 UTC on b5c1cb34; its misses not yet studied)",
    "suite_zzzzf": "development (scored once held out on 2026-12-07 at 15:25 UTC on b5c1cb34; its misses not yet studied)",
    "suite_zzzze": "development (scored once held out on 2026-12-07 at 14:00 UTC on 21289830; its misses not yet studied)",
    "suite_zzzzd": "development (scored once held out on 2026-12-07 at 13:59 UTC on 21289830; its misses not yet studied)",
    "suite_zzzzc": "development (scored once held out on 2026-12-07 at 12:29 UTC on 402375e5; its misses not yet studied)",
    "suite_zzzzb": "development (scored once held out on 2026-12-07 at 12:29 UTC on 402375e5; its misses not yet studied)",
    "suite_zzzza": "development (scored once held out on 2026-12-07 at 11:09 UTC on e394f96a; its misses not yet studied)",
    "suite_zzzz": "development (scored once held out on 2026-12-07 at 11:08 UTC on e394f96a; its misses not yet studied)",
    "suite_zzzy": "development (scored once held out on 2026-12-07 at 10:16 UTC on 92b02ede; its misses not yet studied)",
    "suite_zzzx": "development (scored once held out on 2026-12-07 at 10:14 UTC on 92b02ede; its misses not yet studied)",
    "suite_zzzw": "development (scored once held out on 2026-12-07 at 08:42 UTC on bb44a41c; its misses not yet studied)",
    "suite_zzzv": "development (scored once held out on 2026-12-07 at 08:41 UTC on bb44a41c; its misses not yet studied)",
    "suite_zzzu": "development (scored once held out on 2026-12-07 at 07:10 UTC on 9ae6eccd; its misses not yet studied)",
    "suite_zzzt": "development (scored once held out on 2026-12-07 at 07:09 UTC on 9ae6eccd; its misses not yet studied)",
    "suite_zzzs": "development (scored once held out on 2026-12-07 at 06:02 UTC on e2dede29; its misses not yet studied)",
    "suite_zzzr": "development (scored once held out on 2026-12-07 at 06:01 UTC on e2dede29; its misses not yet studied)",
    "suite_zzzq": "development (scored once held out on 2026-12-07 at 04:00 UTC on ed5d96ab; its misses not yet studied)",
    "suite_zzzp": "development (scored once held out on 2026-12-07 at 04:00 UTC on ed5d96ab; its misses not yet studied)",
    "suite_zzzo": "development (scored once held out on 2026-12-07 at 02:31 UTC on 472e229f; its misses not yet studied)",
    "suite_zzzn": "development (scored once held out on 2026-12-07 at 02:31 UTC on 472e229f; its misses not yet studied)",
    "suite_zzzm": "development (scored once held out on 2026-12-07 at 00:56 UTC on 2d9f3890; its misses not yet studied)",
    "suite_zzzl": "development (scored once held out on 2026-12-07 at 00:56 UTC on 2d9f3890; its misses not yet studied)",
    "suite_zzzk": "development (scored once held out on 2026-12-07 at 00:03 UTC on 381f97af; its misses not yet studied)",
    "suite_zzzj": "development (scored once held out on 2026-12-07 at 00:03 UTC on 381f97af; its misses not yet studied)",
    "suite_zzzi": "development (scored once held out on 2026-12-06 at 22:04 UTC on 56fb6330; its misses not yet studied)",
    "suite_zzzh": "development (scored once held out on 2026-12-06 at 22:04 UTC on 56fb6330; its misses not yet studied)",
    "suite_zzzg": "development (scored once held out on 2026-12-06 at 20:51 UTC on 2886c1f5; its misses not yet studied)",
    "suite_zzzf": "development (scored once held out on 2026-12-06 at 20:50 UTC on 2886c1f5; its misses not yet studied)",
    "suite_zzze": "development (scored once held out on 2026-12-06 at 18:56 UTC on 79545659; its misses not yet studied)",
    "suite_zzzd": "development (scored once held out on 2026-12-06 at 18:55 UTC on 79545659; its misses not yet studied)",
    "suite_zzzc": "development (scored once held out on 2026-12-06 at 18:17 UTC on c93d64db; its misses not yet studied)",
    "suite_zzzb": "development (scored once held out on 2026-12-06 at 18:18 UTC on c93d64db; its misses not yet studied)",
    "suite_zzza": "development (scored once held out on 2026-12-06 at 16:03 UTC on 20b1403c; its misses not yet studied)",
    "suite_zzz": "development (scored once held out on 2026-12-06 at 16:03 UTC on 20b1403c; its misses not yet studied)",
    "suite_zzy": "development (scored once held out on 2026-12-06 at 13:18 UTC on 9ad6b575; its misses not yet studied)",
    "suite_zzx": "development (scored once held out on 2026-12-06 at 13:18 UTC on 9ad6b575; its misses not yet studied)",
    "suite_zzw": "development (scored once held out on 2026-12-06 at 10:36 UTC on 34f1776f; its misses not yet studied)",
    "suite_zzv": "development (scored once held out on 2026-12-06 at 10:36 UTC on 34f1776f; its misses not yet studied)",
    "suite_zzu": "development (scored once held out on 2026-12-06 at 07:51 UTC on 99516d54; its misses not yet studied)",
    "suite_zzt": "development (scored once held out on 2026-12-06 at 07:50 UTC on 99516d54; its misses not yet studied)",
    "suite_zzs": "development (scored once held out on 2026-12-06 at 05:13 UTC on 24165bf8; its misses not yet studied)",
    "suite_zzr": "development (scored once held out on 2026-12-06 at 05:12 UTC on 24165bf8; its misses not yet studied)",
    "suite_zzq": "development (scored once held out on 2026-12-06 at 04:08 UTC on 73c906bb; its misses not yet studied)",
    "suite_zzp": "development (scored once held out on 2026-12-06 at 04:08 UTC on 73c906bb; its misses not yet studied)",
    "suite_zzo": "development (scored once held out on 2026-12-06 at 02:37 UTC on a48e53d7; its writer glimpsed the README's account of the method after every fault was written; its misses not yet studied)",
    "suite_zzn": "development (scored once held out on 2026-12-06 at 02:36 UTC on a48e53d7; its misses not yet studied)",
    "suite_zzm": "development (scored once held out on 2026-12-06 at 01:49 UTC on cb62dfd6; its misses not yet studied)",
    "suite_zzl": "development (scored once held out on 2026-12-06 at 01:48 UTC on cb62dfd6; its misses not yet studied)",
    "suite_zzk": "development (scored once held out on 2026-12-05 at 23:51 UTC on 3627957e; its misses not yet studied)",
    "suite_zzj": "development (scored once held out on 2026-12-05 at 23:49 UTC on 3627957e; its misses not yet studied)",
    "suite_zzi": "development (scored once held out on 2026-12-05 at 23:04 UTC on 14b340c6; its misses not yet studied)",
    "suite_zzh": "development (scored once held out on 2026-12-05 at 23:04 UTC on 14b340c6; its misses not yet studied)",
    "suite_zzg": "development (scored once held out on 2026-12-05 at 21:25 UTC on f513b7e; its misses not yet studied)",
    "suite_zzf": "development (scored once held out on 2026-12-05 at 21:25 UTC on f513b7e; its misses not yet studied)",
    "suite_zze": "development (scored once held out on 2026-12-05 at 13:20 UTC on 17c962d; its misses not yet studied)",
    "suite_zzd": "development (scored once held out on 2026-12-05 at 13:19 UTC on 17c962d; its misses not yet studied)",
    "suite_zzc": "development (scored once held out on 2026-12-05 at 11:12 UTC on 3b3cfe4; its misses not yet studied)",
    "suite_zzb": "development (scored once held out on 2026-12-05 at 11:11 UTC on 3b3cfe4; its misses not yet studied)",
    "suite_zza": "development (scored once held out on 2026-12-05 at 10:29 UTC on 49ca2a9; its misses not yet studied)",
    "suite_zz": "development (scored once held out on 2026-12-05 at 10:29 UTC on 49ca2a9; its misses not yet studied)",
    "suite_zy": "development (scored once held out on 2026-12-05 at 08:25 UTC on e7b8ec4; its misses not yet studied)",
    "suite_zx": "development (scored once held out on 2026-12-05 at 08:25 UTC on e7b8ec4; its misses not yet studied)",
    "suite_zw": "development (scored once held out on 2026-12-05 at 07:37 UTC on e044569; its misses not yet studied)",
    "suite_zv": "development (scored once held out on 2026-12-05 at 07:37 UTC on e044569; its misses not yet studied)",
    "suite_zu": "development (scored once held out on 2026-12-05 at 05:43 UTC on 76665b7; its misses not yet studied)",
    "suite_zt": "development (scored once held out on 2026-12-05 at 05:43 UTC on 76665b7; its misses not yet studied)",
    "suite_zs": "development (scored once held out on 2026-12-05 at 04:26 UTC on 06d4ec0; its misses not yet studied)",
    "suite_zr": "development (scored once held out on 2026-12-05 at 04:26 UTC on 06d4ec0; its misses not yet studied)",
    "suite_zq": "development (scored once held out on 2026-12-05 at 02:14 UTC on 6dc16b3; its misses not yet studied)",
    "suite_zp": "development (scored once held out on 2026-12-05 at 02:13 UTC on 6dc16b3; its misses not yet studied)",
    "suite_zo": "development (scored once held out on 2026-12-05 at 01:23 UTC on 0c3c875; its misses not yet studied)",
    "suite_zn": "development (scored once held out on 2026-12-05 at 01:22 UTC on 0c3c875; its misses not yet studied)",
    "suite_zm": "development (scored once held out on 2026-12-04 at 23:26 UTC on 96876b2; its misses not yet studied)",
    "suite_zl": "development (scored once held out on 2026-12-04 at 23:25 UTC on 96876b2; its misses not yet studied)",
    "suite_zk": "development (scored once held out on 2026-12-04 at 22:45 UTC on c94f54f; its misses not yet studied)",
    "suite_zj": "development (scored once held out on 2026-12-04 at 22:45 UTC on c94f54f; its misses not yet studied)",
    "suite_zi": "development (scored once held out on 2026-12-04 at 20:51 UTC on 0cf1479; its misses not yet studied)",
    "suite_zh": "development (scored once held out on 2026-12-04 at 20:51 UTC on 0cf1479; its misses not yet studied)",
    "suite_zg": "development (scored once held out on 2026-12-04 at 20:18 UTC on 0282d6f; its misses not yet studied)",
    "suite_zf": "development (scored once held out on 2026-12-04 at 20:17 UTC on 0282d6f; its misses not yet studied)",
    "suite_ze": "development (scored once held out on 2026-12-04 at 18:18 UTC on d96e64f; its misses not yet studied)",
    "suite_zd": "development (scored once held out on 2026-12-04 at 18:16 UTC on d96e64f; its misses not yet studied)",
    "suite_zc": "development (scored once held out on 2026-12-04 at 17:10 UTC on 37b21b3; its misses not yet studied)",
    "suite_zb": "development (scored once held out on 2026-12-04 at 17:09 UTC on 37b21b3; its misses not yet studied)",
    "suite_za": "development (scored once held out on 2026-12-04 at 16:49 UTC on e436d3d; its misses not yet studied)",
    "suite_z": "development (scored once held out on 2026-12-04 at 16:48 UTC on e436d3d; its misses not yet studied)",
    "suite_y": "development (scored once held out on 2026-12-04 at 15:27 UTC on 2553c9d; its misses not yet studied)",
    "suite_x": "development (scored once held out on 2026-12-04 at 15:27 UTC on 2553c9d; its misses not yet studied)",
    "suite_w": "development (scored once held out on 2026-12-03 at 17:40 UTC on 1b47148; its misses not yet studied)",
    "suite_v": "development (scored once held out on 2026-12-03 at 17:39 UTC on 1b47148; its misses not yet studied)",
    "suite_u": "development (scored once held out on 2026-12-03 at 17:39 UTC on 1b47148; its misses not yet studied)",
    "suite_t": "development (scored once held out on 2026-12-03 at 16:10 UTC on 5cfee08; its misses left unstudied: a carry check beside suite_q)",
    "suite_s": "development (scored once held out on 2026-12-03 at 15:24 UTC on 0cede3f; its misses not yet studied)",
    "suite_r": "development (scored once held out on 2026-12-03 at 15:23 UTC on 0cede3f; its misses not yet studied)",
    "suite_q": "development (scored once held out on 2026-12-03 at 13:22 UTC on 6a119af; its misses left unstudied: the carry check)",
    "suite_p": "development (scored once held out on 2026-12-03 at 12:19 UTC on 55efc55; its misses not yet studied)",
    "suite_o": "development (scored once held out on 2026-12-03 at 10:33 UTC on 6bc1bee; its misses studied since 2026-12-03)",
    "suite_n": "development (scored once held out on 2026-12-03 at 09:11 UTC on 86373f8; its misses studied since 2026-12-03)",
    "suite_m": "development (scored once held out on 2026-12-03 at 06:39 UTC on 85afdd3; its misses studied since 2026-12-03)",
    "suite_l": "development (scored once held out on 2026-12-03 at 01:56 UTC on 3cc15b0; its misses studied since 2026-12-03)",
    "suite_k": "development (scored once held out on 2026-12-02 at 16:55 UTC on 467dd32; its misses studied since 2026-12-03)",
    "suite_j": "development (scored once held out on 2026-12-02 at 14:00 UTC on 020ac1b; its misses studied since 2026-12-02)",
    "suite_i": "development (scored once held out on 2026-12-02; its misses studied since 2026-12-02)",
    "suite_h": "development (scored once held out on 2026-12-02; its misses studied and trained on since 2026-12-02)",
    "suite_g": "development (scored once held out on 2026-12-02; trained on since 2026-12-02)",
    "suite_f": "development (scored once held out on 2026-12-02, then its guided-search misses were studied; "
    "trained on since 2026-12-02)",
    "suite_e": "development (scored once held out on 2026-12-01; trained on since 2026-12-02)",
    "suite_c": "development (scored once held out on 2026-11-30; trained on since 2026-12-02)",
    "suite_b": "development (scored once held out on 2026-11-30; trained on since 2026-12-02)",
    "suite_a": "development (held out when written; its misses were studied)",
    "suite_dev": "development",
    "suite_d": "development (written blind, for study)",
}
"""What each suite is now: a suite whose misses were studied, or that was trained on, is no longer held out."""


def held_out(suite: str) -> bool:
    """True for a suite measured but never studied (its misses are never listed)."""
    return STATUS.get(suite, "").startswith("held out")

ROUTE_NAMES = {
    "agents_sdk": "openai_agents",
    "openai-agents": "openai_agents",
    "recorder": "sdk",
    "trajdebug-sdk": "sdk",
}
"""Each suite's author named the recording routes in their own words: one name per route when pooled."""

SUITE_ROUTES = {"suite_g": {"a": "langgraph", "b": "openai_agents", "c": "otlp", "d": "sdk"}}
"""Suites whose author named the routes by letter (suite_g's README, "Routes"): letters mean nothing across suites."""


def route_name(suite: str, raw: object) -> str:
    """The pooled name of a suite's route (``ROUTE_NAMES``, or the suite's own letters)."""
    name = str(raw if raw is not None else "?")
    return SUITE_ROUTES.get(suite, {}).get(name) or ROUTE_NAMES.get(name, name)

FAULT_NAMES = {
    "bad_state_write": "bad_memory_write",
    "lossy_parse": "lossy_parsing",
    "tool_ignores_arg": "tool_ignores_argument",
    "unit_scale": "unit_error",
    "unit_scale_error": "unit_error",
    "wrong_entity_subagent": "subagent_wrong_entity",
    "wrong_tool_arguments": "wrong_tool_args",
}
"""Likewise for the fault kinds (the list every author was given, spelled their way)."""

WHY_MISSED = {
    "context_pollution": "an earlier item carried into a later prompt reads like any other context",
    "bad_memory_write": "a value written to memory or state is read back later as any other value, "
    "and the write itself looks like a faithful copy of something plausible",
    "subagent_wrong_entity": "a sub-agent's answer about the wrong entity is internally consistent, "
    "and the entity it should have been about is often named nowhere the analysis can compare",
    "wrong_routing": "a model choosing one of the options it was given (a route, a category) that the "
    "failure never names",
    "stale_data": "a stale record that no other step contradicts",
    "unit_error": "a unit factor that is no simple slip (hours a year for hours a month)",
    "tool_ignores_argument": "a tool whose answer does not show the argument it ignored",
}
"""What development-suite misses of each fault kind had in common (read from their misses, never from
held-out ones): the explanation the section prints beside the weakest held-out kinds."""

SETTINGS = ("alone", "with_refs")
"""The two settings every measure scores (the section's, the held-out score's)."""

SAME_INPUT_SETTINGS = ("same", "all")
"""Two more settings, scored on request (``--settings``): the failed run with its control run, the same input
with the fault switched off, which passes (``same``: ``failed.*`` and ``control.*``), and with the other inputs'
passing runs too (``all``: ``with_refs.*`` and ``control.*``).  The control run joins as `trajdebug.analyze_source`'s
``refs`` (``trajdebug analyze SOURCE --refs control.jsonl``): a passing run of the same input, which the analysis
compares value for value.  Every development suite's cases carry one (the writers checked each fault with it)."""

SOURCES = {
    "alone": ("failed", None),
    "with_refs": ("with_refs", None),
    "same": ("failed", "control"),
    "all": ("with_refs", "control"),
}
"""Per setting, the case's source file (stem) and the one its references come from too (None: none)."""


@dataclass(slots=True)
class CaseResult:
    """One case in one setting."""

    case_id: str
    agent: str
    route: str
    fault_kind: str
    setting: str
    rank: int | None
    """1-based rank of the truth step in the full ranking, None when unranked."""
    on_path: bool
    """Whether the truth step lies in the failing step's backward slice."""
    truth: str
    top: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None
    verdict: str | None = None
    """The learned ranker's verdict (``confident``, ``likely``, ``unsure``) when a learned model ranked it: its
    own even when answers proved the root (`Analysis.ranking_verdict`), so ``score_heldout`` counts the
    ranker's ``confident``."""


def generate(suite: str, out: Path, progress: Callable[[str], None] = print) -> Path:
    """Run a suite's generator into ``out/suite`` (skipped when already there)."""
    dest = out / suite
    if (dest / "index.json").exists():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    # A second attempt, because a frozen generator's own checks can trip on chance: suite_zzk's forbidden-word
    # check once read "bUg" inside a random base64 span id. Frozen suites are never edited, so the runner retries
    # (new random ids); the first failure is kept beside the output.
    for attempt in (1, 2):
        done = subprocess.run(
            [sys.executable, *_generator(suite), str(dest.resolve())],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=600,
            cwd=HERE.parent.parent,
        )
        if done.returncode == 0:
            break
        err = done.stderr.decode("utf-8", "replace")
        (out / f"{suite}.generate-{attempt}.err").write_text(err)
        if attempt == 2:
            last = next((line for line in reversed(err.splitlines()) if line.strip()), "no message")
            raise GenerationError(f"{suite}: its generator failed twice (exit {done.returncode}): {last[:300]}")
        progress(f"{suite}: its generator failed (exit {done.returncode}; stderr in {suite}.generate-1.err): again")
    progress(f"{suite}: generated in {time.perf_counter() - t0:.1f} s")
    return dest


class GenerationError(RuntimeError):
    """A suite's generator failed: the message names the suite and the generator's last line of error."""


def _generator(suite: str) -> list[str]:
    """How to run a suite's generator: as a script, or as a module when its writer made it one (relative
    imports with no script shim: ``python -m benchmarks.heldout.<suite>.generate``; a frozen suite is
    never edited, so the runner adapts)."""
    script = HERE / suite / "generate.py"
    text = script.read_text()
    relative = any(line.startswith(("from . ", "from .")) and not line.startswith("from __") for line in text.splitlines())
    if relative and "__package__ =" not in text:
        return ["-m", f"benchmarks.heldout.{suite}.generate"]
    return [str(script)]


def _cases(root: Path) -> list[dict[str, Any]]:
    index = json.loads((root / "index.json").read_text())
    items = index["cases"] if isinstance(index, dict) else index
    out = []
    for item in items:
        cid = item if isinstance(item, str) else item.get("case_id") or item.get("id") or item.get("case")
        truth = json.loads((root / cid / "truth.json").read_text())
        out.append(_normalized(root / cid, truth))
    return out


def _normalized(case_dir: Path, truth: dict[str, Any]) -> dict[str, Any]:
    """A truth file in the runner's terms: each suite's writer named the case and the failed run in their
    own words (``case`` for ``case_id``; no run id when ``failed.*`` holds the failed run alone)."""
    truth = dict(truth)
    truth.setdefault("case_id", truth.get("case") or case_dir.name)
    if "failed_run_id" not in truth:
        from trajdebug.sources.load import load_runs

        runs = load_runs(_source(case_dir, "failed"))
        failed = [r for r in runs if r.outcome != "success"] or runs
        truth["failed_run_id"] = failed[0].run_id
    return truth


def _source(case_dir: Path, stem: str) -> Path:
    for ext in (".jsonl", ".json"):
        p = case_dir / f"{stem}{ext}"
        if p.exists():
            return p
    raise FileNotFoundError(f"{case_dir}: no {stem}.jsonl or {stem}.json")


def truth_step(run: Run, root: dict[str, Any]) -> str | None:
    """The id of the truth step: by name and occurrence, else by index among LLM steps."""
    named = [s for s in run.steps if s.name == root.get("name")]
    occ = int(root.get("occurrence") or 1)
    if len(named) >= occ:
        return named[occ - 1].step_id
    idx = root.get("llm_index")
    if idx:
        llms = [s for s in run.steps if s.kind == "llm"]
        if len(llms) >= int(idx):
            return llms[int(idx) - 1].step_id
    return None


def _on_path(a: Analysis, sid: str) -> bool:
    fails = [f.step_id for f in a.failures if f.step_id in {s.step_id for s in a.run.steps}]
    if not fails:
        return False
    return sid in DependencyGraph(a.run).backward_slice(fails)


def score_case(case_dir: Path, truth: dict[str, Any], setting: str, model: str | None = None) -> CaseResult:
    """Analyze one case in one setting and place its truth step in the ranking (``model``: the learned
    ranker's, `trajdebug.analysis.learned`, with the analysis's verdict kept in ``verdict``)."""
    stem, ref = SOURCES[setting]
    src = _source(case_dir, stem)
    base = {
        "case_id": truth["case_id"],
        "agent": truth.get("agent", "?"),
        "route": route_name(case_dir.parent.name, truth.get("route")),
        "fault_kind": FAULT_NAMES.get(str(truth.get("fault_kind", "?")), str(truth.get("fault_kind", "?"))),
        "setting": setting,
    }
    t0 = time.perf_counter()
    try:
        refs = () if ref is None else _source(case_dir, ref)
        res = analyze_source(src, truth["failed_run_id"], top=5, model=model, refs=refs)
    except Exception as exc:  # noqa: BLE001 - one broken case is reported, not fatal
        return CaseResult(**base, rank=None, on_path=False, truth="?", error=f"{type(exc).__name__}: {exc}")
    dt = time.perf_counter() - t0
    [a] = res.analyses
    sid = truth_step(a.run, truth["root"])
    names = {s.step_id: s.name for s in a.run.steps}
    ranking = list(a.localization.ranking)
    rank = ranking.index(sid) + 1 if sid in ranking else None
    return CaseResult(
        **base,
        rank=rank,
        on_path=sid is not None and _on_path(a, sid),
        truth=f"{truth['root'].get('name')}#{truth['root'].get('occurrence')}",
        top=[names.get(s, s) for s in ranking[:3]],
        seconds=dt,
        error=None if sid is not None else "truth step not found in the recorded run",
        verdict=a.ranking_verdict,  # the ranker's, scored as such even when answers proved the root
    )


def run_blind(
    suites: Iterable[str] = ("suite_h", "suite_g", "suite_f", "suite_e", "suite_c", "suite_b", "suite_a", "suite_d", "suite_dev"),
    *,
    workdir: Path | None = None,
    progress: Callable[[str], None] = print,
    settings: Sequence[str] = SETTINGS,
) -> dict[str, list[CaseResult]]:
    """Generate and score the suites in ``settings`` (`SETTINGS`, and any of `SAME_INPUT_SETTINGS`); results per
    suite."""
    import tempfile

    out = workdir or Path(tempfile.mkdtemp(prefix="trajdebug-blind-"))
    results: dict[str, list[CaseResult]] = {}
    failed: list[str] = []
    for suite in suites:
        try:
            root = generate(suite, out, progress)
        except GenerationError as e:  # one broken suite is reported; the others are still scored
            progress(str(e))
            failed.append(suite)
            continue
        rows = []
        for truth in _cases(root):
            for setting in settings:
                rows.append(score_case(root / truth["case_id"], truth, setting))
        results[suite] = rows
        progress(f"{suite}: {summary(rows)}")
    if failed:
        progress(f"not scored (their generators failed): {' '.join(failed)}")
    return results


def metrics(rows: list[CaseResult]) -> dict[str, Any]:
    """Top-1, top-3, ranked at all, ranked among on-path cases, per setting."""
    out: dict[str, Any] = {}
    for setting in (*SETTINGS, *SAME_INPUT_SETTINGS):
        rs = [r for r in rows if r.setting == setting]
        if not rs:
            continue
        n = len(rs)
        on = [r for r in rs if r.on_path]
        out[setting] = {
            "cases": n,
            "top1": sum(r.rank == 1 for r in rs) / n,
            "top3": sum(r.rank is not None and r.rank <= 3 for r in rs) / n,
            "ranked": sum(r.rank is not None for r in rs) / n,
            "on_path": len(on),
            "ranked_on_path": (sum(r.rank is not None for r in on) / len(on)) if on else None,
            "mean_seconds": sum(r.seconds for r in rs) / n,
        }
    return out


def breakdown(rows: list[CaseResult], key: str) -> dict[str, dict[str, Any]]:
    """`metrics` per value of ``route``, ``fault_kind`` or ``agent``."""
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for r in rows:
        groups[str(getattr(r, key))].append(r)
    return {k: metrics(v) for k, v in sorted(groups.items())}


def summary(rows: list[CaseResult]) -> str:
    """One line: top-1 / top-3 / ranked per setting."""
    parts = []
    for setting, m in metrics(rows).items():
        parts.append(
            f"{setting}: top-1 {m['top1']:.0%}, top-3 {m['top3']:.0%}, ranked {m['ranked']:.0%} ({m['cases']} cases)"
        )
    return "; ".join(parts)


GOALS = {
    "alone_top1": 0.40,
    "alone_top3": 0.70,
    "refs_top1": 0.70,
    "refs_top3": 0.90,
    "ranked_on_path": 0.98,
}
"""Issue 11's goals on the held-out suite (reported against, never asserted)."""


def blind_data(results: dict[str, list[CaseResult]]) -> dict[str, Any]:
    """The section's results as JSON data: per suite, overall and by route and fault kind."""
    from benchmarks._common import machine

    out: dict[str, Any] = {"date": machine()["date"], "suites": {}}
    for suite, rows in results.items():
        out["suites"][suite] = {
            "status": STATUS.get(suite, "?"),
            "cases": len({r.case_id for r in rows}),
            "overall": metrics(rows),
            "by_route": breakdown(rows, "route"),
            "by_fault": breakdown(rows, "fault_kind"),
            "errors": [f"{r.case_id} ({r.setting}): {r.error}" for r in rows if r.error][:20],
        }
    held = [r for suite, rows in results.items() if held_out(suite) for r in rows]
    if held:
        # The goals are read on every held-out case at once (the suites pooled).
        names = [suite for suite in results if held_out(suite)]
        out["held_out"] = {
            "suites": names,
            "cases": len({(r.agent, r.case_id) for r in held}),
            "overall": metrics(held),
            "by_route": breakdown(held, "route"),
            "by_fault": breakdown(held, "fault_kind"),
        }
    return out


def _p(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f} %"


def render_section(data: dict[str, Any]) -> list[str]:
    """The Markdown section (it leads the document: held-out numbers first)."""
    suites = data.get("suites", {})
    lines = [
        "## 1. Held-out agents: root causes in agents written without sight of the analysis",
        "",
        f"Run {data.get('date', '?')}. Each suite was written by a helper who saw only the README, the public "
        "API and a list of fault kinds, then frozen (`benchmarks/heldout/*/README.md`). Every case's fault is "
        "silent at its root and fails the run two or more steps later; ground truth was checked by running "
        "the same input with the fault off. Two settings: the failed run **alone**, and **with** its agent's "
        ">=5 passing runs on other inputs in the same source (references). Analysis through "
        "`trajdebug.analyze_source`, as `trajdebug analyze SOURCE --run ID` runs it. Command: "
        "`python -m benchmarks --only blind` (or `python -m benchmarks.blind SUITE`).",
        "",
        "| suite | status | cases | alone top-1 | alone top-3 | with refs top-1 | with refs top-3 | ranked (on path) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in suites.items():
        o = s["overall"]
        a, w = o.get("alone", {}), o.get("with_refs", {})
        ranked = min(x.get("ranked_on_path") or 0.0 for x in (a, w)) if a and w else None
        lines.append(
            f"| `{name}` | {s['status']} | {s['cases']} | {_p(a.get('top1'))} | {_p(a.get('top3'))} | "
            f"{_p(w.get('top1'))} | {_p(w.get('top3'))} | {_p(ranked)} |"
        )
    held = data.get("held_out")
    if held:
        lines += ["", f"All held-out cases pooled ({' + '.join(f'`{n}`' for n in held['suites'])}, {held['cases']} cases):", ""]
        o = held["overall"]
        a, w = o.get("alone", {}), o.get("with_refs", {})
        lines.append(
            f"alone top-1 {_p(a.get('top1'))}, top-3 {_p(a.get('top3'))}; with references top-1 "
            f"{_p(w.get('top1'))}, top-3 {_p(w.get('top3'))}."
        )
        o = held["overall"]
        a, w = o.get("alone", {}), o.get("with_refs", {})
        checks = [
            ("alone, top-1", a.get("top1"), GOALS["alone_top1"]),
            ("alone, top-3", a.get("top3"), GOALS["alone_top3"]),
            ("with references, top-1", w.get("top1"), GOALS["refs_top1"]),
            ("with references, top-3", w.get("top3"), GOALS["refs_top3"]),
            (
                "ranked when on the dependency path",
                min(a.get("ranked_on_path") or 0, w.get("ranked_on_path") or 0),
                GOALS["ranked_on_path"],
            ),
        ]
        lines += [
            "",
            "Goals (issue 11) on the held-out cases (pooled):",
            "",
            "| goal | target | measured | status |",
            "|---|---|---|---|",
        ]
        for label, got, want in checks:
            ok = got is not None and got >= want
            lines.append(f"| {label} | >= {_p(want)} | {_p(got)} | {'met' if ok else '**missed**'} |")
        lines += ["", "Held-out cases by recording route (alone / with references, top-1 and top-3):", ""]
        lines += ["| route | alone | with references |", "|---|---|---|"]
        for route, m in held["by_route"].items():
            lines.append(
                f"| {route} | {_p(m.get('alone', {}).get('top1'))} / {_p(m.get('alone', {}).get('top3'))} | "
                f"{_p(m.get('with_refs', {}).get('top1'))} / {_p(m.get('with_refs', {}).get('top3'))} |"
            )
        lines += [
            "",
            "Held-out cases by fault kind:",
            "",
            "| fault kind | alone | with references |",
            "|---|---|---|",
        ]
        for kind, m in held["by_fault"].items():
            lines.append(
                f"| {kind} | {_p(m.get('alone', {}).get('top1'))} / {_p(m.get('alone', {}).get('top3'))} | "
                f"{_p(m.get('with_refs', {}).get('top1'))} / {_p(m.get('with_refs', {}).get('top3'))} |"
            )
        weakest = sorted(
            held["by_fault"].items(), key=lambda kv: (kv[1].get("with_refs", {}).get("top3") or 0.0, kv[0])
        )[:3]
        lines += [
            "",
            "Weakest on the held-out cases (with references, top-3): "
            + "; ".join(f"{k} {_p(m.get('with_refs', {}).get('top3'))}" for k, m in weakest)
            + ". Held-out misses are not studied (that would make the suites development suites). What the "
            "development suites' misses of these kinds share is that nothing inside the run says the root's "
            "output was wrong: "
            + "; ".join(WHY_MISSED[k] for k, _ in weakest if k in WHY_MISSED)
            + ". A passing run of the same agent (`trajdebug diff`) or a model on top (`--judge`) is what sees "
            "those. Suites recorded through the frameworks mint new ids at each generation, so a case may move "
            "by a rank between two runs of this section (a point or two on a suite).",
        ]
    lines += [
        "",
        "`suite_a` was held out when written and measured blind once (alone 28 % / 52 %, with references "
        "38 % / 60 %), then its misses were studied: it is a development suite now, like `suite_dev`. Numbers on "
        "development suites are in-distribution. `suite_d` was written blind like the held-out suites and "
        "measured once before its misses were studied (alone 10 % / 35 %, with references 29 % / 56 %).",
        "",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.blind [SUITE...] [--misses] [--workdir DIR]``: score and print."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m benchmarks.blind")
    p.add_argument("suites", nargs="*", default=["suite_dev"])
    p.add_argument("--workdir", type=Path)
    p.add_argument("--misses", action="store_true", help="list the misses (development suites only)")
    p.add_argument("--by", default="fault_kind", choices=("fault_kind", "route", "agent"))
    p.add_argument(
        "--settings",
        default=",".join(SETTINGS),
        help="comma-separated settings to score: alone, with_refs, same (the failed run with its control run, "
        "the same input passing), all (with_refs with the control run)",
    )
    a = p.parse_args(argv)
    settings = tuple(s.strip() for s in a.settings.split(",") if s.strip())
    unknown = [s for s in settings if s not in SOURCES]
    if unknown:
        p.error(f"unknown setting(s) {', '.join(unknown)}: choose among {', '.join(SOURCES)}")
    res = run_blind(a.suites, workdir=a.workdir, settings=settings)
    missing = [s for s in a.suites if s not in res]
    for suite, rows in res.items():
        print(f"\n== {suite} ({STATUS.get(suite, '?')}): {summary(rows)}")
        for k, m in breakdown(rows, a.by).items():
            cells = "  ".join(f"{s}: {v['top1']:.0%}/{v['top3']:.0%}/{v['ranked']:.0%}" for s, v in m.items())
            print(f"  {k:<28} {cells}")
        if a.misses:
            if held_out(suite):
                print("  (held out: misses are not listed)")
                continue
            for r in rows:
                if r.rank != 1:
                    print(
                        f"  miss {r.setting:<9} {r.case_id:<40} truth {r.truth:<28} rank {r.rank} "
                        f"top {r.top} {r.error or ''}"
                    )
    if missing:
        print(f"\nnot scored (their generators failed): {' '.join(missing)}")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
