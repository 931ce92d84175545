// The album page's script (served as /album-view/album-view.js, after the page kit, api/view-kit/page-kit.js,
// which keeps the key and reads event streams). It reads the album with the key in X-API-Key, follows
// GET /events and reloads the album whenever an event names it; images are fetched with the key and shown from
// blob: URLs.
/* global document, window */
'use strict';

(() => {
  const { $, el, keySession, followEvents } = window.svcPageKit;
  const albumId = document.body.dataset.albumId;
  const objectUrls = new Map();
  let refreshing = null;
  let refreshAgain = false;
  let albumMissing = false;

  const session = keySession({
    storageKey: 'svc.albumView.apiKey',
    mainId: 'album',
    refusedText: 'Enter a valid key.',
    start,
  });
  const api = (path, headers) => session.fetch(path, headers);

  async function showImage(img, url) {
    if (img.dataset.src === url) return;
    img.dataset.src = url;
    let objectUrl = objectUrls.get(url);
    if (!objectUrl) {
      const response = await api(url);
      if (!response.ok) return;
      objectUrl = URL.createObjectURL(await response.blob());
      objectUrls.set(url, objectUrl);
    }
    img.src = objectUrl;
  }

  function card(title, status, imageUrl, details) {
    const frame = el('div', { class: 'frame' });
    if (imageUrl) {
      const img = el('img', { alt: title });
      frame.append(img);
      showImage(img, imageUrl).catch(() => undefined);
    }
    return el('div', { class: 'card', 'data-status': status }, [
      el('h2', {}, [el('span', { text: title }), el('span', { class: `badge ${status}`, text: status })]),
      frame,
      ...details,
    ]);
  }

  function render(album) {
    document.title = `${album.name || 'Album'} · ${album.id}`;
    $('title').textContent = album.name || `Album ${album.id}`;
    $('subject').textContent = album.subject;
    document.documentElement.style.setProperty('--aspect', `${album.width_px} / ${album.height_px}`);
    const anchor = album.anchor;
    const anchorCard = card(
      'Anchor',
      anchor.state,
      anchor.url,
      anchor.error ? [el('div', { class: 'error', text: anchor.error })] : [],
    );
    anchorCard.id = 'anchor';
    $('anchor-slot').replaceChildren(anchorCard);
    $('shots').replaceChildren(
      ...album.shots.map((shot) => {
        const d = shot.direction;
        const details = [
          el('div', {
            class: 'direction',
            text: `${d.framing} · ${d.angle} · ${d.lighting} · ${d.pose} · ${d.background}`,
          }),
        ];
        if (shot.error) details.push(el('div', { class: 'error', text: shot.error }));
        const node = card(`${shot.index + 1}. ${d.name}`, shot.status, shot.image_url, details);
        node.classList.add('shot');
        node.dataset.index = String(shot.index);
        return node;
      }),
    );
    const counts = album.shot_counts;
    $('counts').textContent =
      `${counts.complete} complete · ${counts.generating} generating · ${counts.pending} pending · ${counts.failed} failed`;
  }

  async function refresh() {
    if (refreshing) {
      refreshAgain = true;
      return refreshing;
    }
    refreshing = (async () => {
      do {
        refreshAgain = false;
        const response = await api(`/albums/${albumId}`);
        if (response.status === 404) {
          albumMissing = true;
          session.setStatus('No such album for this key.');
          return;
        }
        albumMissing = false;
        if (response.ok) render(await response.json());
      } while (refreshAgain);
    })()
      .catch(() => undefined)
      .finally(() => {
        refreshing = null;
      });
    return refreshing;
  }

  function start() {
    session.show();
    session.setStatus('Connecting…');
    followEvents(session, '/events', {
      onOpen: async () => {
        // Live only once the album is drawn: a reader (or a test) that sees "Live" sees the current album.
        await refresh();
        if (!albumMissing) session.setStatus('Live: following events.');
      },
      onEvent: (event, payload) => {
        if (payload.albumId !== albumId) return;
        $('last-event').textContent = event;
        refresh();
      },
    });
  }

  if (session.key) start();
  else session.askForKey('Enter an API key to view this album. It stays in this tab only.');
  window.addEventListener('pagehide', () => {
    for (const url of objectUrls.values()) URL.revokeObjectURL(url);
  });
})();
