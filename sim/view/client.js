// The trace viewer's page script (runs in the browser; sim/view/page.ts inlines it).
// A canvas draws the space-time diagram (lanes, role stretches, faults, messages),
// because a run has tens of thousands of events; lane labels, the violation marker
// and the controls are DOM elements. window.simView exposes what was drawn, for tests.
/* global document, window, requestAnimationFrame, devicePixelRatio */
(function () {
  'use strict';
  const model = JSON.parse(document.getElementById('view-data').textContent);
  const LANE_HEIGHT_PX = 56;
  const AXIS_HEIGHT_PX = 28;
  const LABEL_WIDTH_PX = 0;
  /** ARROW_BUDGET: above this many visible arrows, heartbeats (and their answers) are drawn as density bars. */
  const ARROW_BUDGET = 4000;
  /** HEAD_BUDGET: arrowheads only when this few arrows are visible. */
  const HEAD_BUDGET = 1500;
  const ROLE_COLORS = {
    leader: '#e8b400',
    candidate: '#f08a24',
    precandidate: '#f6c48a',
    follower: '#c9d6e3',
    learner: '#d9c8f5',
    joiner: '#a8d8a0',
    removed: '#9a9a9a',
    down: '#3b3b3b',
  };
  const KIND_COLORS = {
    RequestVote: '#d9480f',
    Heartbeat: '#74a9cf',
    ShipSegment: '#1c7ed6',
    StreamSegments: '#5f3dc4',
    FetchSnapshot: '#087f5b',
    ReportApplied: '#2b8a3e',
    TimeoutNow: '#c2255c',
    JoinCluster: '#0b7285',
  };
  const FAULT_COLORS = {
    crash: 'rgba(40,40,40,0.18)',
    pause: 'rgba(130,60,200,0.22)',
    partition: 'rgba(220,30,30,0.16)',
    clog: 'rgba(240,140,0,0.25)',
  };

  const messages = model.messages.slice().sort((a, b) => a.sentUs - b.sentUs);
  let maxFlightUs = 0;
  for (const m of messages) if (m.atUs >= 0) maxFlightUs = Math.max(maxFlightUs, m.atUs - m.sentUs);
  const kinds = [...new Set(messages.map((m) => m.kind))].sort();
  const faultKinds = [...new Set(model.faults.map((f) => f.kind))].sort();
  const electionUs = model.tickUs * model.electionTimeoutTicks;

  const state = {
    fromUs: 0,
    toUs: Math.max(model.endUs, 1),
    nodes: new Set(model.nodes.map((_, i) => i)),
    kinds: new Set(kinds),
    faultKinds: new Set(faultKinds),
    answers: true,
    pinned: null,
  };
  const drawn = { lanes: 0, arrows: 0, lost: 0, undelivered: 0, aggregated: 0, roles: 0, faults: 0, list: [] };

  const canvas = document.getElementById('diagram');
  const wrap = document.getElementById('diagram-wrap');
  const labels = document.getElementById('lane-labels');
  const detail = document.getElementById('detail');
  const marker = document.getElementById('violation-marker');
  const ctx = canvas.getContext('2d');

  function visibleNodes() {
    return model.nodes.map((_, i) => i).filter((i) => state.nodes.has(i));
  }
  function laneIndex() {
    const index = new Map();
    visibleNodes().forEach((node, row) => index.set(node, row));
    return index;
  }
  function laneY(row) {
    return AXIS_HEIGHT_PX + row * LANE_HEIGHT_PX + LANE_HEIGHT_PX / 2;
  }
  function widthPx() {
    return wrap.clientWidth - LABEL_WIDTH_PX;
  }
  function xOf(us) {
    return LABEL_WIDTH_PX + ((us - state.fromUs) / (state.toUs - state.fromUs)) * widthPx();
  }
  function usOf(x) {
    return state.fromUs + ((x - LABEL_WIDTH_PX) / widthPx()) * (state.toUs - state.fromUs);
  }
  /** wallClock: a replayed recording's time as UTC wall-clock time of day (model.wallStartMs is its zero). */
  function wallClock(us) {
    return new Date(model.wallStartMs + us / 1000).toISOString().slice(11, 23);
  }
  function fmtMs(us) {
    if (model.wallStartMs !== null && model.wallStartMs !== undefined) return wallClock(us) + ' UTC';
    return (us / 1000).toFixed(us < 10_000_000 ? 1 : 0) + ' ms';
  }

  /** messageVisible is the filter the tests replicate: both lanes shown, kind on, overlapping the view. */
  function messageVisible(m) {
    if (!state.nodes.has(m.from) || !state.nodes.has(m.to)) return false;
    if (!state.kinds.has(m.kind)) return false;
    if (m.answer && !state.answers) return false;
    const endUs = m.atUs >= 0 ? m.atUs : m.sentUs;
    return m.sentUs <= state.toUs && endUs >= state.fromUs;
  }

  function firstIndexAtOrAfter(us) {
    let lo = 0;
    let hi = messages.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (messages[mid].sentUs < us) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  function draw() {
    const rows = laneIndex();
    const heightPx = AXIS_HEIGHT_PX + Math.max(1, rows.size) * LANE_HEIGHT_PX + 8;
    const ratio = devicePixelRatio || 1;
    canvas.style.height = heightPx + 'px';
    canvas.style.width = wrap.clientWidth + 'px';
    canvas.width = Math.round(wrap.clientWidth * ratio);
    canvas.height = Math.round(heightPx * ratio);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, wrap.clientWidth, heightPx);
    drawn.list = [];
    drawAxis(heightPx);
    drawLanes(rows);
    drawFaults(rows, heightPx);
    drawMessages(rows);
    drawFailure(rows, heightPx);
    canvas.dataset.lanes = String(drawn.lanes);
    canvas.dataset.arrows = String(drawn.arrows);
    canvas.dataset.lost = String(drawn.lost);
    canvas.dataset.aggregated = String(drawn.aggregated);
    canvas.dataset.fromUs = String(Math.round(state.fromUs));
    canvas.dataset.toUs = String(Math.round(state.toUs));
    document.getElementById('range').textContent =
      `${fmtMs(state.fromUs)} – ${fmtMs(state.toUs)}  ·  ${drawn.arrows} arrows` +
      (drawn.aggregated > 0 ? ` (+${drawn.aggregated} heartbeats as bars)` : '');
    renderLabels(rows);
  }

  function drawAxis(heightPx) {
    const spanUs = state.toUs - state.fromUs;
    const steps = [1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7];
    const stepUs = steps.find((s) => (s / spanUs) * widthPx() > 90) || 1e7;
    ctx.font = '11px sans-serif';
    ctx.fillStyle = '#444';
    ctx.strokeStyle = '#e6e6e6';
    ctx.lineWidth = 1;
    for (let t = Math.ceil(state.fromUs / stepUs) * stepUs; t <= state.toUs; t += stepUs) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, AXIS_HEIGHT_PX - 6);
      ctx.lineTo(x, heightPx);
      ctx.stroke();
      ctx.fillText(
        model.wallStartMs !== null && model.wallStartMs !== undefined
          ? wallClock(t)
          : t >= 1e6 && stepUs >= 1e5
            ? (t / 1e6).toFixed(stepUs >= 1e6 ? 0 : 1) + ' s'
            : (t / 1e3).toFixed(0) + ' ms',
        x + 3,
        14,
      );
    }
  }

  function drawLanes(rows) {
    drawn.lanes = 0;
    drawn.roles = 0;
    for (const [node, row] of rows) {
      const y = laneY(row);
      ctx.strokeStyle = '#bbb';
      ctx.beginPath();
      ctx.moveTo(LABEL_WIDTH_PX, y + 0.5);
      ctx.lineTo(wrap.clientWidth, y + 0.5);
      ctx.stroke();
      drawn.lanes++;
      void node;
    }
    const half = LANE_HEIGHT_PX * 0.22;
    ctx.font = '10px sans-serif';
    for (const r of model.roles) {
      const row = rows.get(r.node);
      if (row === undefined || r.toUs < state.fromUs || r.fromUs > state.toUs) continue;
      const x0 = Math.max(xOf(r.fromUs), LABEL_WIDTH_PX);
      const x1 = Math.min(xOf(r.toUs), wrap.clientWidth);
      const y = laneY(row);
      ctx.fillStyle = ROLE_COLORS[r.role] || '#ddd';
      ctx.fillRect(x0, y - half, Math.max(1, x1 - x0), half * 2);
      drawn.roles++;
      drawn.list.push({ type: 'role', x0, x1, y0: y - half, y1: y + half, item: r });
      if (x1 - x0 > 26) {
        ctx.fillStyle = r.role === 'down' ? '#fff' : '#222';
        ctx.fillText((r.role === 'down' ? 'down ' : '') + 't' + r.term, x0 + 3, y + 4);
      }
    }
  }

  function drawFaults(rows, heightPx) {
    drawn.faults = 0;
    for (const f of model.faults) {
      if (!state.faultKinds.has(f.kind)) continue;
      if (f.toUs < state.fromUs || f.fromUs > state.toUs) continue;
      const x0 = xOf(f.fromUs);
      const x1 = Math.max(xOf(f.toUs), x0 + 2);
      if (f.fromUs === f.toUs || f.nodes.length === 0) {
        // A point: a marker on its lanes (or across all of them).
        ctx.strokeStyle = f.kind === 'join' ? '#2b8a3e' : f.kind === 'foreign' ? '#c2255c' : '#555';
        ctx.setLineDash([3, 3]);
        const targets = f.nodes.filter((n) => rows.has(n));
        const y0 = targets.length ? laneY(rows.get(targets[0])) - LANE_HEIGHT_PX / 2 : AXIS_HEIGHT_PX;
        const y1 = targets.length ? laneY(rows.get(targets[targets.length - 1])) + LANE_HEIGHT_PX / 2 : heightPx;
        ctx.beginPath();
        ctx.moveTo(x0 + 0.5, y0);
        ctx.lineTo(x0 + 0.5, y1);
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = '#333';
        ctx.font = '10px sans-serif';
        ctx.fillText(f.kind, x0 + 3, y0 + 10);
        drawn.list.push({ type: 'fault', x0: x0 - 3, x1: x0 + 3, y0, y1, item: f });
        drawn.faults++;
        continue;
      }
      const lanes = f.kind === 'clog' ? [f.nodes[0]] : f.nodes;
      for (const n of lanes) {
        const row = rows.get(n);
        if (row === undefined) continue;
        const y = laneY(row);
        ctx.fillStyle = FAULT_COLORS[f.kind] || 'rgba(0,0,0,0.1)';
        ctx.fillRect(x0, y - LANE_HEIGHT_PX / 2 + 2, x1 - x0, LANE_HEIGHT_PX - 4);
        ctx.fillStyle = '#600';
        ctx.font = '10px sans-serif';
        if (x1 - x0 > 40)
          ctx.fillText(f.label.slice(0, Math.floor((x1 - x0) / 6)), Math.max(x0, 0) + 3, y - LANE_HEIGHT_PX / 2 + 12);
        drawn.list.push({ type: 'fault', x0, x1, y0: y - LANE_HEIGHT_PX / 2, y1: y + LANE_HEIGHT_PX / 2, item: f });
      }
      drawn.faults++;
    }
  }

  function drawMessages(rows) {
    const start = firstIndexAtOrAfter(state.fromUs - maxFlightUs);
    const end = firstIndexAtOrAfter(state.toUs + 1);
    const visible = [];
    for (let i = start; i < end; i++) if (messageVisible(messages[i])) visible.push(messages[i]);
    const aggregate = visible.length > ARROW_BUDGET;
    const heads = visible.length <= HEAD_BUDGET;
    drawn.arrows = 0;
    drawn.lost = 0;
    drawn.undelivered = 0;
    drawn.aggregated = 0;
    const bars = new Map();
    ctx.lineWidth = 1;
    for (const m of visible) {
      const y0 = laneY(rows.get(m.from));
      const y1 = laneY(rows.get(m.to));
      const x0 = xOf(m.sentUs);
      if (aggregate && m.kind === 'Heartbeat') {
        // Zoomed out: a heartbeat is a tick in a density bar on its sender's lane.
        const key = rows.get(m.from) * 1e6 + Math.floor(x0 / 3);
        bars.set(key, (bars.get(key) || 0) + 1);
        drawn.aggregated++;
        continue;
      }
      const color = KIND_COLORS[m.kind] || '#666';
      ctx.strokeStyle = color;
      ctx.globalAlpha = m.answer ? 0.45 : 0.9;
      let x1;
      let yEnd;
      if (m.fate === 'lost') {
        x1 = x0 + 12;
        yEnd = y0 + (y1 - y0) * 0.3;
      } else if (m.fate === 'undelivered' && m.atUs > model.endUs) {
        // Still in flight when the run ended: cut at the end.
        const part = (model.endUs - m.sentUs) / Math.max(1, m.atUs - m.sentUs);
        x1 = xOf(model.endUs);
        yEnd = y0 + (y1 - y0) * part;
      } else {
        x1 = xOf(m.atUs);
        yEnd = y1;
      }
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      ctx.lineTo(x1, yEnd);
      ctx.stroke();
      if (m.fate !== 'delivered') {
        ctx.globalAlpha = 1;
        ctx.strokeStyle = m.fate === 'lost' ? '#e03131' : '#777';
        ctx.beginPath();
        ctx.moveTo(x1 - 3, yEnd - 3);
        ctx.lineTo(x1 + 3, yEnd + 3);
        ctx.moveTo(x1 + 3, yEnd - 3);
        ctx.lineTo(x1 - 3, yEnd + 3);
        ctx.stroke();
        if (m.fate === 'lost') drawn.lost++;
        else drawn.undelivered++;
      } else if (heads) {
        const angle = Math.atan2(yEnd - y0, x1 - x0);
        ctx.fillStyle = color;
        ctx.beginPath();
        ctx.moveTo(x1, yEnd);
        ctx.lineTo(x1 - 6 * Math.cos(angle - 0.4), yEnd - 6 * Math.sin(angle - 0.4));
        ctx.lineTo(x1 - 6 * Math.cos(angle + 0.4), yEnd - 6 * Math.sin(angle + 0.4));
        ctx.fill();
      }
      ctx.globalAlpha = 1;
      drawn.arrows++;
      drawn.list.push({ type: 'message', ax: x0, ay: y0, bx: x1, by: yEnd, item: m });
    }
    ctx.fillStyle = 'rgba(116,169,207,0.7)';
    for (const [key, count] of bars) {
      const row = Math.floor(key / 1e6);
      const x = (key % 1e6) * 3;
      const h = Math.min(LANE_HEIGHT_PX / 2 - 4, 3 + count * 2);
      ctx.fillRect(x, laneY(row) - LANE_HEIGHT_PX / 2 + 2, 2, h);
    }
  }

  function drawFailure(rows, heightPx) {
    const f = model.failure;
    if (!f) {
      marker.style.display = 'none';
      return;
    }
    const x = xOf(f.atUs);
    const inView = f.atUs >= state.fromUs && f.atUs <= state.toUs;
    if (inView) {
      ctx.strokeStyle = '#e03131';
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.moveTo(x, AXIS_HEIGHT_PX);
      ctx.lineTo(x, heightPx);
      ctx.stroke();
      ctx.lineWidth = 1;
    }
    const row = rows.get(f.node);
    const y = row === undefined ? AXIS_HEIGHT_PX + 4 : laneY(row) - 10;
    marker.style.display = 'block';
    marker.style.left =
      Math.min(Math.max(x - marker.offsetWidth / 2, 0), wrap.clientWidth - marker.offsetWidth - 2) + 'px';
    marker.style.top = y + 'px';
    marker.classList.toggle('offscreen', !inView);
  }

  function renderLabels(rows) {
    labels.innerHTML = '';
    for (const [node, row] of rows) {
      const div = document.createElement('div');
      div.className = 'lane';
      div.dataset.node = String(node);
      div.textContent = model.nodes[node];
      div.style.top = laneY(row) - 9 + 'px';
      labels.appendChild(div);
    }
    labels.style.height = canvas.style.height;
  }

  // ---- detail panel ----

  function distanceToSegment(px, py, ax, ay, bx, by) {
    const dx = bx - ax;
    const dy = by - ay;
    const len = dx * dx + dy * dy;
    const t = len === 0 ? 0 : Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / len));
    return Math.hypot(px - (ax + t * dx), py - (ay + t * dy));
  }

  function hit(px, py) {
    let best = null;
    let bestDistance = 6;
    for (const d of drawn.list) {
      if (d.type !== 'message') continue;
      const distance = distanceToSegment(px, py, d.ax, d.ay, d.bx, d.by);
      if (distance < bestDistance) {
        best = d;
        bestDistance = distance;
      }
    }
    if (best) return best;
    // The role bar is the lane's middle; a fault band fills the rest of the lane's height.
    for (const d of drawn.list)
      if (d.type === 'role' && px >= d.x0 && px <= d.x1 + 1 && py >= d.y0 && py <= d.y1) return d;
    for (const d of drawn.list)
      if (d.type === 'fault' && px >= d.x0 && px <= d.x1 && py >= d.y0 && py <= d.y1) return d;
    return null;
  }

  function stepsNear(node, us) {
    const windowUs = ((state.toUs - state.fromUs) / widthPx()) * 8;
    return model.steps.filter((s) => s[1] === node && Math.abs(s[0] - us) <= windowUs).slice(0, 12);
  }

  function esc(text) {
    return String(text).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  }

  function describe(d, px) {
    if (!d) return '<p class="hint">Hover or click an arrow, a lane or a fault band.</p>';
    if (d.type === 'message') {
      const m = d.item;
      return (
        `<h3>${esc(m.kind)} ${m.answer ? 'answer' : 'request'}${m.copy ? ' (copy)' : ''}</h3>` +
        `<p>${esc(model.nodes[m.from])} → ${esc(model.nodes[m.to])}: <code>${esc(m.text)}</code></p>` +
        `<p>sent ${fmtMs(m.sentUs)}; ${m.fate === 'delivered' ? 'delivered ' + fmtMs(m.atUs) + ' (' + ((m.atUs - m.sentUs) / 1000).toFixed(1) + ' ms)' : m.fate === 'lost' ? '<b class="bad">lost on the network</b>' : '<b>arrived ' + fmtMs(m.atUs) + ', no engine took it</b>'}</p>`
      );
    }
    if (d.type === 'fault') {
      const f = d.item;
      return `<h3>fault: ${esc(f.kind)}</h3><p><code>${esc(f.label)}</code></p><p>${fmtMs(f.fromUs)}${f.toUs > f.fromUs ? ' – ' + fmtMs(f.toUs) : ''}</p>`;
    }
    const r = d.item;
    const steps = stepsNear(r.node, usOf(px));
    return (
      `<h3>${esc(model.nodes[r.node])}: ${esc(r.role)}, term ${r.term}</h3><p>${fmtMs(r.fromUs)} – ${fmtMs(r.toUs)}</p>` +
      (steps.length
        ? '<ul>' +
          steps.map((s) => `<li>${fmtMs(s[0])}: <code>${esc(s[2])}</code> → <code>${esc(s[3])}</code></li>`).join('') +
          '</ul>'
        : '')
    );
  }

  function pointer(event) {
    const rect = canvas.getBoundingClientRect();
    return [event.clientX - rect.left, event.clientY - rect.top];
  }

  let drag = null;
  canvas.addEventListener('mousemove', (event) => {
    const [px, py] = pointer(event);
    if (drag) {
      const shiftUs = ((drag.x - px) / widthPx()) * (drag.toUs - drag.fromUs);
      setView(drag.fromUs + shiftUs, drag.toUs + shiftUs);
      drag.moved = true;
      return;
    }
    if (state.pinned === null) detail.innerHTML = describe(hit(px, py), px);
  });
  canvas.addEventListener('mousedown', (event) => {
    drag = { x: pointer(event)[0], fromUs: state.fromUs, toUs: state.toUs, moved: false };
  });
  window.addEventListener('mouseup', () => {
    setTimeout(() => {
      drag = null;
    }, 0);
  });
  canvas.addEventListener('click', (event) => {
    if (drag && drag.moved) return;
    const [px, py] = pointer(event);
    const d = hit(px, py);
    state.pinned = d;
    detail.innerHTML = describe(d, px) + (d ? '<p class="hint">pinned: click empty space to unpin</p>' : '');
  });
  canvas.addEventListener(
    'wheel',
    (event) => {
      event.preventDefault();
      const [px] = pointer(event);
      zoom(event.deltaY < 0 ? 1 / 1.25 : 1.25, usOf(px));
    },
    { passive: false },
  );

  // ---- view changes ----

  let pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      draw();
    });
  }
  function setView(fromUs, toUs) {
    const spanUs = Math.max(toUs - fromUs, 200);
    state.fromUs = fromUs;
    state.toUs = fromUs + spanUs;
    redraw();
  }
  function zoom(factor, centerUs) {
    const c = centerUs === undefined ? (state.fromUs + state.toUs) / 2 : centerUs;
    setView(c - (c - state.fromUs) * factor, c + (state.toUs - c) * factor);
  }
  function fit() {
    setView(0, Math.max(model.endUs, 1));
  }
  /**
   * toViolation frames the failure with the messages that led to it: back to the VIOLATION_CONTEXT_MESSAGES-th
   * message before it, at least 20 ms and at most three election timeouts.
   */
  const VIOLATION_CONTEXT_MESSAGES = 60;
  function toViolation() {
    if (!model.failure) return;
    const at = model.failure.atUs;
    const before = firstIndexAtOrAfter(at + 1);
    const earliest = messages[Math.max(0, before - VIOLATION_CONTEXT_MESSAGES)];
    const spanUs = Math.min(3 * electionUs, Math.max(20_000, earliest ? at - earliest.sentUs : 0));
    setView(Math.max(0, at - spanUs), at + spanUs * 0.2);
  }

  document.getElementById('zoom-in').addEventListener('click', () => zoom(0.5));
  document.getElementById('zoom-out').addEventListener('click', () => zoom(2));
  document.getElementById('zoom-fit').addEventListener('click', fit);
  const goViolation = document.getElementById('zoom-violation');
  if (model.failure) goViolation.addEventListener('click', toViolation);
  else goViolation.disabled = true;
  marker.addEventListener('click', toViolation);

  function checkbox(container, name, value, checked, onChange, color) {
    const label = document.createElement('label');
    const input = document.createElement('input');
    input.type = 'checkbox';
    input.checked = checked;
    input.name = name;
    input.value = value;
    input.addEventListener('change', () => {
      onChange(input.checked);
      redraw();
    });
    label.appendChild(input);
    if (color) {
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = color;
      label.appendChild(swatch);
    }
    label.appendChild(document.createTextNode(value));
    container.appendChild(label);
  }
  const toggle = (set, key) => (on) => (on ? set.add(key) : set.delete(key));
  const nodeFilter = document.getElementById('filter-nodes');
  model.nodes.forEach((name, i) => checkbox(nodeFilter, 'node', name, true, toggle(state.nodes, i)));
  const kindFilter = document.getElementById('filter-kinds');
  kinds.forEach((kind) =>
    checkbox(kindFilter, 'kind', kind, true, toggle(state.kinds, kind), KIND_COLORS[kind] || '#666'),
  );
  checkbox(kindFilter, 'answers', 'answers', true, (on) => {
    state.answers = on;
  });
  const faultFilter = document.getElementById('filter-faults');
  faultKinds.forEach((kind) =>
    checkbox(faultFilter, 'fault', kind, true, toggle(state.faultKinds, kind), FAULT_COLORS[kind]),
  );
  const legend = document.getElementById('legend');
  for (const [role, color] of Object.entries(ROLE_COLORS)) {
    const span = document.createElement('span');
    span.innerHTML = `<span class="swatch" style="background:${color}"></span>${role}`;
    legend.appendChild(span);
  }

  window.addEventListener('resize', redraw);
  window.simView = {
    model,
    state,
    drawn,
    setView,
    zoom,
    fit,
    toViolation,
    /** visibleMessageCount counts messages that pass the filters in the current view (what arrows + bars show). */
    visibleMessageCount: () => messages.filter(messageVisible).length,
    draw,
  };
  if (model.failure) toViolation();
  else draw();
  draw();
})();
