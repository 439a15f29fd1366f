// search.js: the guided search of the "find the cause" panel, run in a report file: a compact port of
// trajdebug.analysis._guided (strategy "prior") and of _verdicts.Verdicts' three-valued answers
// (Naish, *A Declarative Debugging Scheme*, 1997).  No DOM here: `guidedEngine(A)` takes the document
// `trajdebug.report.question.ask_data` embeds and answers next() / answer() / result(), so a test can
// run it beside the Python search on the same answers.

const LEAD = 0.5;  // trajdebug.analysis._guided._LEAD: the mass share that makes a candidate the leader
const POOL = 200;  // trajdebug.analysis._guided._POOL: questions scored per turn at most on large slices
const MAX_ASKS = 3;  // trajdebug.analysis._guided._MAX_ASKS: no step is asked more often (the page never rechecks)

// -- sets of slice steps -----------------------------------------------------------------------
// Bit sets (Uint32Array words), as the Python search uses integers: a 10,000-step slice costs
// 1.25 MB per 1,000 reaches, not a Set per step.
function bitset(n) { return new Uint32Array((n + 31) >>> 5); }
function hasBit(b, i) { return (b[i >>> 5] >>> (i & 31)) & 1; }
function setBit(b, i) { b[i >>> 5] |= 1 << (i & 31); }
function bitsOf(b) {
  const out = [];
  for (let w = 0; w < b.length; w++) {
    let x = b[w];
    while (x) { const t = x & -x; out.push((w << 5) + 31 - Math.clz32(t)); x ^= t; }
  }
  return out;
}
function andOf(a, b) { const o = new Uint32Array(a.length); let any = false; for (let w = 0; w < a.length; w++) { o[w] = a[w] & b[w]; if (o[w]) any = true; } return any ? o : null; }
function popcount(b) { let c = 0; for (let w = 0; w < b.length; w++) { let x = b[w] - ((b[w] >>> 1) & 0x55555555); x = (x & 0x33333333) + ((x >>> 2) & 0x33333333); c += (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24; } return c; }

// -- the standing answers (_verdicts.Verdicts) --------------------------------------------------
// Each step's answers as counts (Verdicts.tally): cnt how many were given (unknowns too), and of the most
// trusted source's answers that know, tl = [trust, correct, erroneous, inadmissible, plain wrong, erroneous
// by a person].  Their majority stands, a tie is unknown (and asked again).  An erroneous answer vouches for
// every input of the step nobody answered, except the steps it encloses (a container's fault may be a
// child's); an inadmissible step is never the root.
const PERSON = 5;  // trajdebug.analysis._guided_result.trust("person"): the page's answers are a person's
function verdictsOf(A, parents, F) {
  const n = A.ids.length;
  const stored = A.tally || A.ids.map(() => null);
  const cnt = stored.map((t) => (t ? t[0] : 0));
  const tl = stored.map((t) => (t && t[1] > 0 ? t.slice(1) : null));
  const answered = stored.map((t) => !!t);
  const voted = (A.voted || []).slice();
  const up = A.up || A.ids.map(() => -1);
  let vouchedBy = null;
  const noOf = (i) => (tl[i] ? tl[i][2] + tl[i][3] + tl[i][4] : 0);
  // Verdicts._wrong: the answers calling step i wrong stand (a majority; the failure's always do).
  const wrongStands = (i) => !!tl[i] && (i === F || noOf(i) > tl[i][1]);
  // Verdicts._encloses (Carrier.enclosing): j is a parent, or a parent's parent, of p (up: each step's nearest
  // enclosing step, from the same walk; a step on a parent cycle has none, so up holds no cycle).
  function encloses(j, p) {
    for (let k = up[p], hops = 0; k >= 0 && hops <= n; k = up[k], hops++) if (k === j) return true;
    return false;
  }
  // Verdicts.admissible: of a step standing wrong, what its wrong answers say of its inputs.
  function admissible(i) {
    if (!wrongStands(i) || tl[i][2] === tl[i][3]) return null;
    return tl[i][2] > tl[i][3];
  }
  function vouched() {
    if (vouchedBy) return vouchedBy;
    vouchedBy = new Map();
    for (const i of voted) {
      if (admissible(i) !== true) continue;
      for (const p of parents[i]) if (!vouchedBy.has(p) && !encloses(i, p)) vouchedBy.set(p, i);
    }
    return vouchedBy;
  }
  function verdict(i) {
    if (i === F) return false;  // the failure is wrong by definition
    if (!tl[i]) return vouched().has(i) ? true : null;
    const no = noOf(i);
    return tl[i][1] === no ? null : tl[i][1] > no;
  }
  // Verdicts.disputed: the answers disagree and neither side leads by `lead` (1: split evenly).
  function disputed(i, lead) {
    const no = noOf(i);
    return !!tl[i] && tl[i][1] > 0 && no > 0 && Math.abs(tl[i][1] - no) < lead;
  }
  function inadmissible() {
    const b = bitset(n);
    for (const i of voted) if (admissible(i) === false && verdict(i) === false) setBit(b, i);
    return b;
  }
  // Verdicts.earlier: the steps that may have fed step i unrecorded and are not cleared (_verdicts.fed_in_time:
  // started before it ended, or by its start with no end), never one that consumed its output (with a coarse
  // clock or none they share its start), except the steps enclosing it (all of them, unless the failure is one):
  // a container consumes its child's answer only after it called it, and may have written what it read before.
  const end = A.end || A.start;
  function earlier(i) {
    const after = downstream(i);
    const around = [];
    let outside = true;
    for (let k = up[i], hops = 0; k >= 0 && hops <= n; k = up[k], hops++) { if (k === F) outside = false; around.push(k); }
    if (outside) for (const k of around) after.delete(k);
    const b = bitset(n);
    for (let j = 0; j < n; j++) {
      const inTime = A.start[j] <= A.start[i] || A.start[j] < end[i];
      if (!after.has(j) && inTime && verdict(j) !== true) setBit(b, j);
    }
    return b;
  }
  // Verdicts._downstream: step i and every step that consumed its output, directly or not.
  function downstream(i) {
    const kids = A.ids.map(() => []);
    parents.forEach((ps, j) => { for (const p of ps) kids[p].push(j); });
    const seen = new Set([i]);
    const todo = [i];
    while (todo.length) for (const k of kids[todo.pop()]) if (!seen.has(k)) { seen.add(k); todo.push(k); }
    return seen;
  }
  // Verdicts.misled: the children of container i (never the failure) among its inputs that stand inadmissible;
  // the container is then named with them, never certain (the recording cannot show nothing else fed them).
  function misled(i) {
    if (i === F) return [];
    const bad = inadmissible();
    return parents[i].filter((p) => hasBit(bad, p) && encloses(i, p));
  }
  // Verdicts.proven: step i stands wrong and every input of it stands correct (answered, or vouched).
  function proven(i) { return verdict(i) === false && parents[i].every((p) => verdict(p) === true); }
  // Verdicts.add (a person's answer), or with `only` Verdicts.replace (an implied one, a person's too).
  function add(i, correct, adm, only) {
    if (!answered[i]) voted.push(i);
    answered[i] = true;
    if (only) { cnt[i] = 0; tl[i] = null; }
    cnt[i]++;
    if (correct !== null) {
      if (!tl[i] || tl[i][0] < PERSON) tl[i] = [PERSON, 0, 0, 0, 0, 0];
      const k = correct ? 1 : adm === true ? 2 : adm === false ? 3 : 4;
      tl[i][k]++;
      if (k === 2) tl[i][5]++;
    }
    vouchedBy = null;
  }
  // The inputs vouched correct that nobody answered, each with the step whose erroneous answer vouched.
  function implied() { return [...vouched()].filter(([p]) => !tl[p]).sort((a, b) => a[0] - b[0]); }
  // Verdicts.by_person: the step stands erroneous on a person's word.
  const byPerson = (i) => admissible(i) === true && tl[i][5] > 0;
  return { verdict, admissible, byPerson, proven, misled, disputed, answered, voted, count: (i) => cnt[i],
           inadmissible, earlier, add, implied, changed: () => { vouchedBy = null; } };
}

// -- the search (Shapiro's algorithmic debugging over the failure's slice) ---------------------
function guidedEngine(A) {
  const n = A.ids.length;
  const F = A.ids.indexOf(A.failure);
  const log = (A.answers || []).map((a) => Object.assign({ step_id: a.step_id, correct: a.correct, by: a.by },
    a.correct === false && a.admissible != null ? { admissible: a.admissible } : {}));
  const given = [];
  const children = A.ids.map(() => []);
  const parents = A.parents.map((ps) => ps.slice());  // an audit adds inputs the recording missed
  parents.forEach((ps, i) => { for (const p of ps) children[p].push(i); });
  const V = verdictsOf(A, parents, F);
  const answered = V.answered;
  const auditedFor = new Map();  // step asked in an audit -> the proved step it was asked for
  const mass = (b) => { let t = 0; if (b) for (const i of bitsOf(b)) t += A.prior[i]; return t; };
  // Each step's backward reach avoiding correct-marked steps (ids are in topological order); an
  // inadmissible step whose recorded inputs reach nothing else takes in what may have fed it unrecorded.
  function reaches(bad) {
    const r = new Array(n);
    for (let i = 0; i < n; i++) {
      const b = bitset(n);
      r[i] = b;
      if (V.verdict(i) === true) continue;
      setBit(b, i);
      for (const p of parents[i]) { const q = r[p]; for (let w = 0; w < b.length; w++) b[w] |= q[w]; }
      if (hasBit(bad, i) && !b.some((x, w) => x & ~bad[w])) { const e = V.earlier(i); for (let w = 0; w < b.length; w++) b[w] |= e[w]; }
    }
    return r;
  }
  // The candidates: every wrong step's reach intersected, deepest first (an inadmissible step masked
  // out: never the root); a disjoint one is a conflict.
  function compute() {
    const bad = V.inadmissible();
    const r = reaches(bad);
    const masked = (b) => b.map((x, w) => x & ~bad[w]);
    let cand = masked(r[F]), focus = F, conflict = null;
    if (!cand.some((x) => x)) cand = null;
    const wrong = new Map();
    for (let i = 0; i < n; i++) if (V.verdict(i) === false && hasBit(r[F], i)) wrong.set(i, masked(r[i]));
    const size = new Map([...wrong].map(([i, b]) => [i, popcount(b)]));
    const order = [...wrong.keys()].sort((a, b) => size.get(a) - size.get(b) || b - a);
    for (const i of order) {
      const both = cand && andOf(cand, wrong.get(i));
      if (!both) { conflict = [focus, i]; break; }
      cand = both;
      if (!hasBit(bad, i) && size.get(i) <= size.get(focus)) focus = i;
    }
    return { r, cand: cand || bitset(n), focus, conflict, wrong, bad };
  }
  function next() {
    if (F < 0) return null;
    const { r, cand, focus, conflict, bad } = compute();
    if (conflict) return null;  // the page does not re-ask: it names both sides
    // A tie anywhere is settled first: a step that turns out wrong may contradict the root found so far.
    let tie = -1;
    for (const i of V.voted) if (V.disputed(i, 1) && V.count(i) < MAX_ASKS && i > tie) tie = i;
    if (tie >= 0) return A.ids[tie];
    const members = bitsOf(cand);
    if (members.length === 1 && members[0] === focus) return audit(focus);
    // Not answered yet (an unknown is not asked again), or disputed; a pass-through container waits.
    const open = members.filter((i) => i !== F && (answered[i] ? V.disputed(i, 1) && V.count(i) < MAX_ASKS : !waits(i)));
    if (!open.length) return null;
    return A.ids[choose(open, cand, focus, r, bad)];
  }
  // GuidedSearch._following: the open producers of the step last answered "wrong input", while none of them
  // stands wrong: they are asked next (Shapiro 1983: a wrong input means the fault lies among its producers).
  function following(open, bad) {
    let last = -1;
    for (let k = log.length - 1; k >= 0 && last < 0; k--) {
      const i = A.ids.indexOf(log[k].step_id);
      if (log[k].correct === false && i >= 0 && hasBit(bad, i)) last = i;
    }
    if (last < 0 || parents[last].some((p) => V.verdict(p) === false)) return [];
    const mine = new Set(parents[last]);
    const out = open.filter((i) => mine.has(i));
    return out.length > 1 ? out : [];  // one left open is wrong by that answer alone: chosen as anywhere
  }
  // GuidedSearch._choose: the question that leaves the least probability mass expected; a wrong answer
  // keeps the step's reach, a correct one clears what reaches the focus only through it.
  function choose(open, cand, focus, r, bad) {
    const total = mass(cand) || 1;
    const openSet = new Set(open);
    let lead = leader(bitsOf(cand), cand, total, openSet, r);
    if (lead !== null) return lead;
    // After "wrong input", that step's producers, unless one candidate holds most of the mass (asked above).
    const follow = bad.some((x) => x) ? following(open, bad) : [];
    if (follow.length) {
      open = follow;
      lead = leader(bitsOf(cand), cand, total, new Set(open), r);
      if (lead !== null) return lead;
    }
    if (open.length > POOL) {
      // The likeliest steps, and steps spread evenly in topological order (a flat prior ranks none).
      const inputs = parents[focus].filter((p) => openSet.has(p));
      const likely = open.slice().sort((a, b) => A.prior[b] - A.prior[a]).slice(0, POOL >> 1);
      const step = Math.max(1, Math.floor(open.length / (POOL >> 1)));
      const spread = open.filter((_, k) => k % step === 0);
      open = [...new Set([...likely, ...spread, ...inputs])].sort((a, b) => a - b);
    }
    const cleared = dominated(cand, focus);
    let best = open[open.length - 1], key = [Infinity, 0, 0];
    for (const i of open) {
      const wrong = mass(andOf(r[i], cand));
      const p = Math.min(1, wrong / total);
      const left = p * wrong + (1 - p) * (total - (cleared.has(i) ? cleared.get(i) : A.prior[i]));
      const k = [Math.round(left * 1e12) / 1e12, -A.prior[i], -i];
      if (k[0] < key[0] || (k[0] === key[0] && (k[1] < key[1] || (k[1] === key[1] && k[2] < key[2])))) { best = i; key = k; }
    }
    return best;
  }
  // _guided_paths.post_dominated: the mass each candidate clears when answered correct, its subtree in the
  // post-dominator tree toward the focus (Cooper, Harvey & Kennedy; one pass, the slice is a DAG).
  function dominated(cand, focus) {
    const sub = new Map();
    if (!hasBit(cand, focus)) return sub;
    const order = bitsOf(cand).reverse();  // consumers before producers: the focus first
    const po = new Map(order.map((v, k) => [v, k]));
    const idom = new Map([[focus, focus]]);
    for (const v of order.slice(1)) {
      let nw = null;
      for (const c of children[v]) {
        if (!idom.has(c)) continue;
        if (nw === null) { nw = c; continue; }
        let a = c, b = nw;
        while (a !== b) {
          while (po.get(a) > po.get(b)) a = idom.get(a);
          while (po.get(b) > po.get(a)) b = idom.get(b);
        }
        nw = a;
      }
      if (nw !== null) idom.set(v, nw);
    }
    for (const v of order) sub.set(v, 0);
    for (let k = order.length - 1; k >= 0; k--) {
      const v = order[k];
      sub.set(v, sub.get(v) + A.prior[v]);
      if (v !== focus && idom.has(v)) sub.set(idom.get(v), sub.get(idom.get(v)) + sub.get(v));
    }
    return sub;
  }
  // The audit: a proof whose root's inputs were only inferred is tested against the likeliest earlier
  // leaf steps no recorded path joins to it (GuidedSearch._audit); not one resting on a person's
  // erroneous answer, which vouched for every input the step was given, recorded or not.
  function audit(focus) {
    const pick = auditPick(focus);
    if (pick !== null) auditedFor.set(pick, focus);
    return pick === null ? null : A.ids[pick];
  }
  // GuidedSearch._audits: the steps answered in an audit of the proof of `focus` (the budget is per proof).
  const auditsOf = (focus) => [...auditedFor].filter(([k, f]) => f === focus && answered[k]).map(([k]) => k);
  // The step an audit of `focus` would ask, asking nothing (the budget counts the audits of this proof
  // answered, as GuidedSearch._audits does): result() reads it to tell a proof still to be tested.
  function auditPick(focus) {
    if (auditsOf(focus).length >= (A.audit || 0) || !(A.weak && A.weak[focus]) || V.byPerson(focus)) return null;
    return auditPool(focus);
  }
  // GuidedSearch._feeders: the earlier leaves no recorded path joins to `focus` (they may have fed it unrecorded).
  function feeders(focus) {
    const anc = new Set([focus]);
    const todo = [focus];
    while (todo.length) for (const p of parents[todo.pop()]) if (!anc.has(p)) { anc.add(p); todo.push(p); }
    const out = [];
    for (let i = 0; i < focus; i++) if (!anc.has(i) && A.auditable[i] && A.start[i] <= A.start[focus]) out.push(i);
    return out;
  }
  // GuidedSearch._audit_pool: the likeliest of those not answered.
  function auditPool(focus) {
    let pick = null;
    for (const i of feeders(focus)) {
      if (answered[i]) continue;
      if (pick === null || A.prior[i] > A.prior[pick] || (A.prior[i] === A.prior[pick] && i > pick)) pick = i;
    }
    return pick;
  }
  // GuidedSearch._backed: answers, not the lack of them, prove the root: no audit of it is left to ask, and a
  // step with no recorded input stands erroneous on a person's word, an audit of it was answered right (a
  // "don't know" clears nothing), or every earlier leaf that may have fed it stands correct.
  function backed(focus) {
    if (auditPick(focus) !== null) return false;
    if (parents[focus].length || V.byPerson(focus)) return true;
    if (auditsOf(focus).some((k) => V.verdict(k) === true)) return true;
    // Nothing earlier fed it only when every earlier leaf stands correct (one unasked, unknown or wrong may have).
    return feeders(focus).every((i) => V.verdict(i) === true);
  }
  // Hat-Delta's shortcut: one candidate holding most of the mass is proven or refuted directly
  // (itself, then its open inputs, the likeliest wrong first).
  function leader(members, cand, total, open, r) {
    let best = null;
    for (const i of members) if (best === null || A.prior[i] > A.prior[best] || (A.prior[i] === A.prior[best] && i > best)) best = i;
    if (best === null || A.prior[best] < LEAD * total) return null;
    if (open.has(best)) return best;
    let pick = null, pickKey = null;
    for (const p of parents[best]) {
      if (!open.has(p)) continue;
      const k = mass(andOf(r[p], cand));
      if (pick === null || k > pickKey || (k === pickKey && p > pick)) { pick = p; pickKey = k; }
    }
    return pick;
  }
  function ranked(members) {
    const w = new Map();
    for (const i of members) {
      let x = A.prior[i];
      if (parents[i].length && parents[i].every((p) => V.verdict(p) === true)) x *= 4;  // none recorded: nothing proven
      if (V.verdict(i) === false) x *= 2;
      w.set(i, x);
    }
    const total = [...w.values()].reduce((a, b) => a + b, 0) || 1;
    return [...w.keys()].sort((a, b) => w.get(b) - w.get(a) || b - a).map((i) => [A.ids[i], w.get(i) / total]);
  }
  // Breadth-first from the root to the failure, through wrong-marked steps first (as _path does).
  function path(root) {
    const from = new Map([[root, null]]);
    let frontier = [root];
    while (frontier.length && !from.has(F)) {
      const nextFrontier = [];
      for (const i of frontier) {
        const kids = children[i].filter((c) => !from.has(c));
        kids.sort((a, b) => (V.verdict(a) !== false) - (V.verdict(b) !== false) || a - b);
        for (const c of kids) if (!from.has(c)) { from.set(c, i); nextFrontier.push(c); }
      }
      frontier = nextFrontier;
    }
    if (!from.has(F)) return [A.ids[root]];
    const out = [];
    for (let i = F; i !== null; i = from.get(i)) out.unshift(A.ids[i]);
    return out;
  }
  function result() {
    const { cand, focus, conflict, wrong } = compute();
    const implied = [...carried, ...V.implied().map(([p, i]) => ({ step: A.ids[p], by: A.ids[i] }))];
    if (conflict) {
      // Each side is its likeliest candidate; a side with none (an inadmissible step nothing earlier could
      // have fed) is the step itself, so the failure is never named against itself.
      const sides = conflict.map((i) => {
        let b = i === focus ? cand : (wrong.get(i) || bitset(n));
        if (!b.some((x) => x)) { b = bitset(n); setBit(b, i); }
        return ranked(bitsOf(b))[0][0];
      });
      return { root: null, certain: false, conflict: sides, path: [], candidates: [], implied };
    }
    const members = bitsOf(cand);
    const certain = members.length === 1 && members[0] === focus && V.proven(focus) && backed(focus);
    const cands = ranked(members);
    const root = certain ? A.ids[focus] : (cands.length ? cands[0][0] : null);
    const erroneous = !!root && V.admissible(A.ids.indexOf(root)) === true;
    // GuidedSearch.result: a likeliest container named with the children it handed a wrong input.
    const misled = !root || certain ? [] : V.misled(A.ids.indexOf(root)).map((p) => A.ids[p]);
    return { root, certain, erroneous, misled, conflict: [], path: root ? path(A.ids.indexOf(root)) : [], candidates: cands, implied };
  }
  // GuidedSearch._imply (Carrier.implied): a step answered correct vouches for every unanswered input
  // whose whole output it relays, and those in turn for theirs (a right relay relays nothing wrong).
  const carried = [];
  function imply(i) {
    const carries = A.carries || [];
    const seen = new Set();
    const todo = [i];
    while (todo.length) {
      const j = todo.pop();
      for (const p of parents[j]) {
        if (answered[p] || seen.has(p) || !(carries[j] || []).includes(p)) continue;
        seen.add(p);
        V.add(p, true, null, true);
        carried.push({ step: A.ids[p], by: A.ids[j], carried: true });
        todo.push(p);
      }
    }
  }
  // GuidedSearch._stand: a pass-through container (its output one child's, unchanged) is not asked before
  // its child; a child standing wrong stands for it (and the containers passing it on), a child standing
  // right leaves it to be asked (it may be wrong for passing the value on unchanged).
  const standIn = A.stands || null;
  const stood = new Set(A.stood || []);
  const waits = (i) => !!standIn && standIn[i] >= 0 && (!answered[standIn[i]] || V.verdict(standIn[i]) === false);
  function stand(i) {
    if (!standIn) return;
    const todo = [i];
    while (todo.length) {
      const k = todo.pop();
      if (V.verdict(k) !== false) continue;
      for (let c = 0; c < n; c++) {
        if (standIn[c] !== k || (answered[c] && !stood.has(c))) continue;
        V.add(c, false, null, true);
        stood.add(c);
        carried.push({ step: A.ids[c], by: A.ids[k], stands: true });
        todo.push(c);
      }
    }
  }
  // A person's answer: correct true / false / null (don't know); of a wrong one, admissible true
  // (erroneous: its own fault), false (inadmissible: given a wrong input) or null (not saying which).
  function answer(stepId, correct, admissible) {
    const i = A.ids.indexOf(stepId);
    if (i < 0) return;
    const adm = correct === false && (admissible === true || admissible === false) ? admissible : null;
    V.add(i, correct, adm, stood.delete(i));  // its own answer replaces the one its child gave it
    const proved = auditedFor.get(i);
    if (proved !== undefined && V.verdict(i) === false && !parents[proved].includes(i)) {
      parents[proved].push(i);
      parents[proved].sort((a, b) => a - b);
      children[i].push(proved);
      V.changed();
    }
    if (correct === true) imply(i);
    stand(i);
    const a = Object.assign({ step_id: stepId, correct, by: "person", at_ns: Date.now() * 1e6 }, adm === null ? {} : { admissible: adm });
    given.push(a);
    log.push(a);
  }
  return { next, result, answer, given, log };
}
