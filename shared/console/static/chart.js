// chart.js: a stacked bar chart drawn as SVG with createElementNS (no
// library, no markup parsed from strings, no style attribute: colours come from classes in
// chart.css, positions from SVG attributes). The chart is an image for
// sighted readers; the page puts the same numbers in a table beside it.

import { el } from './ui.js';

const SVG = 'http://www.w3.org/2000/svg';

// The chart's stylesheet, linked once (a <link> to this origin passes
// style-src 'self'; an inline style would not).
let linked = false;
export function linkCSS() {
  if (linked) return;
  linked = true;
  document.head.appendChild(el('link', { rel: 'stylesheet', href: '/ui/chart.css' }));
}

function svg(tag, attrs, ...children) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) n.setAttribute(k, String(v));
  for (const c of children) if (c) n.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  return n;
}

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// MAX_SERIES named series are drawn; the rest are summed as "Other".
export const MAX_SERIES = 6;

// stackedBars draws one bar per label (a day), stacked by series
// [{name, values: [per label]}], largest first. format renders a value
// (axis and tooltips); caption names the chart for assistive technology.
export function stackedBars({ labels, series, format, caption }) {
  linkCSS();
  const W = 760, H = 260, L = 64, R = 8, T = 10, B = 28;
  const totals = labels.map((_, i) => series.reduce((s, x) => s + (x.values[i] || 0), 0));
  const top = niceMax(Math.max(0, ...totals));
  const plotW = W - L - R, plotH = H - T - B;
  const slot = plotW / Math.max(1, labels.length);
  const barW = Math.max(1, Math.min(28, slot * 0.7));
  const y = (v) => T + plotH - (v / top) * plotH;
  const capID = 'chart-cap-' + Math.random().toString(36).slice(2, 8);

  const grid = svg('g', { class: 'grid' });
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4;
    grid.appendChild(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v) }));
    grid.appendChild(svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, format(v)));
  }
  const every = Math.max(1, Math.ceil(labels.length / 10));
  const xs = svg('g', { class: 'xaxis' });
  labels.forEach((d, i) => {
    if (i % every === 0) xs.appendChild(svg('text', { x: L + slot * i + slot / 2, y: H - 8, 'text-anchor': 'middle' }, d.slice(5)));
  });
  const bars = svg('g', { class: 'bars' });
  labels.forEach((d, i) => {
    let base = 0;
    series.forEach((s, k) => {
      const v = s.values[i] || 0;
      if (v <= 0) return;
      const r = svg('rect', { class: 'series-' + k, x: L + slot * i + (slot - barW) / 2, y: y(base + v), width: barW, height: Math.max(0.5, y(base) - y(base + v)) },
        svg('title', {}, `${d} · ${s.name}: ${format(v)}`));
      bars.appendChild(r);
      base += v;
    });
  });
  const image = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': capID, class: 'chart', preserveAspectRatio: 'xMidYMid meet' },
    grid, xs, bars);
  const legend = el('ul', { class: 'legend' }, series.map((s, k) =>
    el('li', {}, el('span', { class: 'swatch series-' + k, 'aria-hidden': 'true' }), s.name)));
  return el('figure', { class: 'chart-figure', 'data-test': 'spend-chart' }, el('div', { class: 'chart-scroll' }, image), el('figcaption', { id: capID }, caption), legend);
}
