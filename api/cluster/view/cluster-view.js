// The /cluster page's script (served as /cluster-view/cluster-view.js). Like the album page, it asks for the
// key once and keeps it in sessionStorage (this tab only, never in a URL, a cookie or a log). It follows
// GET /cluster/events (SSE read through fetch, since EventSource cannot send headers): `cluster.view` entries
// redraw the members, `cluster.event` entries add to the list of recent events. On a dropped stream it
// reconnects with Last-Event-ID. No framework: the page is one table and one list.
/* global document */
'use strict';

(() => {
  const storageKey = 'svc.clusterView.apiKey';
  const reconnectsMax = 1000;
  const reconnectDelayMsMax = 30_000;
  /** eventsShownMax bounds the list of events on the page (the node keeps its own bounded ring). */
  const eventsShownMax = 500;
  /** lagGaugeFullSeqs is the lag, in entries, at which a gauge is full. */
  const lagGaugeFullSeqs = 1000;
  const $ = (id) => document.getElementById(id);
  let apiKey = sessionStorage.getItem(storageKey);

  const setStatus = (text) => {
    $('status').textContent = text;
  };

  function askForKey(message) {
    sessionStorage.removeItem(storageKey);
    apiKey = null;
    $('cluster').classList.add('hidden');
    $('key-form').classList.remove('hidden');
    setStatus(message);
  }

  $('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const value = $('key-input').value.trim();
    $('key-input').value = '';
    if (!value) return;
    sessionStorage.setItem(storageKey, value);
    apiKey = value;
    start();
  });
  $('forget-key').addEventListener('click', () => askForKey('The key was removed from this tab.'));

  function el(tag, attributes = {}, children = []) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      if (name === 'text') node.textContent = value;
      else node.setAttribute(name, value);
    }
    for (const child of children) node.append(child);
    return node;
  }

  const clock = (ms) => new Date(ms).toISOString().slice(11, 23);
  const figure = (value) => (value === null || value === undefined ? '?' : String(value));

  function gauge(lag) {
    if (lag === null || lag === undefined) return el('span', { class: 'unknown', text: '?' });
    const meter = el('meter', {
      min: '0',
      max: String(lagGaugeFullSeqs),
      low: String(lagGaugeFullSeqs / 10),
      high: String(lagGaugeFullSeqs / 2),
      optimum: '0',
      value: String(Math.min(lag, lagGaugeFullSeqs)),
    });
    return el('span', { class: 'gauge' }, [meter, el('span', { text: ` ${lag}` })]);
  }

  function memberRow(member, view) {
    const roleText = member.role === null ? 'unknown' : member.role;
    const ready =
      member.ready === null
        ? '?'
        : `${member.ready ? 'ready' : 'not ready'}${member.healthy === false ? ', unhealthy' : ''}`;
    const figures = member.self
      ? 'this node'
      : member.reachable
        ? `${((view.atMs - member.figuresAtMs) / 1000).toFixed(1)} s old`
        : member.error || 'not read yet';
    const version =
      member.buildVersion === null
        ? '?'
        : `${member.buildVersion}${member.buildVersionFrom === 'heartbeat' ? ' (heartbeat)' : ''}`;
    const name = `${member.name}${member.leader ? ' ★' : ''}${member.membership === 'learner' ? ' (learner)' : ''}`;
    return el(
      'tr',
      {
        class: `member${member.leader ? ' leader' : ''}${member.reachable ? '' : ' unreachable'}`,
        'data-name': member.name,
        'data-role': roleText,
      },
      [
        el('td', { text: name, title: `${member.httpAddr} · ${member.grpcAddr}` }),
        el('td', { class: 'role', text: roleText }),
        el('td', { text: figure(member.term) }),
        el('td', { text: figure(member.commitSeq) }),
        el('td', { text: figure(member.appliedSeq) }),
        el('td', {}, [gauge(member.applyLag)]),
        el('td', {}, [gauge(member.matchLag)]),
        el('td', { class: member.ready ? 'ok' : 'bad', text: ready }),
        el('td', { text: version }),
        el('td', { class: 'figures', text: figures }),
      ],
    );
  }

  function renderView(view) {
    $('answered-by').textContent = view.answeredBy.name ? `as seen by ${view.answeredBy.name}` : '';
    const leader = $('leader');
    const leaderId = view.leader ? String(view.leader.id) : '0';
    if (leader.dataset.leaderId !== leaderId) {
      leader.dataset.leaderId = leaderId;
      leader.textContent = view.leader ? view.leader.name : 'none known';
      // When the page showed this leader (this browser's clock), for a reader (or a test) to compare with the
      // node's event time.
      leader.dataset.shownAtMs = String(Date.now());
    }
    $('term').textContent = String(view.term);
    $('membership-version').textContent = String(view.membershipVersion);
    $('view-at').textContent = clock(view.atMs);
    $('member-rows').replaceChildren(...view.members.map((member) => memberRow(member, view)));
    $('event-count').textContent = `(the node keeps the last ${view.eventCountMax})`;
  }

  function addEvent(event) {
    const item = el(
      'li',
      {
        class: `event ${event.kind}`,
        'data-kind': event.kind,
        'data-seq': String(event.seq),
        'data-at-ms': String(event.atMs),
        'data-received-at-ms': String(Date.now()),
      },
      [
        el('time', { text: clock(event.atMs) }),
        el('span', { class: 'kind', text: event.kind }),
        el('span', { text: event.summary }),
      ],
    );
    if (event.kind === 'election') item.dataset.leaderName = event.leaderName || '';
    const list = $('events');
    if (list.querySelector(`[data-seq="${event.seq}"]`)) return;
    list.prepend(item);
    while (list.children.length > eventsShownMax) list.lastElementChild.remove();
  }

  function handleBlock(block, state) {
    let event = '';
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) state.lastEventId = line.slice(4);
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    if (!event || !data) return;
    let payload;
    try {
      payload = JSON.parse(data);
    } catch {
      return;
    }
    if (event === 'cluster.view') renderView(payload);
    else if (event === 'cluster.event') addEvent(payload);
  }

  async function followEvents(owner) {
    const state = { lastEventId: null };
    let failures = 0;
    for (let connection = 0; connection < reconnectsMax && apiKey === owner; connection++) {
      try {
        const headers = { 'X-API-Key': apiKey, Accept: 'text/event-stream' };
        if (state.lastEventId) headers['Last-Event-ID'] = state.lastEventId;
        const response = await fetch('/cluster/events', { headers, cache: 'no-store' });
        if (response.status === 401 || response.status === 403) {
          const body = await response.json().catch(() => ({}));
          askForKey(`The key was refused (${body.code || response.status}). Enter an admin key.`);
          return;
        }
        if (!response.ok || !response.body) throw new Error(`events answered ${response.status}`);
        setStatus('Live: following the cluster.');
        failures = 0;
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
            handleBlock(buffer.slice(0, cut), state);
            buffer = buffer.slice(cut + 2);
          }
        }
      } catch {
        // A dropped connection: reconnect below.
      }
      failures++;
      setStatus('Reconnecting…');
      await new Promise((resolve) => setTimeout(resolve, Math.min(reconnectDelayMsMax, 250 * 2 ** failures)));
    }
  }

  function start() {
    $('key-form').classList.add('hidden');
    $('cluster').classList.remove('hidden');
    setStatus('Connecting…');
    followEvents(apiKey);
  }

  if (apiKey) start();
  else askForKey('Enter an admin API key to view the cluster. It stays in this tab only.');
})();
