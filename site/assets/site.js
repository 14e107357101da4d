// On every page: install the service worker (the pages a person needs first then open with no signal),
// and send what the outbox holds, now, when the signal returns, and when the service worker's Background
// Sync did. Each settled publication is announced as the 'directaid:enviada' event: the form of its page
// shows it (and cancels the event); any other page says it in its #bandeja notice. The manage link of a
// publication sent this way is kept on the phone until the person says they saved it (see collect).
(function () {
  'use strict';
  // colombiaTime writes an instant (ISO 8601) as the server's spanishDateTime does, in Colombia's time
  // (UTC−5 all year), with the month names of months; "" when it does not parse. The forms use it.
  window.colombiaTime = function (iso, months) {
    var t = iso ? Date.parse(iso) : NaN;
    if (isNaN(t)) return '';
    var d = new Date(t - 5 * 3600000), two = function (n) { return (n < 10 ? '0' : '') + n; };
    return d.getUTCDate() + ' de ' + months[d.getUTCMonth()] + ' de ' + d.getUTCFullYear() + ' a las ' +
      two(d.getUTCHours()) + ':' + two(d.getUTCMinutes()) + ' (hora de Colombia)';
  };
  var sw = navigator.serviceWorker;
  if (sw && window.isSecureContext) sw.register('/sw.js').catch(function () { /* the site works without it */ });
  // A form page opened from the phone's copy starts with the service worker's note «Sin señal al
  // abrirla…»; once the signal is back (or a saved publication went out) the form works as online, and
  // the note goes. Other pages keep it: what they show is still the copy.
  function signalBack() {
    var kept = document.getElementById('formulario') && document.querySelector('main > .guardada');
    if (kept) kept.parentNode.removeChild(kept);
  }
  window.addEventListener('online', signalBack);
  // serverAnswers resolves whether the server answers at all: a weak signal the phone still calls online
  // fails it. A HEAD of the home page (which the service worker does not answer), given 8 s. A form posted
  // with no answer would put the browser's error page in place of the page and of what was typed.
  window.serverAnswers = function () {
    var ctl = window.AbortController ? new AbortController() : null, timer = ctl && setTimeout(function () { ctl.abort(); }, 8000);
    return fetch('/', { method: 'HEAD', cache: 'no-store', signal: ctl && ctl.signal }).then(
      function () { clearTimeout(timer); return true; }, function () { clearTimeout(timer); return false; });
  };
  // The forms that post to the server and have no outbox («¿Puede ayudar?», the report, a response's
  // renewal), marked data-sin-senal: without an answer a form is not sent, and says so above itself, what
  // was typed still there.
  Array.prototype.forEach.call(document.querySelectorAll('form[data-sin-senal]'), function (f) {
    var said = null;
    f.addEventListener('submit', function (ev) {
      if (f.getAttribute('data-probado')) { f.removeAttribute('data-probado'); return; }
      ev.preventDefault();
      var submitter = ev.submitter;
      function hold() {
        if (!said) {
          said = document.createElement('p');
          said.className = 'errores sin-senal';
          said.setAttribute('role', 'alert');
          said.tabIndex = -1;
          f.parentNode.insertBefore(said, f);
        }
        said.textContent = f.getAttribute('data-sin-senal');
        said.focus();
      }
      if (navigator.onLine === false) { hold(); return; }
      window.serverAnswers().then(function (ok) {
        if (!ok) { hold(); return; }
        if (said) { said.parentNode.removeChild(said); said = null; }
        f.setAttribute('data-probado', '1');
        if (f.requestSubmit) { f.requestSubmit(submitter); return; }
        if (submitter && submitter.name) {
          var h = document.createElement('input');
          h.type = 'hidden'; h.name = submitter.name; h.value = submitter.value;
          f.appendChild(h);
        }
        f.submit();
      });
    });
  });
  var box = self.directaidOutbox, note = document.getElementById('bandeja');
  if (!box || !note) return;

  // The manage links of publications the outbox sent move from IndexedDB to localStorage, where they
  // stay until the person says they saved them: the home page and the form pages show them.
  var LINKS = 'directaid:enlaces-gestion';
  function links() {
    try { return JSON.parse(localStorage.getItem(LINKS)) || []; } catch (e) { return []; }
  }
  function setLinks(l) {
    try { localStorage.setItem(LINKS, JSON.stringify(l)); } catch (e) { /* shown this time only */ }
  }
  function collect() {
    return box.all().then(function (items) {
      var l = links(), done = items.filter(function (it) { return it.sent; });
      done.forEach(function (it) {
        var s = it.sent;
        if (s.manageUrl && !l.some(function (x) { return x.manageUrl === s.manageUrl; })) {
          l.push({ title: s.title, publicUrl: s.publicUrl, manageUrl: s.manageUrl });
        }
      });
      setLinks(l);
      return Promise.all(done.map(function (it) { return box.remove(it.externalId); }));
    });
  }
  function showLinks() {
    var old = document.getElementById('enlaces-gestion');
    if (old) old.parentNode.removeChild(old);
    var l = links();
    if (!l.length) return;
    var div = document.createElement('div');
    div.id = 'enlaces-gestion';
    div.className = 'aviso';
    l.forEach(function (x) {
      var p = document.createElement('p'), a = document.createElement('a'), b = document.createElement('button');
      p.textContent = note.getAttribute('data-gestion').replace('{titulo}', x.title || x.publicUrl) + ' ';
      a.href = x.manageUrl;
      a.textContent = x.manageUrl;
      p.appendChild(a);
      b.type = 'button';
      b.className = 'secundario';
      b.textContent = note.getAttribute('data-guardado');
      b.addEventListener('click', function () {
        setLinks(links().filter(function (y) { return y.manageUrl !== x.manageUrl; }));
        showLinks();
      });
      div.appendChild(p);
      div.appendChild(b);
    });
    note.parentNode.insertBefore(div, note.nextSibling);
  }
  var linksHere = location.pathname === '/' || !!document.getElementById('formulario');

  function announce(item, data) {
    signalBack();
    var ev = new CustomEvent('directaid:enviada', { cancelable: true, detail: { item: item, data: data } });
    collect().then(function () {
      if (!ev.defaultPrevented && !item.rejected) showLinks();
      return box.all().then(function (items) { if (!items.some(function (it) { return !it.sent && !it.rejected; })) nothingWaits(); });
    }).catch(function () { /* kept in IndexedDB */ });
    if (!document.dispatchEvent(ev)) return;
    if (item.rejected) return showRefused();
    var a = document.createElement('a');
    note.textContent = note.getAttribute('data-publicada') + ' ';
    a.href = data.publicUrl;
    a.textContent = data.publicUrl;
    note.appendChild(a);
    note.hidden = false;
  }
  // showRefused lists the saved publications the server refused, each with its title, a link to its form
  // (which brings that one back with its errors) and «Descartarla».
  var here = document.getElementById('formulario');
  function showRefused() {
    box.all().then(function (items) {
      var old = document.getElementById('rechazadas');
      if (old) old.parentNode.removeChild(old);
      var refused = items.filter(function (it) { return it.rejected && !(here && here.getAttribute('action') === it.action); });
      if (!refused.length) return;
      var div = document.createElement('div');
      div.id = 'rechazadas';
      div.className = 'aviso';
      div.setAttribute('role', 'status');
      refused.forEach(function (it) {
        var title = '';
        try { title = JSON.parse(it.body).title || ''; } catch (e) { /* no title */ }
        var p = document.createElement('p'), a = document.createElement('a'), b = document.createElement('button');
        p.textContent = note.getAttribute('data-rechazada') + (title ? ' («' + title + '»)' : '') + ' ';
        a.href = it.action + '?guardada=' + encodeURIComponent(it.externalId);
        a.textContent = note.getAttribute('data-corregir');
        b.type = 'button';
        b.className = 'secundario';
        b.textContent = note.getAttribute('data-descartar');
        b.addEventListener('click', function () {
          box.remove(it.externalId).then(showRefused);
        });
        p.appendChild(a);
        p.appendChild(document.createTextNode(' '));
        p.appendChild(b);
        div.appendChild(p);
      });
      note.parentNode.insertBefore(div, note.nextSibling);
    }).catch(function () { /* nothing saved */ });
  }
  // nothingWaits hides «se enviarán cuando vuelva la señal», no longer true once nothing waits (the form
  // that showed its own publication as sent cancelled the announcement that would have replaced it; the
  // service worker may have sent it between two tries of this page).
  function nothingWaits() {
    if (!note.hidden && note.textContent === note.getAttribute('data-pendiente')) note.hidden = true;
  }
  // While something waits, try again every 15 s too: a signal that comes back weak may fail the first
  // try after the 'online' event (a try with no signal at all fails at once, at no cost).
  var timer = 0;
  function flush() {
    clearTimeout(timer);
    box.flush(announce).then(function (n) {
      if (!n) { nothingWaits(); return; }
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
  document.addEventListener('directaid:guardada', flush); // a form saved a fill (form.js)
  collect().catch(function () { /* kept in IndexedDB */ }).then(function () { if (linksHere) showLinks(); });
  // A saved publication refused while no page was open (the service worker's Background Sync sent it):
  // every page lists each until it is corrected or discarded; its own form shows it with its errors.
  showRefused();
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
