// The /cluster page's script (served as /cluster-view/cluster-view.js, after the page kit,
// api/view-kit/page-kit.js, which keeps the admin key and reads event streams). It follows GET /cluster/events:
// `cluster.view` entries redraw the members, `cluster.event` entries add to the list of recent events. No
// framework: the page is one table and one list.
/* global window */
'use strict';

(() => {
  const { $, el, keySession, followEvents } = window.svcPageKit;
  /** eventsShownMax bounds the list of events on the page (the node keeps its own bounded ring). */
  const eventsShownMax = 500;
  /** lagGaugeFullSeqs is the lag, in entries, at which a gauge is full. */
  const lagGaugeFullSeqs = 1000;
  const session = keySession({
    storageKey: 'svc.clusterView.apiKey',
    mainId: 'cluster',
    refusedText: 'Enter an admin key.',
    start,
  });

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

  function start() {
    session.show();
    session.setStatus('Connecting…');
    followEvents(session, '/cluster/events', {
      onOpen: async () => session.setStatus('Live: following the cluster.'),
      onEvent: (event, payload) => {
        if (event === 'cluster.view') renderView(payload);
        else if (event === 'cluster.event') addEvent(payload);
      },
    });
  }

  if (session.key) start();
  else session.askForKey('Enter an admin API key to view the cluster. It stays in this tab only.');
})();
