// On every page: install the service worker (the pages a person needs first then open with no signal),
// and send what the outbox holds, now, when the signal returns, and when the service worker's Background
// Sync did. Each settled publication is announced as the 'directaid:enviada' event: the form of its page
// shows it (and cancels the event); any other page says it in its #bandeja notice.
(function () {
  'use strict';
  var sw = navigator.serviceWorker;
  if (sw && window.isSecureContext) sw.register('/sw.js').catch(function () { /* the site works without it */ });
  var box = self.directaidOutbox, note = document.getElementById('bandeja');
  if (!box || !note) return;

  function announce(item, data) {
    var ev = new CustomEvent('directaid:enviada', { cancelable: true, detail: { item: item, data: data } });
    if (!document.dispatchEvent(ev)) return;
    var a = document.createElement('a');
    if (item.rejected) {
      note.textContent = note.getAttribute('data-rechazada') + ' ';
      a.href = item.action;
      a.textContent = note.getAttribute('data-corregir');
    } else {
      note.textContent = note.getAttribute('data-publicada') + ' ';
      a.href = data.publicUrl;
      a.textContent = data.publicUrl;
    }
    note.appendChild(a);
    note.hidden = false;
  }
  // While something waits, try again every 15 s too: a signal that comes back weak may fail the first
  // try after the 'online' event (a try with no signal at all fails at once, at no cost).
  var timer = 0;
  function flush() {
    clearTimeout(timer);
    box.flush(announce).then(function (n) {
      if (!n) return;
      if (note.hidden) {
        note.textContent = note.getAttribute('data-pendiente');
        note.hidden = false;
      }
      timer = setTimeout(flush, 15000);
    });
  }
  if (sw) sw.addEventListener('message', function (ev) {
    if (ev.data && ev.data.type === 'directaid:enviada') announce(ev.data.item, ev.data.data);
  });
  window.addEventListener('online', flush);
  flush();
})();

// The home page lists «Mis publicaciones en este teléfono»: those whose publisher chose, on the
// confirmation, to keep them here (localStorage, never sent anywhere).
(function () {
  'use strict';
  var box = document.getElementById('mias'), list = document.getElementById('mias-lista');
  if (!box || !list || !window.localStorage) return;
  var mine;
  try { mine = JSON.parse(localStorage.getItem('directaid:mias') || '[]'); } catch (e) { return; }
  if (!Array.isArray(mine) || !mine.length) return;
  mine.forEach(function (m) {
    if (!m || typeof m.publicUrl !== 'string' || m.publicUrl.indexOf(location.origin + '/') !== 0) return;
    var li = document.createElement('li'), a = document.createElement('a');
    a.href = m.publicUrl;
    a.textContent = m.title || m.publicUrl;
    li.appendChild(a);
    if (typeof m.manageUrl === 'string' && m.manageUrl.indexOf(location.origin + '/gestionar#') === 0) {
      var g = document.createElement('a');
      g.href = m.manageUrl;
      g.textContent = box.getAttribute('data-gestionar');
      li.appendChild(document.createTextNode(' · '));
      li.appendChild(g);
    }
    list.appendChild(li);
  });
  box.hidden = !list.firstChild;
})();
