// Small SVG and bar charts for the dashboard, drawn from the recent calls it already has.
const SVG = 'http://www.w3.org/2000/svg';

function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** A line of values (oldest first) scaled into the chart's 300x80 box. */
export function line(svg, values) {
  clear(svg);
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? 300 / (values.length - 1) : 300;
  const points = values.map(
    (v, i) => `${(i * step).toFixed(1)},${(78 - (v / max) * 74).toFixed(1)}`,
  );
  const poly = document.createElementNS(SVG, 'polyline');
  poly.setAttribute('points', points.join(' '));
  svg.appendChild(poly);
  const label = document.createElementNS(SVG, 'title');
  label.textContent = `max ${max} per second`;
  svg.appendChild(label);
}

/** A histogram of durations (ms) over log-spaced buckets. */
export function histogram(svg, durations) {
  clear(svg);
  const edges = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, Infinity];
  const counts = edges.map(() => 0);
  for (const d of durations) counts[edges.findIndex((e) => d <= e)]++;
  const max = Math.max(1, ...counts);
  const w = 300 / edges.length;
  counts.forEach((c, i) => {
    const h = (c / max) * 70;
    const r = document.createElementNS(SVG, 'rect');
    r.setAttribute('x', String(i * w + 2));
    r.setAttribute('y', String(78 - h));
    r.setAttribute('width', String(w - 4));
    r.setAttribute('height', String(Math.max(h, c > 0 ? 1 : 0)));
    const t = document.createElementNS(SVG, 'title');
    t.textContent = `≤ ${edges[i]} ms: ${c}`;
    r.appendChild(t);
    svg.appendChild(r);
  });
}

/** Horizontal bars: [label, value, shown text] rows, largest first. */
export function bars(el, rows) {
  clear(el);
  const max = Math.max(1, ...rows.map((r) => r[1]));
  for (const [label, value, text] of rows) {
    const row = document.createElement('div');
    const name = document.createElement('span');
    name.textContent = label;
    const bar = document.createElement('i');
    bar.style.width = `${Math.max(2, (value / max) * 100)}%`;
    const num = document.createElement('span');
    num.textContent = text ?? String(value);
    row.append(name, bar, num);
    el.appendChild(row);
  }
}
