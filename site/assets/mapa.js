// The map of an emergency's records (/emergencias/{slug}/mapa), after Leaflet in the same file. It reads
// the page's list as GeoJSON from the public API (data-datos: the page's filters, a page of 100, at most
// data-paginas pages), and draws each record as a point that links to its page, never its contact; near
// points are grouped on a grid of the screen, and a group opens closer (or, where the points coincide,
// lists them). The list stays under the map: without JavaScript, tiles or data, it is the page. Every
// text a person reads comes from the page.
(function () {
  'use strict';
  var box = document.getElementById('mapa'), status = document.getElementById('mapa-estado');
  if (!box || !status || !window.L || !window.fetch || !window.JSON) return;
  var CELL = 56, MAXZOOM = 18;
  var words = JSON.parse(box.getAttribute('data-etiquetas'));
  // phrase is a text of the status line for n (its data-…-1 variant, if any, for one).
  function phrase(key, n) {
    var one = n === 1 && status.getAttribute('data-' + key + '-1');
    return (one || status.getAttribute('data-' + key)).replace('{n}', n);
  }
  function say(key, n, more) {
    status.textContent = phrase(key, n) + (more ? ' ' + more : '');
  }
  function text(tag, s, cls) {
    var el = document.createElement(tag);
    el.textContent = s;
    if (cls) el.className = cls;
    return el;
  }
  function escapeHTML(s) {
    return String(s).replace(/[&<>"']/g, function (c) { return '&#' + c.charCodeAt(0) + ';'; });
  }

  say('cargando');
  box.hidden = false;
  var map = L.map(box, { maxZoom: MAXZOOM, zoomSnap: 1 }).setView([4.6, -74.1], 5);
  map.attributionControl.setPrefix('<a href="https://leafletjs.com">Leaflet</a>');
  var points = [], layer = L.layerGroup(), note = '', summary = null, loaded = 0, failed = 0;
  function show() { if (summary) summary(); }
  L.tileLayer(box.getAttribute('data-teselas'), { maxZoom: MAXZOOM, attribution: escapeHTML(box.getAttribute('data-atribucion')) })
    .on('tileload', function () { loaded++; })
    .on('tileerror', function () { failed++; })
    // Every tile in view settled: none came (no signal, or the tile server refused), say so once.
    .on('load', function () {
      if (!failed || loaded || note) return;
      box.classList.add('sin-teselas');
      note = status.getAttribute('data-sin-teselas');
      show();
    })
    .addTo(map);
  layer.addTo(map);

  // One line of a record: its title linking to its page, then what it is.
  function entry(p, tag, place) {
    var el = document.createElement(tag), a = text('a', p.title);
    a.href = '/ayudas/' + encodeURIComponent(p.id);
    el.appendChild(a);
    var what = [words[p.type], words[p.category], words[p.urgency]].filter(Boolean).join(' · ');
    if (place && p.place) what += ' — ' + p.place;
    el.appendChild(text('span', ' ' + what, 'mapa-que'));
    return el;
  }
  // Popups pan clear of the zoom buttons (top left), which covered a popup's first lines and its link,
  // and are narrow enough to fit beside them on a phone (at Leaflet's 300 px they ran past the map's
  // right edge, their close button off the screen).
  var CLEAR = [52, 84];
  function popupWidth() { return Math.max(140, Math.min(300, map.getSize().x - CLEAR[0] - 56)); }
  // A marker reached with the keyboard pans into view; a tapped one stays where it is. (Leaflet pans on
  // every focus, and a tap focuses the marker on touching it: near the map's edge the map moved under the
  // finger and the tap landed on the map beside it, opening nothing.)
  function keyFocus(m) {
    m.options.autoPanOnFocus = false;
    m.on('add', function () {
      var el = m.getElement();
      L.DomEvent.on(el, 'focus', function () {
        if (el.matches && el.matches(':focus-visible')) map.panInside(m.getLatLng(), { padding: [30, 30] });
      });
    });
    return m;
  }
  function single(p) {
    var m = keyFocus(L.marker(p.ll, { icon: L.divIcon({ className: 'mapa-punto mapa-' + p.type, iconSize: [22, 22] }),
      title: (words[p.type] || '') + ': ' + p.title, keyboard: true, riseOnHover: true }));
    m.bindPopup(function () {
      var el = document.createElement('div');
      el.appendChild(entry(p, 'p', true));
      return el;
    }, { autoPanPaddingTopLeft: CLEAR, maxWidth: popupWidth() });
    return m;
  }
  // A group: a circle with its count. A tap zooms in on its points, or lists them where they coincide
  // (records placed at their municipio share its point) or the map is as close as it goes.
  function group(items, at, z) {
    var n = items.length, bounds = L.latLngBounds(items.map(function (p) { return p.ll; }));
    var size = n < 10 ? 34 : n < 100 ? 40 : 48;
    var m = keyFocus(L.marker(at, { icon: L.divIcon({ className: 'mapa-grupo', html: String(n), iconSize: [size, size] }),
      title: box.getAttribute('data-grupo').replace('{n}', n), keyboard: true }));
    var together = map.project(bounds.getNorthWest(), MAXZOOM).distanceTo(map.project(bounds.getSouthEast(), MAXZOOM)) < CELL;
    if (together || z >= MAXZOOM) {
      m.bindPopup(function () {
        // Where the records share a place, it is said once, first; then the list around it, and the records.
        var el = document.createElement('div'), ul = document.createElement('ul'), place = items[0].place;
        var same = place && items.every(function (p) { return p.place === place; });
        el.appendChild(text('p', box.getAttribute(same ? 'data-en-lugar' : 'data-en-punto').replace('{n}', n).replace('{lugar}', place)));
        var c = bounds.getCenter(), u = new URL(box.getAttribute('data-lista'), location.href);
        u.searchParams.set('latitude', c.lat.toFixed(5));
        u.searchParams.set('longitude', c.lng.toFixed(5));
        u.searchParams.set('radiusKm', '1');
        var all = text('a', box.getAttribute('data-todas'));
        all.href = u.pathname + u.search;
        el.appendChild(text('p', '')).appendChild(all);
        items.slice(0, 10).forEach(function (p) { ul.appendChild(entry(p, 'li', !same)); });
        el.appendChild(ul);
        return el;
      }, { maxHeight: 280, autoPanPaddingTopLeft: CLEAR, maxWidth: popupWidth() });
    } else {
      m.on('click', function () {
        map.fitBounds(bounds, { padding: [40, 40], maxZoom: MAXZOOM });
        if (map.getZoom() <= z) map.setView(at, z + 2);
      });
    }
    return m;
  }
  // The grid of the current zoom: points whose screen positions fall in one cell become one group, at
  // their average position.
  function draw() {
    layer.clearLayers();
    var z = map.getZoom(), cells = {};
    points.forEach(function (p) {
      var px = map.project(p.ll, z), k = Math.floor(px.x / CELL) + ':' + Math.floor(px.y / CELL);
      var c = cells[k] || (cells[k] = { items: [], x: 0, y: 0 });
      c.items.push(p);
      c.x += px.x;
      c.y += px.y;
    });
    Object.keys(cells).forEach(function (k) {
      var c = cells[k], n = c.items.length;
      layer.addLayer(n === 1 ? single(c.items[0]) : group(c.items, map.unproject([c.x / n, c.y / n], z), z));
    });
  }
  map.on('zoomend', draw);

  var pages = Number(box.getAttribute('data-paginas')) || 1, total = 0, missing = 0;
  function read(url, left) {
    return fetch(url, { headers: { Accept: 'application/geo+json' } }).then(function (res) {
      if (!res.ok) throw new Error(res.status);
      return res.json();
    }).then(function (fc) {
      (fc.features || []).forEach(function (f) {
        total++;
        var g = f.geometry, pr = f.properties || {};
        if (!g || g.type !== 'Point') { missing++; return; }
        var l = pr.location || {};
        points.push({ id: f.id, ll: L.latLng(g.coordinates[1], g.coordinates[0]), title: pr.title || '', type: pr.type,
          category: pr.category, urgency: pr.urgency, place: l.place || l.municipio || '' }); // a village's name, not only its municipio's
      });
      if (!fc.nextCursor) return false;
      if (left <= 1) return true;
      var u = new URL(url, location.href);
      u.searchParams.set('cursor', fc.nextCursor);
      return read(u.pathname + u.search, left - 1);
    });
  }
  read(box.getAttribute('data-datos'), pages).then(function (more) {
    summary = function () {
      var extra = [];
      if (missing) extra.push(phrase('sin-coordenadas', missing));
      if (note) extra.push(note);
      if (!points.length) return say('ninguna', 0, extra.join(' '));
      say(more ? 'limite' : 'listo', total, extra.join(' '));
    };
    summary();
    if (points.length) {
      map.fitBounds(L.latLngBounds(points.map(function (p) { return p.ll; })), { padding: [40, 40], maxZoom: 13 });
    }
    draw();
  }).catch(function () {
    map.remove();
    box.hidden = true;
    say('sin-datos');
  });
})();
