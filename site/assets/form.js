// Progressive enhancement of the publish forms (the server handles them without JavaScript too): the
// form is sent as JSON to the public API, with one externalId per filling that survives reloads so that
// a retry never publishes twice; errors appear next to their fields; with no signal the fill is saved
// in the outbox (outbox.js) and published when the signal returns; "Usar mi ubicación" fills the
// coordinates (in the filter of the emergency pages too). Every text a person reads comes from the page.
(function () {
  'use strict';
  var form = document.getElementById('formulario');
  if (!form || !window.fetch || !window.JSON) return;
  var $ = function (id) { return document.getElementById(id); };
  var box = $('errores'), list = $('errores-lista'), result = $('resultado'), send = $('enviar');
  var ext = form.elements.externalId, key = 'directaid:' + form.getAttribute('action');
  // The manage link is shown once: a button copies it.
  var copy = $('copiar-gestion');
  if (copy && navigator.clipboard) {
    copy.hidden = false;
    copy.addEventListener('click', function () {
      navigator.clipboard.writeText($('resultado-gestionar').href).then(function () {
        copy.textContent = copy.getAttribute('data-copiado');
      }, function () {});
    });
  }
  var store = window.sessionStorage, outbox = self.directaidOutbox, shown = {};

  // A new id per fill (a cached page's id is another fill's).
  function newID() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    var b = new Uint8Array(16), hex = '';
    if (window.crypto && crypto.getRandomValues) crypto.getRandomValues(b);
    else for (var i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
    for (var j = 0; j < 16; j++) hex += (b[j] + 256).toString(16).slice(1);
    return 'web-' + hex;
  }
  try {
    ext.value = store.getItem(key) || newID();
  } catch (e) { ext.value = newID(); /* no storage: a new id for this page */ }

  function clearErrors() {
    box.hidden = true;
    list.textContent = '';
    Array.prototype.forEach.call(form.querySelectorAll('.error'), function (p) { p.textContent = ''; p.hidden = true; });
    Array.prototype.forEach.call(form.querySelectorAll('[aria-invalid]'), function (el) { el.removeAttribute('aria-invalid'); });
  }

  // fieldName is the form field an API detail is about.
  function fieldName(d) {
    var name = String(d.field || '').slice(1);
    // No place and no coordinates: said once, at the «¿Dónde?» picker (one coordinate without the other is
    // said at the field that lacks it).
    if ((name === 'latitude' || name === 'longitude') && $('f-placeCode') && !form.elements.latitude.value.trim() &&
      !form.elements.longitude.value.trim()) name = 'placeCode';
    return name;
  }
  function showErrors(summary, details) {
    $('errores-mensaje').textContent = summary;
    // In the order of the fields on the page, as the page without JavaScript lists them; the rest after.
    var fields = Array.prototype.slice.call(form.elements);
    var at = function (d) { var i = fields.indexOf($('f-' + fieldName(d))); return i < 0 ? fields.length : i; };
    (details || []).slice().sort(function (a, b) { return at(a) - at(b); }).forEach(function (d) {
      var name = fieldName(d);
      var el = $('f-' + name), p = $('f-' + name + '-error');
      var text = String(d.message || '');
      if (el && p && el.getAttribute('data-error') && p.textContent) return;
      var li = document.createElement('li');
      if (el && p) {
        var label = el.getAttribute('data-label');
        text = el.getAttribute('data-error') || text.split('«' + name + '»').join('«' + label + '»');
        p.textContent = (p.textContent ? p.textContent + ' ' : '') + text;
        p.hidden = false;
        el.setAttribute('aria-invalid', 'true');
        var a = document.createElement('a');
        a.href = '#f-' + name;
        a.textContent = text;
        li.appendChild(a);
      } else {
        li.textContent = text;
      }
      list.appendChild(li);
    });
    box.hidden = false;
    box.focus();
  }

  // «Volver a mi formulario»: the same fill, to send again from the network that gets its manage link.
  $('volver-formulario').addEventListener('click', function () {
    result.hidden = true;
    form.hidden = false;
    send.focus();
  });
  function showResult(r, saved) {
    try { store.removeItem(key); } catch (e) { /* nothing kept */ }
    $('resultado-guardada').hidden = !saved;
    $('resultado-nuevo').hidden = saved || r.duplicate;
    $('resultado-duplicado').hidden = saved || !r.duplicate;
    $('resultado-distinto').hidden = saved || r.contentMatches !== false;
    var noManage = !saved && !!r.duplicate && r.contentMatches !== false && !r.manageUrl;
    $('resultado-sin-gestion').hidden = !noManage;
    $('volver-formulario').hidden = !noManage;
    if (noManage) try { store.setItem(key, ext.value); } catch (e) { /* the id still holds for this page */ }
    $('resultado-publico').hidden = saved;
    var a = $('resultado-enlace');
    a.href = r.publicUrl || '';
    a.textContent = r.publicUrl || '';
    $('resultado-ver').href = r.publicUrl || '';
    var warn = $('resultado-avisos');
    warn.textContent = '';
    (r.warnings || []).forEach(function (w) {
      var p = document.createElement('p');
      p.className = 'aviso';
      p.textContent = String(w.message || '');
      warn.appendChild(p);
    });
    var m = $('resultado-gestionar');
    m.href = r.manageUrl || '';
    m.textContent = r.manageUrl || '';
    $('resultado-gestion').hidden = saved || !r.manageUrl;
    // When it stops showing unless it is renewed, as the server writes it.
    var vence = $('resultado-vence'), when = window.colombiaTime(r.expiresAt, vence.dataset.meses.split(','));
    vence.hidden = !when;
    $('resultado-vence-fecha').textContent = when;
    if (r.manageUrl) {
      $('enviar-gestion').href = 'https://wa.me/?text=' + encodeURIComponent('Mi enlace para gestionar mi publicación (no lo comparta): ' + r.manageUrl);
      $('gestionar-id').value = r.id || '';
      $('gestionar-token').value = r.manageToken || '';
      r.savedTitle = r.savedTitle || (form.elements.title ? form.elements.title.value.trim() : '');
      remember(r, r.savedTitle);
      // Kept for this tab only: «Ver mi publicación» and then «Atrás» bring this confirmation back, with
      // its manage link, rather than an empty form (the page is not cached; the link would be lost).
      try { store.setItem(lastKey, JSON.stringify({ r: r, at: Date.now(), shown: true })); } catch (e) { /* not kept */ }
    }
    form.hidden = true;
    result.hidden = false;
    // Its start on screen: the page was scrolled down to «Publicar», and focus alone shows only the part
    // of a tall confirmation already in view (its first lines and warnings stayed above the screen).
    result.focus({ preventScroll: true });
    result.scrollIntoView({ block: 'start' });
    if (!saved && r.id && r.status === 'open') showMatches(r.id);
  }

  // The confirmation of this tab's last publication, for an hour, until «Publicar otra»: shown again when
  // the page is come back to with «Atrás» or reloaded; a link or the menu opens the empty form, with a
  // note above it that brings the confirmation back (the manage link is the only way to withdraw).
  var lastKey = key + ':ultima';
  $('publicar-otra').addEventListener('click', function () {
    try { store.removeItem(lastKey); } catch (e) { /* nothing kept */ }
  });
  try {
    var nav = performance.getEntriesByType('navigation')[0], last = JSON.parse(store.getItem(lastKey) || 'null');
    if (last && Date.now() - last.at >= 3600000) store.removeItem(lastKey);
    else if (last && last.r && last.shown && result.hidden && nav && (nav.type === 'back_forward' || nav.type === 'reload')) showResult(last.r);
    else if (last && last.r && result.hidden) {
      last.shown = false; // this page is a form: coming back to it, or reloading it, is the form
      store.setItem(lastKey, JSON.stringify(last));
      $('ultima-titulo').textContent = last.r.savedTitle || '';
      $('ultima').hidden = false;
      $('ultima-ver').addEventListener('click', function () { $('ultima').hidden = true; showResult(last.r); });
    }
  } catch (e) { /* nothing kept, or unreadable: the empty form */ }

  // Who can answer the record just published (GET …/{id}/matches), each linking to its page; nothing
  // is shown when they cannot be read (the record's page lists them too).
  function showMatches(id) {
    var box = $('coincidencias'), ul = $('coincidencias-lista'), none = $('coincidencias-ninguna');
    if (!box) return;
    var url = form.getAttribute('data-api') + '/' + encodeURIComponent(id) + '/matches?limit=' + box.getAttribute('data-limite');
    // Without typed coordinates the publication's point is its place's: every distance from it is approximate.
    var lat = form.elements.latitude, approx = !(lat && lat.value.trim());
    fetch(url, { headers: { Accept: 'application/json' } }).then(function (res) {
      return res.ok ? res.json() : null;
    }).then(function (m) {
      if (!m || !m.items) return;
      ul.textContent = '';
      m.items.forEach(function (it) {
        var li = document.createElement('li'), a = document.createElement('a');
        a.href = it.publicUrl;
        a.textContent = it.title;
        li.appendChild(a);
        var where = [], loc = it.location || {};
        if (typeof loc.distanceKm === 'number') {
          var d = loc.distanceKm.toFixed(1).replace('.', ',') + ' km';
          where.push('a ' + (approx || loc.precision === 'place' ? box.getAttribute('data-aprox').replace('{d}', d) : d));
        }
        if (loc.place || loc.municipio) where.push(loc.place || loc.municipio);
        if (where.length) li.appendChild(document.createTextNode(', ' + where.join(', ')));
        ul.appendChild(li);
      });
      none.hidden = m.items.length > 0;
      box.hidden = false;
    }, function () { /* no signal: the record's page lists them */ });
  }

  // «Recordar en este teléfono» (opt-in): the publication and its manage link in localStorage, which the
  // home page lists as «Mis publicaciones en este teléfono».
  function remember(r, title) {
    var box = $('recordar'), check = $('recordar-aqui');
    if (!box || !window.localStorage || !r.id) return;
    box.hidden = false;
    check.checked = false;
    check.onchange = function () {
      try {
        var mine = JSON.parse(localStorage.getItem('directaid:mias') || '[]').filter(function (x) { return x.id !== r.id; });
        if (check.checked) mine.unshift({ id: r.id, title: title, publicUrl: r.publicUrl, manageUrl: r.manageUrl, at: new Date().toISOString() });
        localStorage.setItem('directaid:mias', JSON.stringify(mine.slice(0, 20)));
      } catch (e) { /* storage full or off: nothing kept */ }
    };
  }

  // The field of a collection centre shows only when the category is «Acopio».
  var cat = form.elements.category;
  function onlyFor() {
    Array.prototype.forEach.call(form.querySelectorAll('[data-solo-categoria]'), function (el) {
      el.hidden = !cat || cat.value !== el.getAttribute('data-solo-categoria');
    });
  }
  if (cat) { cat.addEventListener('change', onlyFor); onlyFor(); }

  // The required fields body lacks (a place: placeCode or both coordinates).
  function missing(body) {
    var out = [];
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.required || el.disabled || !el.id || el.id.indexOf('f-') !== 0) return;
      var name = el.id.slice(2);
      var has = name === 'placeCode' ? !!body.placeCode || body.latitude !== undefined || body.longitude !== undefined
        : el.type === 'checkbox' ? body[el.name] === true : body[el.name] !== undefined;
      if (!has) out.push({ field: '/' + name, message: el.getAttribute('data-error') || 'Falta «' + el.getAttribute('data-label') + '».' });
    });
    // One coordinate without the other: said at the one that is missing.
    if ((body.latitude === undefined) !== (body.longitude === undefined) && form.elements.latitude && form.elements.longitude) {
      var lack = body.latitude === undefined ? 'latitude' : 'longitude', label = $('f-' + lack) && $('f-' + lack).getAttribute('data-label');
      out.push({ field: '/' + lack, message: 'Falta «' + (label || lack) + '»: la latitud y la longitud van juntas.' });
    }
    return out;
  }

  // With no signal the fill waits in the outbox, under its externalId, for the signal to return.
  function save(body) {
    var item = { externalId: ext.value, api: form.getAttribute('data-api'), action: form.getAttribute('action'),
      body: JSON.stringify(body), savedAt: new Date().toISOString() };
    return outbox.put(item).then(function () {
      showResult({}, true);
      var sw = navigator.serviceWorker;
      if (sw) sw.ready.then(function (reg) { return reg.sync && reg.sync.register('bandeja'); }).catch(function () { /* online event instead */ });
      // Saved with a signal that gave no answer, no 'online' event will come: the page tries again itself.
      document.dispatchEvent(new CustomEvent('directaid:guardada'));
    });
  }

  // A saved fill of this form was sent (site.js): published, or refused, then back in the form with
  // its errors and its externalId. One refused fill at a time: the form is emptied first, so that no field
  // of another fill stays (each is one person's); the others wait in the outbox for their turn.
  var restored = null, discard = $('descartar-guardada');
  function settled(item, data) {
    if (shown[item.externalId]) return true;
    // Published: by this send or by an earlier one of the same saved fill (the page's and the service
    // worker's may cross), so a duplicate answer is news of its publication too; only on a saved fill's
    // confirmation (false: site.js's notice says it).
    if (!item.rejected) {
      if (!form.hidden || (restored && restored !== item.externalId)) return false;
      shown[item.externalId] = true;
      var r = {};
      for (var k in data) if (Object.prototype.hasOwnProperty.call(data, k)) r[k] = data[k];
      r.duplicate = false;
      try { r.savedTitle = JSON.parse(item.body).title || ''; } catch (e) { /* no title */ }
      showResult(r);
      return true;
    }
    if (restored) return true;
    shown[item.externalId] = true;
    restored = item.externalId;
    var body = JSON.parse(item.body);
    form.reset();
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name || el === ext || el.tagName === 'BUTTON' || !(el.name in body)) return;
      if (el.type === 'checkbox') el.checked = body[el.name] === true; else el.value = String(body[el.name]);
    });
    if (discard) discard.hidden = false;
    ext.value = item.externalId;
    try { store.setItem(key, ext.value); } catch (e) { /* the id still holds for this page */ }
    // It stays in the outbox, refused, until this fill is published (or the person discards it): a
    // reload or a closed tab before the correction must not lose it.
    result.hidden = true;
    form.hidden = false;
    clearErrors();
    showErrors(data.error && !(data.details || []).length ? data.error : box.getAttribute('data-campos'), data.details);
    return true;
  }
  document.addEventListener('directaid:enviada', function (ev) {
    if (ev.detail.item.action !== form.getAttribute('action')) return;
    if (settled(ev.detail.item, ev.detail.data)) ev.preventDefault();
  });
  // A fill refused while this page was closed comes back now: the one its link names (?guardada=), else
  // the oldest.
  var asked = (location.search.match(/[?&]guardada=([^&]*)/) || [])[1];
  asked = asked ? decodeURIComponent(asked) : '';
  if (outbox) outbox.all().then(function (items) {
    items.filter(function (it) { return it.rejected && it.action === form.getAttribute('action'); })
      .sort(function (a, b) {
        if ((a.externalId === asked) !== (b.externalId === asked)) return a.externalId === asked ? -1 : 1;
        return String(a.savedAt || '') < String(b.savedAt || '') ? -1 : 1;
      })
      .forEach(function (it) { settled(it, it.rejected.data); });
  }).catch(function () { /* nothing saved */ });
  // «Descartar»: the restored fill leaves the phone, and the form starts a new one.
  if (discard) discard.addEventListener('click', function () {
    if (!restored) return;
    try { store.removeItem(key); } catch (e) { /* nothing kept */ }
    outbox.remove(restored).then(function () { location.replace(form.getAttribute('action')); });
  });

  form.addEventListener('submit', function (ev) {
    ev.preventDefault();
    if (send.disabled) return;
    clearErrors();
    // A point pasted whole in «Latitud» («4.5339, -75.6811», as a map copies it): both fields, as the
    // server reads it without JavaScript.
    var lat = form.elements.latitude, lon = form.elements.longitude;
    // «4,5339» alone is one number with a decimal comma, as the field's hint allows: not a point.
    var pair = lat && lon && !lon.value.trim() && (!/^\s*[+-]?[0-9]+,[0-9]+\s*$/.test(lat.value) &&
      /^\s*([+-]?[0-9]+(?:\.[0-9]+)?)\s*[,; ]\s*([+-]?[0-9]+(?:\.[0-9]+)?)\s*$/.exec(lat.value) ||
      // …or with decimal commas («4,5339, -75,6811», as a phone set to Spanish copies it)
      /^\s*([+-]?[0-9]+,[0-9]+)\s*(?:;\s*|,\s+|\s+)([+-]?[0-9]+,[0-9]+)\s*$/.exec(lat.value));
    if (pair) { lat.value = pair[1]; lon.value = pair[2]; }
    var body = {};
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name || el.tagName === 'BUTTON') return; // the no-JavaScript steps' buttons are not data
      if (el.type === 'checkbox') { body[el.name] = el.checked; return; }
      var v = el.value.trim();
      if (v === '') return;
      // Numbers: the number inputs, and the coordinates (text with a decimal keyboard, which keep the
      // decimal comma people write); what does not read as one goes as typed, for the API to name.
      // A whole number (inputmode numeric) may come with the dots of its thousands: «1.000» is one thousand.
      var whole = el.getAttribute('inputmode') === 'numeric';
      if (whole && /^[0-9]{1,3}(\.[0-9]{3})+$/.test(v)) v = v.replace(/\./g, '');
      var n = Number(v.replace(',', '.'));
      body[el.name] = (el.type === 'number' || whole || el.getAttribute('inputmode') === 'decimal') && isFinite(n) ? n : v;
    });
    try { store.setItem(key, ext.value); } catch (e) { /* the id still holds for this page */ }
    send.disabled = true;
    // A weak signal can leave the request without an answer: after a while the fill is saved on the phone
    // as with no signal (its externalId makes a send that did arrive and the outbox's resend one record).
    var wait = Number(form.getAttribute('data-espera')) || 20000;
    var ctl = window.AbortController ? new AbortController() : null, timer = ctl && setTimeout(function () { ctl.abort(); }, wait);
    var sentId = ext.value;
    fetch(form.getAttribute('data-api'), {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal: ctl && ctl.signal
    }).then(function (res) {
      clearTimeout(timer);
      return res.json().catch(function () { return {}; }).then(function (data) {
        if ((res.status === 200 || res.status === 201) && data.ok) {
          if (outbox) outbox.remove(sentId).catch(function () { /* nothing saved under it */ });
          return showResult(data);
        }
        var has = (data.details || []).some(function (d) { return $('f-' + String(d.field).slice(1)); });
        var msg = res.status === 429 ? box.getAttribute('data-limite')
          : res.status >= 500 ? box.getAttribute('data-servidor')
          : has ? box.getAttribute('data-campos') : data.error || box.getAttribute('data-servidor');
        showErrors(msg, data.details);
      });
    }, function () {
      clearTimeout(timer);
      // Said now what would be refused later, when nobody may be there.
      var gaps = missing(body);
      if (gaps.length) return showErrors(box.getAttribute('data-campos'), gaps);
      if (outbox) return save(body).catch(function () { showErrors(box.getAttribute('data-red')); });
      showErrors(box.getAttribute('data-red'));
    }).then(function () { send.disabled = false; });
  });

})();

// "Usar mi ubicación" fills the latitude and longitude of the form that holds it: a publish form, or an
// emergency page's filter ("cerca de mí").
(function () {
  'use strict';
  var geo = document.getElementById('usar-ubicacion'), status = document.getElementById('ubicacion-estado');
  if (!geo || !geo.form || !navigator.geolocation) return;
  var form = geo.form;
  geo.hidden = false;
  // The hint for browsers without the button would only confuse next to it.
  var help = document.getElementById('ubicacion-ayuda');
  if (help) help.hidden = true;
  geo.addEventListener('click', function () {
    status.textContent = geo.getAttribute('data-buscando');
    navigator.geolocation.getCurrentPosition(function (p) {
      form.elements.latitude.value = p.coords.latitude.toFixed(5);
      form.elements.longitude.value = p.coords.longitude.toFixed(5);
      if (form.elements.locationPrecision) form.elements.locationPrecision.value = 'gps';
      status.textContent = geo.getAttribute('data-lista');
    }, function () {
      // No GPS: the town is the way, the picker's search or the filter's municipio.
      status.textContent = geo.getAttribute('data-fallo');
      var town = document.getElementById('f-lugar-buscar') || document.getElementById('filtro-municipio');
      if (town) town.focus();
    }, { enableHighAccuracy: true, timeout: 20000, maximumAge: 60000 });
  });
})();
