// layout.js: the layered drawing of report/layout.py (Sugiyama; Gansner et al. 1993), ported step for
// step, so that a view the report ships unlaid (a collapsed group's or chunk's) is laid out here the first
// time it is opened: laying out every one of a large run's hundreds of groups ahead of time in Python was
// most of what the report cost beyond the analysis. Same phases, same tie-breaks, same iteration order
// (Maps keep insertion order as Python's dicts do; Array.prototype.sort is stable as sorted() is), so the
// result is the same: tests/test_layout_js.py runs both on the same graphs.

const LAYOUT_NODE_GAP = 34, LAYOUT_LAYER_GAP = 190, LAYOUT_DUMMY_BUDGET = 20000;

// Crossings between two adjacent layers: inversions of the edge list sorted by upper position (Fenwick tree).
function layoutCrossings(upper, lowerPos, adj) {
  const targets = [];
  for (const u of upper) {
    const ts = [];
    for (const v of adj.get(u) || []) if (lowerPos.has(v)) ts.push(lowerPos.get(v));
    ts.sort((a, b) => a - b);
    for (const t of ts) targets.push(t);
  }
  if (targets.length < 2) return 0;
  let size = 0;
  for (const t of targets) size = Math.max(size, t + 1);
  const tree = new Array(size + 1).fill(0);
  let count = 0;
  targets.forEach((t, seen) => {
    let i = t + 1, le = 0;  // edges seen so far that end strictly right of t cross this one
    for (; i > 0; i -= i & -i) le += tree[i];
    count += seen - le;
    for (i = t + 1; i <= size; i += i & -i) tree[i] += 1;
  });
  return count;
}

// Gansner's weighted median: the middle value, or a weighted middle of the two middle values.
function layoutMedian(values) {
  values.sort((a, b) => a - b);
  const n = values.length, m = n >> 1;
  if (n % 2) return values[m];
  if (n === 2) return (values[0] + values[1]) / 2;
  const left = values[m - 1] - values[0], right = values[n - 1] - values[m];
  if (left + right === 0) return (values[m - 1] + values[m]) / 2;
  return (values[m - 1] * right + values[m] * left) / (left + right);
}

// Positions closest to `wish` (weighted least squares) at least `gap` apart: pool-adjacent-violators.
function layoutIsotonic(wish, weight, gap) {
  const blocks = [];  // [weighted sum, weight, count]
  for (let i = 0; i < wish.length; i++) {
    blocks.push([(wish[i] - i * gap) * weight[i], weight[i], 1]);
    while (blocks.length > 1) {
      const a = blocks[blocks.length - 2], b = blocks[blocks.length - 1];
      if (!(a[0] / a[1] > b[0] / b[1])) break;
      blocks.pop();
      a[0] += b[0]; a[1] += b[1]; a[2] += b[2];
    }
  }
  const out = [];
  for (const [s, wt, c] of blocks) for (let k = 0; k < c; k++) out.push(s / wt);
  return out.map((z, i) => z + i * gap);
}

function layoutPush(map, k, v) {
  const list = map.get(k);
  if (list) list.push(v); else map.set(k, [v]);
}
function layoutSum(ys, ids) {
  let s = 0;
  for (const u of ids) s += ys[u];
  return s;
}
function layoutDown(depth, down) {
  const out = [];
  if (down) for (let i = 1; i < depth; i++) out.push(i);
  else for (let i = depth - 2; i >= 0; i--) out.push(i);
  return out;
}

// Phases 1 and 2: orientation against cycles, longest-path layers (sources pulled right), dummy chains.
function layoutLayers(n, edges, budget) {
  const oriented = edges.map(([u, v]) => (u < v ? [u, v] : [v, u]));
  const seen = new Set(), unique = [];
  for (const [u, v] of oriented) {
    const k = u * n + v;
    if (u !== v && !seen.has(k)) { seen.add(k); unique.push([u, v]); }
  }
  unique.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const preds = Array.from({ length: n }, () => []);
  for (const [u, v] of unique) preds[v].push(u);
  const layer = new Array(n).fill(0);
  for (let v = 0; v < n; v++) {
    if (!preds[v].length) continue;
    let top = -1;
    for (const u of preds[v]) top = Math.max(top, layer[u]);
    layer[v] = top + 1;
  }
  const succMin = new Array(n).fill(null);
  for (const [u, v] of unique) succMin[u] = succMin[u] === null ? layer[v] : Math.min(succMin[u], layer[v]);
  for (let v = 0; v < n; v++) {
    const sm = succMin[v];
    if (!preds[v].length && sm !== null && sm - 1 > layer[v]) layer[v] = sm - 1;
  }
  const span = (e) => layer[e[1]] - layer[e[0]];
  const split = new Set();
  let total = 0;
  for (const e of unique.slice().sort((a, b) => span(a) - span(b))) {
    const extra = span(e) - 1;
    if (extra <= 0) continue;
    if (total + extra > budget) break;
    total += extra;
    split.add(e[0] * n + e[1]);
  }
  const nodeLayer = layer.slice(), chain = new Map(), adjDown = new Map();
  for (const [u, v] of unique) {
    if (split.has(u * n + v)) {
      const path = [u];
      for (let col = layer[u] + 1; col < layer[v]; col++) { nodeLayer.push(col); path.push(nodeLayer.length - 1); }
      path.push(v);
      chain.set(u * n + v, path);
      for (let i = 1; i < path.length; i++) layoutPush(adjDown, path[i - 1], path[i]);
    } else if (layer[v] - layer[u] === 1) layoutPush(adjDown, u, v);
  }
  return { oriented, layer, nodeLayer, chain, adjDown };
}

// Phase 3: median sweeps down and up, keeping the ordering with the fewest crossings.
function layoutOrder(layers, adjUp, adjDown, pos, sweeps) {
  const depth = layers.length;
  const countAll = () => {
    let c = 0;
    for (let i = 0; i < depth - 1; i++) c += layoutCrossings(layers[i], new Map(layers[i + 1].map((v) => [v, pos[v]])), adjDown);
    return c;
  };
  let best = layers.map((l) => l.slice()), bestC = countAll();
  for (let round = 0; round < sweeps && bestC !== 0; round++) {
    for (const down of [true, false]) {
      const nbrs = down ? adjUp : adjDown;
      for (const i of layoutDown(depth, down)) {
        const keyed = layers[i].map((v) => {
          const ns = (nbrs.get(v) || []).map((u) => pos[u]);
          if (!ns.length) return [pos[v], pos[v], pos[v], v];
          const bary = ns.reduce((a, b) => a + b, 0) / ns.length;
          return [layoutMedian(ns), bary, pos[v], v];
        });
        keyed.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2] || a[3] - b[3]);
        layers[i] = keyed.map((k) => k[3]);
        layers[i].forEach((v, j) => { pos[v] = j; });
      }
    }
    const c = countAll();
    if (c < bestC) { bestC = c; best = layers.map((l) => l.slice()); }
  }
  return { layers: best, crossings: bestC };
}

// Phase 4: isotonic regression of each layer towards its neighbours' mean, sweeping both ways.
function layoutCoordinates(layers, adjUp, adjDown, n, total, gap) {
  const depth = layers.length, ypos = new Array(total).fill(0);
  layers.forEach((lay) => lay.forEach((v, i) => { ypos[v] = i * gap; }));
  for (let round = 0; round < 4; round++) {
    for (const down of [true, false]) {
      const nbrs = down ? adjUp : adjDown;
      for (const i of layoutDown(depth, down)) {
        const members = layers[i];
        if (members.length === 1) {  // nothing to separate: the neighbours' mean
          const around = nbrs.get(members[0]);
          if (around) ypos[members[0]] = layoutSum(ypos, around) / around.length;
          continue;
        }
        const wish = members.map((v) => {
          const around = nbrs.get(v);
          return around ? layoutSum(ypos, around) / around.length : ypos[v];
        });
        const placed = layoutIsotonic(wish, members.map((v) => (v < n ? 1 : 2)), gap);
        members.forEach((v, k) => { ypos[v] = placed[k]; });
      }
    }
  }
  let low = Infinity;
  for (const y of ypos) low = Math.min(low, y);
  return ypos.map((y) => y - low);
}

// Nodes 0..n-1 (index order = start order) and [upstream, downstream] edges -> the layout.py Layout's fields.
function layeredLayout(n, edges, opts) {
  const o = opts || {};
  const sweeps = o.sweeps ?? 6, nodeGap = o.nodeGap ?? LAYOUT_NODE_GAP;
  const layerGap = o.layerGap ?? LAYOUT_LAYER_GAP, budget = o.dummyBudget ?? LAYOUT_DUMMY_BUDGET;
  const { oriented, layer, nodeLayer, chain, adjDown } = layoutLayers(n, edges, budget);
  const total = nodeLayer.length, adjUp = new Map();
  for (const [a, bs] of adjDown) for (const b of bs) layoutPush(adjUp, b, a);
  let depth = 0;
  for (const l of nodeLayer) depth = Math.max(depth, l + 1);
  const layers = Array.from({ length: depth }, () => []);
  for (let v = 0; v < total; v++) layers[nodeLayer[v]].push(v);
  const pos = new Array(total).fill(0);
  layers.forEach((lay) => lay.forEach((v, i) => { pos[v] = i; }));
  const ordered = layoutOrder(layers, adjUp, adjDown, pos, sweeps);
  const ypos = layoutCoordinates(ordered.layers, adjUp, adjDown, n, total, nodeGap);
  const xpos = nodeLayer.map((l) => l * layerGap);
  const routes = edges.map(([ou, ov], k) => {
    const [u, v] = oriented[k];
    const path = chain.get(u * n + v) || [u, v];
    const pts = path.map((p) => [xpos[p], ypos[p]]);
    return { source: ou, target: ov, points: ou === u && ov === v ? pts : pts.reverse() };
  });
  let width = 0, height = 0;
  for (let v = 0; v < n; v++) width = Math.max(width, xpos[v]);
  for (const y of ypos) height = Math.max(height, y);
  return { x: xpos.slice(0, n), y: ypos.slice(0, n), layer, routes, crossings: ordered.crossings, width, height };
}
