// Progressive enhancement of the publish forms (the server handles them without JavaScript too): the
// form is sent as JSON to the public API, with one externalId per filling that survives reloads so that
// a retry never publishes twice; errors appear next to their fields; "Usar mi ubicación" fills the
// coordinates (in the filter of the emergency pages too). Every text a person reads comes from the page.
(function () {
  'use strict';
  var form = document.getElementById('formulario');
  if (!form || !window.fetch || !window.JSON) return;
  var $ = function (id) { return document.getElementById(id); };
  var box = $('errores'), list = $('errores-lista'), result = $('resultado'), send = $('enviar');
  var ext = form.elements.externalId, key = 'directaid:' + form.getAttribute('action');
  var store = window.sessionStorage;

  try {
    ext.value = store.getItem(key) || ext.value || crypto.randomUUID();
  } catch (e) { /* storage or crypto unavailable: the server's id stands */ }

  function clearErrors() {
    box.hidden = true;
    list.textContent = '';
    Array.prototype.forEach.call(form.querySelectorAll('.error'), function (p) { p.textContent = ''; p.hidden = true; });
    Array.prototype.forEach.call(form.querySelectorAll('[aria-invalid]'), function (el) { el.removeAttribute('aria-invalid'); });
  }

  function showErrors(summary, details) {
    $('errores-mensaje').textContent = summary;
    (details || []).forEach(function (d) {
      var name = String(d.field || '').slice(1), el = $('f-' + name), p = $('f-' + name + '-error');
      var text = String(d.message || '');
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

  function showResult(r) {
    try { store.removeItem(key); } catch (e) { /* nothing kept */ }
    $('resultado-nuevo').hidden = r.duplicate;
    $('resultado-duplicado').hidden = !r.duplicate;
    $('resultado-distinto').hidden = r.contentMatches !== false;
    var a = $('resultado-enlace');
    a.href = r.publicUrl;
    a.textContent = r.publicUrl;
    form.hidden = true;
    result.hidden = false;
    result.focus();
  }

  form.addEventListener('submit', function (ev) {
    ev.preventDefault();
    if (send.disabled) return;
    clearErrors();
    var body = {};
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name) return;
      if (el.type === 'checkbox') { body[el.name] = el.checked; return; }
      var v = el.value.trim();
      if (v === '') return;
      var n = Number(v.replace(',', '.'));
      body[el.name] = el.type === 'number' && isFinite(n) ? n : v;
    });
    try { store.setItem(key, ext.value); } catch (e) { /* the id still holds for this page */ }
    send.disabled = true;
    fetch(form.getAttribute('data-api'), {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body)
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (data) {
        if ((res.status === 200 || res.status === 201) && data.ok) return showResult(data);
        var has = (data.details || []).some(function (d) { return $('f-' + String(d.field).slice(1)); });
        var msg = res.status === 429 ? box.getAttribute('data-limite')
          : res.status >= 500 ? box.getAttribute('data-servidor')
          : has ? box.getAttribute('data-campos') : data.error || box.getAttribute('data-servidor');
        showErrors(msg, data.details);
      });
    }).catch(function () {
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
      status.textContent = geo.getAttribute('data-lista');
    }, function () {
      status.textContent = geo.getAttribute('data-fallo');
    }, { enableHighAccuracy: true, timeout: 20000, maximumAge: 60000 });
  });
})();
