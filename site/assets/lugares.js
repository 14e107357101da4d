// «¿Dónde?» on the phone: DANE's list of municipios and centros poblados (fetched from a content-hashed
// URL when the picker is first used, then from the service worker's or the browser's cache) fills the
// municipio and centro poblado choices and answers the name search as it is typed, with no network service. Without this script the same picker
// works with submit steps. The API gets placeCode; the picker's own fields are never sent.
(function () {
  'use strict';
  var box = document.getElementById('lugar');
  if (!box || !window.fetch || !''.normalize) return;
  var form = box.closest('form');
  var dep = document.getElementById('f-lugar-departamento'), mun = document.getElementById('f-placeCode');
  var cen = document.getElementById('f-lugar-centro'), q = document.getElementById('f-lugar-buscar');
  var out = document.getElementById('lugar-resultados'), shown = document.getElementById('lugar-elegido');
  var code = document.createElement('input');
  code.type = 'hidden';
  code.name = 'placeCode';
  form.appendChild(code);
  [dep, mun, cen, q].forEach(function (el) { el.removeAttribute('name'); });
  var steps = box.querySelectorAll('.paso'), buttons = box.querySelectorAll('button[name]');
  var loaded = false;
  // Steps and search results are buttons named for the server: form.js must not send them to the API.
  var named = Array.prototype.map.call(buttons, function (b) { var n = b.name; b.removeAttribute('name'); return n; });
  var all = [], byCode = {};
  // The emergencies' areas (departamento and municipio codes): their places come first among equals.
  var area = [];
  // Once an emergency is chosen (several are active), its area alone, as the server's search takes it.
  var which = document.getElementById('f-emergencySlug');
  function setArea() {
    var opt = which && which.selectedIndex >= 0 ? which.options[which.selectedIndex] : null;
    area = ((opt && opt.getAttribute('data-area')) || box.getAttribute('data-area') || '').split(' ').filter(Boolean);
  }
  setArea();
  if (which) which.addEventListener('change', function () { setArea(); if (loaded && q.value) showResults(); });
  function inArea(p) { return area.some(function (a) { return p.c.lastIndexOf(a, 0) === 0; }) ? 1 : 0; }

  function fold(s) {
    return s.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim();
  }
  // A folded text as people say it: a word's final «ado» said «ao» («pueblo tapao»), as backend/places does.
  function said(folded) {
    return folded.indexOf('ado') < 0 ? folded : folded.split(' ').map(function (w) { return /ado$/.test(w) ? w.slice(0, -3) + 'ao' : w; }).join(' ');
  }
  function everyWord(ctx, words) { return words.every(function (w) { return ctx.indexOf(' ' + w) >= 0; }); }
  function label(p) {
    if (p.c.length === 5) return p.n + ' (' + byCode[p.c.slice(0, 2)].n + ')';
    return p.n + ', ' + byCode[p.c.slice(0, 5)].n + ' (' + byCode[p.c.slice(0, 2)].n + ')';
  }
  function children(parent, len) {
    return all.filter(function (p) { return p.c.length === len && p.c.lastIndexOf(parent, 0) === 0; })
      .sort(function (a, b) { return a.k < b.k ? -1 : a.k > b.k ? 1 : 0; });
  }
  function fill(select, list, first) {
    select.textContent = '';
    select.appendChild(new Option(first, ''));
    (list || []).forEach(function (p) { select.appendChild(new Option(p.n, p.c)); });
  }
  // The place the form sends: the centro poblado if one is chosen, else the municipio.
  function update() {
    code.value = cen.value || mun.value;
    var p = byCode[code.value];
    shown.hidden = !p;
    shown.textContent = '';
    if (p) {
      shown.appendChild(document.createTextNode('Lugar: '));
      var b = document.createElement('strong');
      b.textContent = label(p);
      shown.appendChild(b);
    }
  }
  function choose(c) {
    dep.value = c.slice(0, 2);
    fill(mun, children(dep.value, 5), 'Elija el municipio');
    mun.value = c.slice(0, 5);
    fill(cen, children(mun.value, 8), 'La cabecera municipal, o no sé');
    cen.value = c.length === 8 ? c : '';
    update();
  }
  // What people write before a place's name (backend/places.KindWords, in data-antes): left out when nothing matches.
  var kindWords = (box.getAttribute('data-antes') || '').split(' ').filter(Boolean);
  function kindLead(words) {
    var i = 0;
    while (i < words.length && kindWords.indexOf(words[i]) >= 0) i++;
    return i;
  }
  // backend/places.Search: the words as typed, then without the kind words before the name.
  function search(text) {
    var words = fold(text).split(' ').filter(Boolean), found = searchWords(words), i = kindLead(words);
    return found.length || !i || i >= words.length ? found : searchWords(words.slice(i));
  }
  // The optimal string alignment distance of internal/textdist.
  function distance(a, b) {
    var back = [], prev = [], cur = [], i, j;
    for (j = 0; j <= b.length; j++) prev[j] = j;
    for (i = 1; i <= a.length; i++) {
      cur = [i];
      for (j = 1; j <= b.length; j++) {
        cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
        if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) cur[j] = Math.min(cur[j], back[j - 2] + 1);
      }
      back = prev; prev = cur;
    }
    return prev[b.length];
  }
  // backend/places.NamesLike: the names a typo away (one edit up to six letters, two beyond), a leading
  // article aside; the area's when any, only the fewest edits away, municipios first, then by name.
  function namesLike(text) {
    var words = fold(text).split(' ').filter(Boolean), i = kindLead(words);
    var typed = (words.length > 1 && i < words.length ? words.slice(i) : words).join(' ');
    if (typed.length < 4) return [];
    var most = typed.length > 6 ? 2 : 1, found = [];
    function dist(name) { return Math.abs(name.length - typed.length) > most ? most + 1 : distance(typed, name); }
    all.forEach(function (p) {
      if (p.c.length !== 5 && p.c.length !== 8) return;
      var d = Math.min(dist(p.k), dist(p.k.replace(/^(el|la|los|las) /, '')));
      if (d <= most) found.push({ p: p, d: d });
    });
    if (found.some(function (n) { return inArea(n.p); })) found = found.filter(function (n) { return inArea(n.p); });
    var best = Math.min.apply(null, found.map(function (n) { return n.d; }));
    found = found.filter(function (n) { return n.d === best; });
    found.sort(function (a, b) { return a.p.c.length - b.p.c.length || (a.p.k < b.p.k ? -1 : a.p.k > b.p.k ? 1 : 0); });
    return found.slice(0, 12).map(function (n) { return n.p; });
  }
  // The ranking of backend/places.Search (names compared as written, as said and without spaces): the name itself, then
  // names that start with the words, then places whose name, municipio and departamento hold every word;
  // municipios before centros poblados; among equals, the places of the emergencies' areas first.
  function searchWords(words) {
    var full = words.join(' '), squashed = words.join('');
    if (!full) return [];
    var saidFull = said(full), saidWords = saidFull.split(' ');
    var hits = [];
    all.forEach(function (p) {
      if (p.c.length === 2) return;
      var rank = -1;
      if (p.k === full || p.s === saidFull || p.q === squashed) rank = 0;
      else if (p.k.lastIndexOf(full, 0) === 0 || p.s.lastIndexOf(saidFull, 0) === 0) rank = 2;
      else {
        var ctx = ' ' + p.k + ' ' + byCode[p.c.slice(0, 2)].k + (p.c.length === 8 ? ' ' + byCode[p.c.slice(0, 5)].k : '');
        if (everyWord(ctx, words) || (ctx.indexOf('ado') >= 0 && everyWord(said(ctx), saidWords))) rank = 4;
      }
      if (rank >= 0) hits.push({ p: p, r: rank + (p.c.length === 8 ? 1 : 0) });
    });
    hits.sort(function (a, b) { return a.r - b.r || inArea(b.p) - inArea(a.p) || (a.p.k < b.p.k ? -1 : a.p.k > b.p.k ? 1 : 0); });
    return hits.slice(0, 12).map(function (h) { return h.p; });
  }
  // With no signal and no list, the picker cannot answer: it says so (a step would post the form into
  // no signal, and the browser's error page would take the fill with it).
  function offline() {
    if (loaded || navigator.onLine !== false) return false;
    noSignal();
    return true;
  }
  function noSignal() { say(box.getAttribute('data-sin-senal')); }
  function say(text) {
    out.textContent = '';
    var p = document.createElement('p');
    p.textContent = text;
    out.appendChild(p);
    out.hidden = false;
  }
  // The list's fetch failed (no answer): typing in the search says so, and asks for the list again.
  var failed = false;
  // While it comes (a slow signal: most of the site's bytes), typing says so and how not to wait.
  q.addEventListener('input', function () {
    if (loaded) return;
    if (failed) { load(); noSignal(); return; }
    if (fold(q.value)) say(box.getAttribute('data-cargando'));
  });
  function showResults() {
    if (offline()) return;
    out.textContent = '';
    if (!fold(q.value)) { out.hidden = true; return; }
    var found = search(q.value), guessed = !found.length;
    if (guessed) found = namesLike(q.value);
    out.hidden = false;
    if (!found.length || guessed) {
      var none = document.createElement('p');
      none.textContent = box.getAttribute(found.length ? 'data-quiso-decir' : 'data-sin-resultados');
      out.appendChild(none);
      if (!found.length) return;
    }
    var ul = document.createElement('ul');
    found.forEach(function (p) {
      var li = document.createElement('li'), b = document.createElement('button');
      b.type = 'button';
      b.className = 'enlace';
      b.textContent = label(p);
      b.addEventListener('click', function () {
        choose(p.c);
        out.hidden = true;
        q.value = '';
        mun.focus();
      });
      li.appendChild(b);
      ul.appendChild(li);
    });
    out.appendChild(ul);
  }

  q.addEventListener('keydown', function (ev) {
    if (ev.key !== 'Enter') return;
    ev.preventDefault(); // search, do not publish
    if (loaded) { showResults(); return; }
    // The list is still coming (a slow signal): the server searches, as the «Buscar» step does
    // without JavaScript, rather than an empty list answering «no se encontró».
    Array.prototype.forEach.call(buttons, function (b) { if (b.value === 'buscar') b.click(); });
  });
  // No update() before the list: the page's own «Lugar: …» (a place the server chose) stands until then.
  // The list (most of the site's bytes) comes when the form is first used, or at once when the page
  // already holds a choice or a search.
  var asked = false;
  function load() {
    if (asked) return;
    asked = true;
    fetch(box.getAttribute('data-lugares')).then(function (res) {
      if (!res.ok) throw new Error(res.status);
      return res.text();
    }).then(function (tsv) {
      tsv.split('\n').forEach(function (line) {
        var f = line.split('\t');
        if (f.length < 4) return;
        var k = fold(f[1]), p = { c: f[0], n: f[1], k: k, s: said(k), q: k.replace(/ /g, '') };
        all.push(p);
        byCode[p.c] = p;
      });
      loaded = true;
      failed = false;
      Array.prototype.forEach.call(steps, function (b) { b.hidden = true; });
      box.classList.add('al-instante');
      dep.addEventListener('change', function () {
        fill(mun, dep.value ? children(dep.value, 5) : null, dep.value ? 'Elija el municipio' : 'Elija primero el departamento');
        fill(cen, null, 'Elija primero el municipio');
        update();
      });
      mun.addEventListener('change', function () {
        fill(cen, mun.value ? children(mun.value, 8) : null, mun.value ? 'La cabecera municipal, o no sé' : 'Elija primero el municipio');
        update();
      });
      cen.addEventListener('change', update);
      q.addEventListener('input', showResults);
      if (code.value) choose(code.value);
      else if (dep.value) fill(mun, children(dep.value, 5), 'Elija el municipio');
      if (q.value) showResults();
    }).catch(function () { asked = false; failed = true; /* no list yet: the steps go to the server (below) */ });
  }
  box.addEventListener('focusin', load);
  box.addEventListener('pointerdown', load);
  // A person who starts filling the form will say where they are: the list comes then, while there is
  // signal, so that the picker still works if the signal goes before they reach it (the service worker
  // keeps it).
  var whole = box.closest && box.closest('form');
  if (whole) whole.addEventListener('focusin', load);
  if (code.value || q.value) load();
  // Until the list is here, a step is the server's, as without JavaScript: a plain submission of the
  // form (form.js would send it to the API), with the picker's fields named again.
  Array.prototype.forEach.call(buttons, function (b, i) {
    b.addEventListener('click', function (ev) {
      ev.preventDefault();
      if (loaded && named[i] === 'lugar-elegir') { choose(b.value); return; }
      if (offline()) return;
      window.serverAnswers().then(function (ok) { // a weak signal the phone still calls online (site.js)
        if (!ok) { noSignal(); return; }
        [dep, mun, cen, q].forEach(function (el) { el.name = el === mun ? 'lugar-municipio' : el.id.slice(2); });
        code.name = '';
        var step = document.createElement('input');
        step.type = 'hidden';
        step.name = named[i];
        step.value = b.value;
        form.appendChild(step);
        form.submit();
      });
    });
  });
})();
