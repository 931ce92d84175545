// The album page's script (served as /album-view/album-view.js). The page asks for the API key once and
// keeps it in sessionStorage: this tab only, gone when the tab closes, never in a URL, a cookie or a log.
// It reads the album with the key in X-API-Key, follows GET /events (SSE read through fetch, since
// EventSource cannot send headers) and reloads the album whenever an event names it; images are fetched
// with the key and shown from blob: URLs. On a dropped stream it reconnects with Last-Event-ID.
/* global document, window */
'use strict';

(() => {
  const storageKey = 'svc.albumView.apiKey';
  const reconnectsMax = 1000;
  const reconnectDelayMsMax = 30_000;
  const albumId = document.body.dataset.albumId;
  const $ = (id) => document.getElementById(id);
  const objectUrls = new Map();
  let apiKey = sessionStorage.getItem(storageKey);
  let refreshing = null;
  let refreshAgain = false;
  let albumMissing = false;

  const setStatus = (text) => {
    $('status').textContent = text;
  };

  function askForKey(message) {
    sessionStorage.removeItem(storageKey);
    apiKey = null;
    $('album').classList.add('hidden');
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

  async function api(path, headers = {}) {
    const response = await fetch(path, { headers: { 'X-API-Key': apiKey, ...headers }, cache: 'no-store' });
    if (response.status === 401 || response.status === 403) {
      const body = await response.json().catch(() => ({}));
      askForKey(`The key was refused (${body.code || response.status}). Enter a valid key.`);
      throw new Error('unauthorized');
    }
    return response;
  }

  function el(tag, attributes = {}, children = []) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      if (name === 'text') node.textContent = value;
      else node.setAttribute(name, value);
    }
    for (const child of children) node.append(child);
    return node;
  }

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
          setStatus('No such album for this key.');
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
    if (payload.albumId === albumId) {
      $('last-event').textContent = event;
      refresh();
    }
  }

  async function followEvents(owner) {
    const state = { lastEventId: null };
    let failures = 0;
    for (let connection = 0; connection < reconnectsMax && apiKey === owner; connection++) {
      try {
        const headers = { Accept: 'text/event-stream' };
        if (state.lastEventId) headers['Last-Event-ID'] = state.lastEventId;
        const response = await api('/events', headers);
        if (!response.ok || !response.body) throw new Error(`events answered ${response.status}`);
        // Live only once the album is drawn: a reader (or a test) that sees "Live" sees the current album.
        await refresh();
        if (!albumMissing) setStatus('Live: following events.');
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
      } catch (error) {
        if (error.message === 'unauthorized') return;
      }
      failures++;
      setStatus('Reconnecting…');
      await new Promise((resolve) => setTimeout(resolve, Math.min(reconnectDelayMsMax, 250 * 2 ** failures)));
    }
  }

  function start() {
    $('key-form').classList.add('hidden');
    $('album').classList.remove('hidden');
    setStatus('Connecting…');
    followEvents(apiKey);
  }

  if (apiKey) start();
  else askForKey('Enter an API key to view this album. It stays in this tab only.');
  window.addEventListener('pagehide', () => {
    for (const url of objectUrls.values()) URL.revokeObjectURL(url);
  });
})();
