// hymn's live view. The graph is cytoscape's (layouts: breadthfirst for
// trees, fcose otherwise), the charts are uPlot's; this file only wires
// hymn's API (docs/ui.md) to them.
import cytoscape from 'cytoscape';
import fcose from 'cytoscape-fcose';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './style.css';

cytoscape.use(fcose);

// The page's requests carry the session cookie the server set when the
// URL with the token was opened: no token in any URL or in the page.
const body = document.body;
let readOnly = body.dataset.readOnly === 'true';
const ui = (window.hymnUI = {
  cytoscape, // for experiments from the console
  ready: false,
  marks: {},
  samples: new Map(), // link id -> latest LinkSample
  topology: null,
  events: 0,
});

function mark(name) {
  ui.marks[name] = performance.now();
  performance.mark(name);
}

async function api(path, body) {
  const opts = { headers: {} };
  if (body !== undefined) {
    opts.method = 'POST';
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  const text = await r.text();
  let v;
  try {
    v = JSON.parse(text);
  } catch {
    v = { error: text };
  }
  if (!r.ok) throw new Error(v.error || r.statusText);
  return v;
}

// ---- layout of the page
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
};

// The header is in the HTML already, so the page paints before this
// script has run.
const app = document.getElementById('app');
const header = app.querySelector('header');
const status = document.getElementById('status');
if (readOnly) header.append(el('span', { class: 'badge' }, 'read-only'));
const graphBox = el('div', { id: 'graph' });
const side = el('aside', { id: 'side' });
const details = el('section', { id: 'details' }, el('p', { class: 'hint' }, 'Click a link or a node.'));
const measureBox = el('section', { id: 'measure' });
const logBox = el('section', { id: 'log' }, el('h3', {}, 'Log'));
side.append(details, measureBox, logBox);
app.append(el('main', {}, graphBox, side));
mark('shell');

// ---- formatting
function si(v, unit) {
  if (!v) return '0 ' + unit;
  const p = ['', 'k', 'M', 'G', 'T'];
  let i = 0;
  while (Math.abs(v) >= 1000 && i < p.length - 1) {
    v /= 1000;
    i++;
  }
  return (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + ' ' + p[i] + unit;
}
// The seed is noise on the page (the API keeps it).
const shortConfig = (c) => c.replace(/\s*seed \d+/, '') || '(none)';
const usText = (v) => (v >= 1000 ? (v / 1000).toFixed(2) + ' ms' : v.toFixed(1) + ' µs');

// ---- graph
let cy;
// The border of a split network's nodes, by worker.
const workerColours = ['#e6194b', '#3cb44b', '#4363d8', '#f58231', '#911eb4', '#42d4f4', '#f032e6', '#9a6324'];
const roleShape = { host: 'ellipse', switch: 'round-rectangle', router: 'diamond', nat: 'hexagon', controller: 'tag' };

// shape tells a tree whose switches branch (tree,D,F: "branching"), any
// other tree (linear: "tree") and a graph with cycles ("graph").
function shape(t) {
  const nodes = t.nodes.filter((n) => n.role !== 'controller');
  const links = t.links.filter((l) => l.kind !== 'control');
  if (links.length !== nodes.length - 1) return 'graph';
  const swDeg = new Map();
  const isSw = new Set(nodes.filter((n) => n.role === 'switch').map((n) => n.name));
  for (const l of links) {
    if (isSw.has(l.node1) && isSw.has(l.node2)) {
      swDeg.set(l.node1, (swDeg.get(l.node1) || 0) + 1);
      swDeg.set(l.node2, (swDeg.get(l.node2) || 0) + 1);
    }
  }
  return [...swDeg.values()].some((d) => d >= 3) ? 'branching' : 'tree';
}

// layoutOptions picks cytoscape's layout: a tree with branching switches
// (tree,D,F) in layers from its root (rings when a layer would be too wide
// to read), anything else (linear, torus, files) by fcose's forces; above
// 500 nodes any tree in layers (linear,1000 a ladder), as forces take
// seconds there.
function layoutOptions(t) {
  const n = t.nodes.length;
  // &layout=NAME in the page's URL picks one of cytoscape's layouts.
  const forced = new URLSearchParams(location.search).get('layout');
  if (forced) return { name: forced, animate: false, quality: 'draft', roots: forced === 'breadthfirst' ? cy.nodes().filter((v) => v.data('role') === 'switch')[0] : undefined };
  const sh = shape(t);
  if (sh === 'branching' || (sh === 'tree' && n > 500)) {
    const sw = t.nodes.filter((x) => x.role === 'switch');
    const root = cy.getElementById('n:' + (sw.length ? sw[0].name : t.nodes[0].name));
    // The widest layer decides between rows and rings.
    const levels = new Map();
    const depth = new Map();
    cy.elements().bfs({
      roots: root,
      visit: (v, e, u, i, d) => {
        levels.set(d, (levels.get(d) || 0) + 1);
        depth.set(v.id(), d);
      },
    });
    const widest = Math.max(...levels.values());
    if (widest <= 40) return { name: 'breadthfirst', roots: root, directed: false, spacingFactor: 1.1, animate: false };
    // Rings sized by concentric so that no two nodes overlap.
    const maxDepth = Math.max(...levels.keys());
    return { name: 'concentric', concentric: (v) => maxDepth - (depth.get(v.id()) || 0), levelWidth: () => 1, minNodeSpacing: 6, animate: false };
  }
  return {
    name: 'fcose',
    quality: n > 400 ? 'draft' : 'default',
    randomize: true,
    animate: false,
    nodeRepulsion: 6000,
    idealEdgeLength: 60,
    numIter: n > 400 ? 500 : 2500,
    packComponents: true,
  };
}

// fitCentres fits the view to the nodes' centres plus padding: what
// cy.fit does, without the bounding boxes of every element's body, label
// and edge, which on linear,1000 took four tenths of the page's start.
function fitCentres(padding) {
  let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
  cy.nodes().forEach((v) => {
    const p = v.position();
    x1 = Math.min(x1, p.x);
    y1 = Math.min(y1, p.y);
    x2 = Math.max(x2, p.x);
    y2 = Math.max(y2, p.y);
  });
  if (!(x2 >= x1)) return;
  const margin = padding + 15; // a node's half width and its label
  const w = cy.width(), h = cy.height();
  const zoom = Math.max(cy.minZoom(), Math.min(cy.maxZoom(), (w - 2 * margin) / Math.max(x2 - x1, 1), (h - 2 * margin) / Math.max(y2 - y1, 1)));
  cy.viewport({ zoom, pan: { x: w / 2 - zoom * (x1 + x2) / 2, y: h / 2 - zoom * (y1 + y2) / 2 } });
}

function buildGraph(t) {
  const n = t.nodes.length;
  const elements = [];
  for (const nd of t.nodes) {
    // A split network's nodes carry their worker (a coloured border).
    const w = nd.worker === undefined ? '' : ' w' + (nd.worker % workerColours.length);
    elements.push({ group: 'nodes', data: { id: 'n:' + nd.name, label: nd.name, role: nd.role, backend: nd.backend }, classes: nd.role + ' ' + nd.backend + w });
  }
  let c = 0;
  for (const l of t.links) {
    const id = l.id >= 0 ? 'l' + l.id : 'c' + c++;
    const label = l.vlans && l.vlans.length ? 'VLAN ' + l.vlans.join('/') : l.kind === 'cut' ? 'VNI ' + l.vni : '';
    elements.push({ group: 'edges', data: { id, source: 'n:' + l.node1, target: 'n:' + l.node2, kind: l.kind, link: l.id, label, base: label }, classes: l.kind });
  }
  if (cy) cy.destroy();
  const big = n > 500;
  // A large graph is built and laid out off screen and mounted once:
  // the renderer then draws it once instead of following every step.
  cy = ui.cy = cytoscape({
    container: big ? undefined : graphBox,
    styleEnabled: true,
    elements,
    minZoom: 0.02,
    maxZoom: 4,
    textureOnViewport: big,
    hideEdgesOnViewport: big,
    hideLabelsOnViewport: big,
    pixelRatio: big ? 1 : 'auto',
    style: [
      // Labels are measured per element: a large graph starts without
      // them and gets them when zoomed in far enough to read them.
      { selector: 'node', style: { label: big ? '' : 'data(label)', 'font-size': 10, 'min-zoomed-font-size': 7, 'text-valign': 'bottom', 'text-margin-y': 2, width: 18, height: 18, 'background-color': '#4a7bd0', 'border-width': 1, 'border-color': '#1d3a6e' } },
      ...Object.entries(roleShape).map(([r, s]) => ({ selector: 'node.' + r, style: { shape: s } })),
      { selector: 'node.switch', style: { 'background-color': '#3a9a5b', 'border-color': '#1f5c34', width: 22 } },
      { selector: 'node.router', style: { 'background-color': '#b0802a' } },
      { selector: 'node.nat', style: { 'background-color': '#8a5bb0' } },
      { selector: 'node.controller', style: { 'background-color': '#888', shape: 'tag' } },
      { selector: 'node.vm', style: { 'border-width': 3, 'border-style': 'double', 'border-color': '#222' } },
      ...workerColours.map((c, i) => ({ selector: 'node.w' + i, style: { 'border-width': 3, 'border-color': c } })),
      { selector: 'edge', style: { width: 1.5, 'line-color': '#9aa', 'curve-style': 'haystack', label: big ? '' : 'data(label)', 'font-size': 8, 'min-zoomed-font-size': 11, 'text-background-color': '#fff', 'text-background-opacity': 0.8, 'text-background-padding': 1 } },
      { selector: 'edge.emulated, edge.emulated-vf', style: { 'line-color': '#d88a2a' } },
      { selector: 'edge.vf, edge.emulated-vf', style: { 'line-style': 'dashed', 'line-dash-pattern': [6, 2] } },
      { selector: 'edge.cut', style: { 'line-color': '#7b3fb5', 'line-style': 'dashed', 'line-dash-pattern': [8, 3], width: 2.5 } },
      { selector: 'edge.control', style: { 'line-style': 'dotted', 'line-color': '#bbb', width: 1 } },
      { selector: 'edge.active', style: { 'line-color': '#1a73e8', 'z-index': 5 } },
      { selector: 'edge.emulated.active, edge.emulated-vf.active', style: { 'line-color': '#e8591a' } },
      { selector: 'edge.dropping', style: { 'line-color': '#d0021b' } },
      { selector: 'edge.down', style: { 'line-color': '#d0021b', 'line-style': 'dashed', 'line-dash-pattern': [2, 4], opacity: 0.6 } },
      { selector: ':selected', style: { 'overlay-color': '#fc0', 'overlay-opacity': 0.35, 'overlay-padding': 4 } },
    ],
    layout: { name: 'preset', fit: false }, // the real layout follows; fitting here measures every element
  });
  mark('cy-created');
  if (big) {
    let labelled = false;
    cy.on('zoom', () => {
      const want = cy.zoom() > 0.7;
      if (want === labelled) return;
      labelled = want;
      const l = want ? 'data(label)' : '';
      cy.style().selector('node').style('label', l).selector('edge').style('label', l).update();
    });
  }
  // The layouts' own fit (their default) measures every element's
  // bounding box; the view is fitted once, below, when the layout stops.
  const lay = cy.layout({ ...layoutOptions(t), fit: false });
  lay.one('layoutstop', () => {
    mark('layout-done');
    if (big) {
      cy.mount(graphBox);
      fitCentres(30);
    } else {
      cy.fit(undefined, 30);
    }
    if (cy.zoom() > 1.6) {
      cy.zoom(1.6);
      cy.center();
    }
    requestAnimationFrame(() =>
      requestAnimationFrame(() => {
        mark('graph-complete');
        ui.ready = true;
      }),
    );
  });
  lay.run();
  cy.on('tap', 'edge', (e) => select(e.target.id()));
  cy.on('tap', 'node', (e) => select(e.target.id()));
  cy.on('tap', (e) => {
    if (e.target === cy) select(null);
  });
}

// edgeWidth grows with the log of the link's busier direction's bit rate.
const edgeWidth = (bps) => (bps > 0 ? Math.min(1.5 + Math.log10(1 + bps / 1000) * 1.6, 12) : 1.5);

function dropsOf(d) {
  let n = d.dropped || 0;
  if (d.emu) for (const v of Object.values(d.emu.drops)) n += v;
  return n;
}

function applySamples(links) {
  if (!cy) return;
  cy.batch(() => {
    for (const s of links) {
      const prev = ui.samples.get(s.id);
      ui.samples.set(s.id, s);
      const e = cy.getElementById('l' + s.id);
      if (!e.nonempty()) continue;
      const bps = Math.max(s.ab.bps, s.ba.bps);
      const active = s.ab.pps > 0 || s.ba.pps > 0;
      const dropping = !!prev && dropsOf(s.ab) + dropsOf(s.ba) > dropsOf(prev.ab) + dropsOf(prev.ba);
      const label = s.up === false ? 'down' : active ? `${si(s.ab.pps + s.ba.pps, 'p/s')}, ${si(s.ab.bps + s.ba.bps, 'bit/s')}` : e.data('base');
      const width = edgeWidth(bps);
      // Restyling costs the renderer: only edges whose look changed. An
      // edge not restyled yet has the stylesheet's look, which an idle
      // link that is up keeps (on linear,1000 the first samples would
      // otherwise restyle all 1999 edges before the graph is complete).
      const look = `${active}|${s.up}|${dropping}|${width}|${label}`;
      const plain = !active && s.up !== false && !dropping && width === edgeWidth(0) && label === e.data('base');
      if (e.scratch('_look') === undefined && plain) {
        e.scratch('_look', look);
      } else if (e.scratch('_look') !== look) {
        e.scratch('_look', look);
        e.toggleClass('active', active);
        e.toggleClass('down', s.up === false);
        e.toggleClass('dropping', dropping);
        e.style('width', width);
        e.data('label', label);
      }
      const h = history.get(s.id);
      if (h) pushHistory(h, s);
    }
  });
  if (selected && selected.startsWith('l')) renderLink(+selected.slice(1), false);
}

// ---- history of the selected links' rates (for the rate chart)
const history = new Map();
function pushHistory(h, s) {
  h.t.push(Date.now() / 1000);
  h.ab.push(s.ab.bps);
  h.ba.push(s.ba.bps);
  if (h.t.length > 300) for (const k of ['t', 'ab', 'ba']) h[k].shift();
}

// ---- details panel
let selected = null;
let selTimer = null;
let charts = [];

function select(id) {
  selected = id;
  if (cy) {
    cy.elements().unselect();
    if (id) cy.getElementById(id).select();
  }
  clearInterval(selTimer);
  charts.forEach((c) => c.destroy());
  charts = [];
  details.replaceChildren();
  if (!id) {
    details.append(el('p', { class: 'hint' }, 'Click a link or a node.'));
    return;
  }
  if (id.startsWith('n:')) {
    renderNode(id.slice(2));
    selTimer = setInterval(() => renderNode(id.slice(2), true), 2000);
  } else if (id.startsWith('l')) {
    const lid = +id.slice(1);
    if (!history.has(lid)) history.set(lid, { t: [], ab: [], ba: [] });
    renderLink(lid, true);
    selTimer = setInterval(() => refreshHistogram(lid), 1000);
    refreshHistogram(lid);
  } else {
    details.append(el('p', {}, 'A controller connection.'));
  }
}
ui.select = select;

function linkOf(id) {
  return ui.topology.links.find((l) => l.id === id);
}

function table(rows, head) {
  const t = el('table');
  if (head) t.append(el('tr', {}, ...head.map((h) => el('th', {}, h))));
  for (const r of rows) t.append(el('tr', {}, ...r.map((c, i) => el(i ? 'td' : 'th', {}, String(c)))));
  return t;
}

let linkDom = null;
function renderLink(id, fresh) {
  const l = linkOf(id);
  if (!l) return;
  const s = ui.samples.get(id);
  if (fresh || !linkDom || linkDom.id !== id) {
    details.replaceChildren();
    linkDom = { id, stats: el('div', { id: 'link-stats' }), emu: el('div', { id: 'link-emu' }), sched: el('div', { id: 'link-sched' }) };
    const title = el('h3', {}, `${l.node1} — ${l.node2}`);
    const kind = el(
      'p',
      { class: 'kind' },
      l.kind === 'cut'
        ? `cut link${l.emulated ? ' (emulated)' : ''}: VXLAN VNI ${l.vni} from worker ${l.workers[0]} (${l.intf1}) to worker ${l.workers[1]} (${l.intf2}); counters are the tunnel's`
        : `${l.kind} link, ${l.intf1} ↔ ${l.intf2}` + (l.vlans && l.vlans.length ? `, VLAN ${l.vlans.join('/')}` : ''),
    );
    const rateChart = el('div', { id: 'rate-chart' });
    const histChart = el('div', { id: 'hist-chart' });
    linkDom.rateChart = rateChart;
    linkDom.histChart = histChart;
    details.append(title, kind, linkDom.stats, histChart, el('h4', {}, 'Rate (bit/s): ', el('span', { class: 'ab' }, `${l.node1}→${l.node2}`), ' ', el('span', { class: 'ba' }, `${l.node2}→${l.node1}`)), rateChart, linkDom.emu, linkDom.sched);
    if (!readOnly && l.kind !== 'cut') details.append(linkActions(l));
    const h = history.get(id);
    const rc = new uPlot(
      { width: 380, height: 130, legend: { show: false }, scales: { x: { time: true } }, series: [{}, { label: `${l.node1}→${l.node2}`, stroke: '#1a73e8' }, { label: `${l.node2}→${l.node1}`, stroke: '#e8591a' }], axes: [{}, { values: (u, v) => v.map((x) => si(x, '')), size: 50 }] },
      [h.t, h.ab, h.ba],
      rateChart,
    );
    linkDom.rc = rc;
    charts.push(rc);
  } else if (linkDom.rc) {
    const h = history.get(id);
    linkDom.rc.setData([h.t, h.ab, h.ba]);
  }
  if (!s) return;
  const dir = (d) => [si(d.pps, 'p/s'), si(d.bps, 'bit/s'), d.packets, si(d.bytes, 'B'), d.dropped];
  linkDom.stats.replaceChildren(
    el('p', { id: 'link-up', class: s.up === false ? 'down' : 'up' }, s.up === false ? 'down' : s.up ? 'up' : 'state unknown'),
    table(
      [
        [`${l.node1}→${l.node2}`, ...dir(s.ab)],
        [`${l.node2}→${l.node1}`, ...dir(s.ba)],
      ],
      ['', 'packets/s', 'rate', 'packets', 'bytes', 'drops'],
    ),
  );
  linkDom.stats.dataset.abPackets = s.ab.packets;
  linkDom.stats.dataset.baPackets = s.ba.packets;
  if (s.ab.emu) {
    const e = (d) => d.emu;
    // Only the causes that dropped something, in either direction.
    const causes = Object.keys(s.ab.emu.drops).filter((c) => s.ab.emu.drops[c] || (s.ba.emu && s.ba.emu.drops[c]));
    linkDom.emu.replaceChildren(
      el('h4', {}, 'Emulator'),
      table(
        [
          ['parameters', shortConfig(e(s.ab).config), shortConfig(e(s.ba).config)],
          ['sent', e(s.ab).sent, e(s.ba).sent],
          ['queued', e(s.ab).queued, e(s.ba).queued],
          ['reordered', e(s.ab).reordered, e(s.ba).reordered],
          ...(causes.length ? causes.map((c) => ['drop: ' + c.replace('_', ' '), e(s.ab).drops[c], e(s.ba).drops[c]]) : [['drops (any cause)', 0, 0]]),
          ...['p50', 'p90', 'p99', 'p99.9', 'max'].map((p) => ['delay ' + p, usText(e(s.ab).delay_us[p]), usText(e(s.ba).delay_us[p])]),
        ],
        ['', `${l.node1}→${l.node2}`, `${l.node2}→${l.node1}`],
      ),
    );
  } else if (l.kind === 'cut') {
    const how = l.emulated ? "Emulated in the workers' tunnels, each direction on its sending side (not shown here)." : 'No emulator on this tunnel.';
    linkDom.emu.replaceChildren(el('p', { class: 'hint' }, how + ' A cut link is not changed from the page.'));
  } else {
    linkDom.emu.replaceChildren(el('p', { class: 'hint' }, 'No emulator on this link (setting parameters inserts one).'));
  }
  if (s.schedule) {
    const sd = (x) => (x ? `point ${x.next}/${x.points} (next at ${x.next_at_s.toFixed(1)} s), cycle ${x.cycle}, ${x.elapsed_s.toFixed(1)} s in${x.finished ? ', finished' : ''}` : '—');
    linkDom.sched.replaceChildren(el('h4', {}, 'Schedule'), table([[`${l.node1}→${l.node2}`, sd(s.schedule.ab)], [`${l.node2}→${l.node1}`, sd(s.schedule.ba)]]));
  } else linkDom.sched.replaceChildren();
}

let histPlot = null;
async function refreshHistogram(id) {
  const l = linkOf(id);
  if (!l || !l.kind.startsWith('emulated') || !linkDom || linkDom.id !== id) return;
  let h;
  try {
    h = await api('/api/histogram?link=' + id);
  } catch {
    return;
  }
  if (!linkDom || linkDom.id !== id) return;
  // One x axis for both directions: the bins' lower bounds, merged.
  const xs = [...new Set([...h.ab, ...h.ba].map((b) => b.lower_us))].sort((a, b) => a - b);
  const idx = new Map(xs.map((x, i) => [x, i]));
  const ab = xs.map(() => null);
  const ba = xs.map(() => null);
  for (const b of h.ab) ab[idx.get(b.lower_us)] = b.count;
  for (const b of h.ba) ba[idx.get(b.lower_us)] = b.count;
  const data = [xs, ab, ba];
  linkDom.histChart.dataset.count = [...h.ab, ...h.ba].reduce((a, b) => a + b.count, 0);
  if (!histPlot || !linkDom.histChart.contains(histPlot.root)) {
    const bars = uPlot.paths.bars({ size: [0.9, 12] });
    linkDom.histChart.replaceChildren(el('h4', {}, 'Realised delay histogram (µs; packets per bin): ', el('span', { class: 'ab' }, `${l.node1}→${l.node2}`), ' ', el('span', { class: 'ba' }, `${l.node2}→${l.node1}`)));
    histPlot = new uPlot(
      {
        width: 380,
        height: 150,
        legend: { show: false },
        scales: { x: { time: false } },
        series: [{ label: 'µs' }, { label: `${l.node1}→${l.node2}`, stroke: '#1a73e8', fill: '#1a73e855', paths: bars }, { label: `${l.node2}→${l.node1}`, stroke: '#e8591a', fill: '#e8591a55', paths: bars }],
      },
      data,
      linkDom.histChart,
    );
    charts.push(histPlot);
  } else histPlot.setData(data);
}

function linkActions(l) {
  const box = el('div', { class: 'actions' }, el('h4', {}, 'Actions'));
  const s = ui.samples.get(l.id);
  const btn = el('button', { id: 'link-toggle' }, s && s.up === false ? 'Set link up' : 'Set link down');
  btn.addEventListener('click', async () => {
    const cur = ui.samples.get(l.id);
    const up = cur ? cur.up === false : false;
    btn.disabled = true;
    try {
      await api('/api/link/state', { node1: l.node1, node2: l.node2, up });
      btn.textContent = up ? 'Set link down' : 'Set link up';
      note(`link ${l.node1} ${l.node2} ${up ? 'up' : 'down'}`);
    } catch (e) {
      note(e.message, true);
    }
    btn.disabled = false;
  });
  const dir = el('select', { id: 'emu-dir' });
  for (const [v, t] of [
    ['both', 'both directions'],
    ['a>b', `${l.node1}→${l.node2}`],
    ['b>a', `${l.node2}→${l.node1}`],
  ])
    dir.append(el('option', { value: v }, t));
  const params = el('input', { id: 'emu-params', placeholder: 'delay 20ms jitter 1ms loss 1% rate 10mbit', size: 30 });
  const apply = el('button', { id: 'emu-apply' }, 'Apply');
  apply.addEventListener('click', async () => {
    try {
      const r = await api('/api/link/emu', { node1: l.node1, node2: l.node2, dir: dir.value, params: params.value });
      note(`emu ${l.node1} ${l.node2} ${dir.value} ${params.value}: now ${r.ab || '(none)'} / ${r.ba || '(none)'}`);
    } catch (e) {
      note(e.message, true);
    }
  });
  const capBtn = el('button', { id: 'capture-toggle' }, 'Start capture');
  const capList = el('div', { id: 'capture-files' });
  let cap = null;
  capBtn.addEventListener('click', async () => {
    try {
      if (!cap) {
        cap = await api('/api/capture/start', { node1: l.node1, node2: l.node2, dir: dir.value });
        capBtn.textContent = 'Stop capture';
        capList.replaceChildren('capturing to ' + cap.files.join(', '));
      } else {
        const r = await api('/api/capture/stop', { id: cap.id });
        capBtn.textContent = 'Start capture';
        capList.replaceChildren(...cap.files.map((f, k) => el('a', { href: `/api/capture/file?id=${cap.id}&file=${k}`, download: f }, f + ' ')));
        cap = null;
      }
    } catch (e) {
      note(e.message, true);
    }
  });
  box.append(btn, el('div', { class: 'row' }, dir, params, apply), el('div', { class: 'row' }, capBtn, capList));
  return box;
}

const noteBox = el('p', { id: 'note' });
function note(text, err) {
  ui.lastNote = text; // the panel may be re-rendered, the note with it
  noteBox.textContent = text;
  noteBox.className = err ? 'error' : '';
  if (!noteBox.isConnected) details.append(noteBox);
}

async function renderNode(name, refresh) {
  let d;
  try {
    d = await api('/api/node?name=' + encodeURIComponent(name));
  } catch (e) {
    return;
  }
  if (selected !== 'n:' + name) return;
  const rows = (d.live || []).map((i) => [i.name, i.state, (i.addrs || []).join(' '), i.mac || '', i.mtu, `${i.rx.packets} / ${si(i.rx.bytes, 'B')}`, `${i.tx.packets} / ${si(i.tx.bytes, 'B')}`, i.rx.dropped + i.tx.dropped]);
  const planned = (d.intfs || []).map((i) => [i.name, i.ip || '', i.mac || '']);
  details.replaceChildren(
    el('h3', {}, name),
    el('p', { class: 'kind' }, `${d.role}, ${d.backend}` + (d.worker === undefined ? '' : `, worker ${d.worker}`)),
    rows.length ? table(rows, ['interface', 'state', 'addresses', 'MAC', 'MTU', 'rx pkts/bytes', 'tx pkts/bytes', 'drops']) : table(planned, ['interface', 'address', 'MAC']),
  );
  // A VM's guest that did not answer: its planned interfaces, and why.
  if (d.live_error) details.append(el('p', { class: 'hint' }, 'Live interfaces unavailable: ' + d.live_error));
  if (!refresh && d.role === 'host') measureFrom.value = name;
}

// ---- measure
const measureFrom = el('select', { id: 'measure-from' });
const measureTo = el('select', { id: 'measure-to' });
const measureRate = el('input', { id: 'measure-rate', value: '1000', size: 6 });
const measureDur = el('input', { id: 'measure-duration', value: '3', size: 3 });
const measureRun = el('button', { id: 'measure-run' }, 'Measure');
const measureOut = el('div', { id: 'measure-out' });
let measurePlot = null;
function setupMeasure(t) {
  const hosts = t.nodes.filter((n) => n.role === 'host').map((n) => n.name);
  for (const s of [measureFrom, measureTo]) s.replaceChildren(...hosts.map((h) => el('option', { value: h }, h)));
  if (hosts.length > 1) measureTo.value = hosts[hosts.length - 1];
  measureBox.replaceChildren(el('h3', {}, 'Measure'), el('div', { class: 'row' }, measureFrom, ' → ', measureTo, ' rate ', measureRate, ' p/s for ', measureDur, ' s ', measureRun), measureOut);
  measureRun.disabled = readOnly || hosts.length < 2;
}
measureRun.addEventListener('click', async () => {
  measureRun.disabled = true;
  measureOut.replaceChildren('measuring…');
  try {
    const r = await api('/api/measure', { from: measureFrom.value, to: measureTo.value, rate: measureRate.value, duration: +measureDur.value });
    const res = r.report.results[0];
    const lat = res.latency_us;
    measureOut.replaceChildren(
      table([
        ['sent / received', `${res.sent} / ${res.received}`],
        ['loss', (res.loss * 100).toFixed(3) + ' %'],
        ['one-way delay p50 / p99 / max', `${usText(lat.p50)} / ${usText(lat.p99)} / ${usText(lat.max)}`],
      ]),
    );
    const s = r.series[0] || [];
    const box = el('div', { id: 'measure-plot' });
    measureOut.append(box);
    if (measurePlot) measurePlot.destroy();
    measurePlot = new uPlot(
      { width: 380, height: 150, legend: { show: false }, scales: { x: { time: false } }, series: [{ label: 's' }, { label: 'one-way delay µs', stroke: '#6a3d9a', points: { show: true, size: 2 }, paths: () => null }] },
      [s.map((p) => p[0]), s.map((p) => p[1])],
      box,
    );
  } catch (e) {
    measureOut.replaceChildren(el('span', { class: 'error' }, e.message));
  }
  measureRun.disabled = readOnly;
});

// ---- log
function addLog(line) {
  const t = new Date(line.time).toLocaleTimeString();
  logBox.append(el('div', { class: 'logline' }, `${t}  ${line.text}`));
  while (logBox.childNodes.length > 60) logBox.childNodes[1].remove();
}

// ---- start
// The graph needs only the topology: the counters (a sampling of every
// namespace) and the log so far come with the stream's first events,
// while the graph is laid out.
async function load() {
  const [info, topology] = await Promise.all([api('/api/info'), api('/api/topology')]);
  readOnly = info.read_only;
  mark('topology');
  ui.topology = topology;
  buildGraph(topology);
  setupMeasure(topology);
}

function stream() {
  const es = new EventSource('/api/events');
  es.addEventListener('stats', (e) => {
    const s = JSON.parse(e.data);
    ui.events++;
    ui.lastTime = s.time;
    status.textContent = 'live ' + new Date(s.time).toLocaleTimeString();
    status.className = 'live';
    applySamples(s.links || []);
  });
  // Each (re)connection sends the log so far: start it afresh.
  es.addEventListener('open', () => logBox.replaceChildren(el('h3', {}, 'Log')));
  es.addEventListener('log', (e) => addLog(JSON.parse(e.data)));
  es.addEventListener('topology', async () => {
    const topology = await api('/api/topology');
    ui.topology = topology;
    // Kinds change (an emulator inserted): restyle, keep the layout.
    for (const l of topology.links) {
      if (l.id < 0) continue;
      const e = cy.getElementById('l' + l.id);
      if (e.nonempty()) {
        e.classes(l.kind);
        e.data('kind', l.kind);
      }
    }
    if (selected) select(selected);
  });
  es.onerror = () => {
    status.textContent = 'disconnected (the network stopped?)';
    status.className = 'dead';
  };
}

load()
  .then(stream)
  .catch((e) => {
    status.textContent = 'error: ' + e.message;
    status.className = 'dead';
  });
