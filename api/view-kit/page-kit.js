// What the API's pages share (the album page and /cluster; each serves this file beside its own script, which
// loads after it): the API key kept in the tab's sessionStorage (this tab only, gone when it closes, never in a
// URL, a cookie or a log) with the page's key form, keyed fetches, an element builder, and a Server-Sent Events
// stream read through fetch (EventSource cannot send headers) that reconnects with Last-Event-ID.
/* global document, window */
'use strict';

window.svcPageKit = (() => {
  const reconnectsMax = 1000;
  const reconnectDelayMsMax = 30_000;
  const $ = (id) => document.getElementById(id);

  function el(tag, attributes = {}, children = []) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      if (name === 'text') node.textContent = value;
      else node.setAttribute(name, value);
    }
    for (const child of children) node.append(child);
    return node;
  }

  /**
   * keySession wires the page's key form (#key-form, #key-input, #forget-key, #status) to the key kept under
   * storageKey; the page's content is #mainId, shown while there is a key. start runs once a key is entered.
   */
  function keySession({ storageKey, mainId, refusedText, start }) {
    const session = {
      key: sessionStorage.getItem(storageKey),
      setStatus(text) {
        $('status').textContent = text;
      },
      askForKey(message) {
        sessionStorage.removeItem(storageKey);
        session.key = null;
        $(mainId).classList.add('hidden');
        $('key-form').classList.remove('hidden');
        session.setStatus(message);
      },
      show() {
        $('key-form').classList.add('hidden');
        $(mainId).classList.remove('hidden');
      },
      /** fetch sends the key; a refused key (401, 403) sends the reader back to the form, and throws. */
      async fetch(path, headers = {}) {
        const response = await fetch(path, { headers: { 'X-API-Key': session.key, ...headers }, cache: 'no-store' });
        if (response.status === 401 || response.status === 403) {
          const body = await response.json().catch(() => ({}));
          session.askForKey(`The key was refused (${body.code || response.status}). ${refusedText}`);
          throw new Error('unauthorized');
        }
        return response;
      },
    };
    $('key-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const value = $('key-input').value.trim();
      $('key-input').value = '';
      if (!value) return;
      sessionStorage.setItem(storageKey, value);
      session.key = value;
      start();
    });
    $('forget-key').addEventListener('click', () => session.askForKey('The key was removed from this tab.'));
    return session;
  }

  /** eventOf reads one SSE block: its event name and JSON payload (null for a comment or a malformed block). */
  function eventOf(block, state) {
    let event = '';
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) state.lastEventId = line.slice(4);
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    if (!event || !data) return null;
    try {
      return { event, payload: JSON.parse(data) };
    } catch {
      return null;
    }
  }

  /**
   * followEvents reads the stream at path while the session keeps the key it started with: onOpen runs on each
   * connection (before its events), onEvent for each event; a dropped connection is retried with Last-Event-ID
   * after a growing pause, a refused key ends it (the form is shown).
   */
  async function followEvents(session, path, { onOpen, onEvent }) {
    const owner = session.key;
    const state = { lastEventId: null };
    let failures = 0;
    for (let connection = 0; connection < reconnectsMax && session.key === owner; connection++) {
      try {
        const headers = { Accept: 'text/event-stream' };
        if (state.lastEventId) headers['Last-Event-ID'] = state.lastEventId;
        const response = await session.fetch(path, headers);
        if (!response.ok || !response.body) throw new Error(`events answered ${response.status}`);
        await onOpen();
        failures = 0;
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
            const read = eventOf(buffer.slice(0, cut), state);
            buffer = buffer.slice(cut + 2);
            if (read) onEvent(read.event, read.payload);
          }
        }
      } catch (error) {
        if (error.message === 'unauthorized') return;
      }
      failures++;
      session.setStatus('Reconnecting…');
      await new Promise((resolve) => setTimeout(resolve, Math.min(reconnectDelayMsMax, 250 * 2 ** failures)));
    }
  }

  return { $, el, keySession, followEvents };
})();
