// The service worker. The server prepends self.DIRECTAID = {version, urls, forms, visit, visited, assets, saved,
// offline} (its build and the active emergencies decide them: a deploy changes the script, so browsers
// install the new one) and the outbox. The pages of urls (home, forms, emergency pages) and the assets
// they use are kept at install; other assets (the place list, the map's) when a page first asks for
// them; and the pages a person opens under a prefix of visit (records, filtered lists, maps), by their
// full URL, the last `visited` of them. Pages come from the network first and are kept again when they
// do; a page that comes from the phone's copy says since when (saved).
(function () {
  'use strict';
  var C = self.DIRECTAID, name = 'directaid-' + C.version, VISITS = 'directaid-visitas', wait = 4000;
  var STAMP = 'X-Directaid-Guardada', kept = {};
  C.urls.forEach(function (u) { kept[u] = true; });
  function noop() { /* nothing to do */ }

  // stamped is res with the time it was kept, which the page shows when it comes from the cache.
  function stamped(res) {
    return res.blob().then(function (b) {
      var h = new Headers(res.headers);
      h.set(STAMP, String(Date.now()));
      return new Response(b, { status: res.status, statusText: res.statusText, headers: h });
    });
  }
  self.addEventListener('install', function (ev) {
    ev.waitUntil(caches.open(name).then(function (c) {
      return Promise.all(C.urls.map(function (u) {
        return fetch(u).then(function (res) {
          if (!res.ok) throw new Error(u + ': ' + res.status);
          return stamped(res).then(function (s) { return c.put(u, s); });
        });
      }));
    }).then(function () { return self.skipWaiting(); }));
  });
  self.addEventListener('activate', function (ev) {
    ev.waitUntil(caches.keys().then(function (keys) {
      return Promise.all(keys.filter(function (k) { return k.indexOf('directaid-') === 0 && k !== name && k !== VISITS; })
        .map(function (k) { return caches.delete(k); }));
    }).then(function () { return self.clients.claim(); }));
  });

  // keep stores a page just read: one of urls in the version's cache, a visited one in VISITS (the
  // newest last; the oldest go beyond C.visited).
  function keep(key, path, res) {
    if (kept[key]) return stamped(res).then(function (s) { return caches.open(name).then(function (c) { return c.put(key, s); }); });
    var visit = kept[path] || C.visit.some(function (p) { return path.indexOf(p) === 0; });
    if (!visit) return Promise.resolve();
    return Promise.all([stamped(res), caches.open(VISITS)]).then(function (r) {
      var c = r[1];
      return c.delete(key).then(function () { return c.put(key, r[0]); }).then(function () { return c.keys(); }).then(function (keys) {
        return Promise.all(keys.slice(0, Math.max(0, keys.length - C.visited)).map(function (k) { return c.delete(k); }));
      });
    });
  }
  // fromCache is the kept copy of exactly this URL (path and query), with a note saying when it was kept;
  // for a form (C.forms) opened with a query (/pedir?emergencia=…, from an emergency's page), the form's.
  function fromCache(key, path) {
    return caches.match(key, { ignoreVary: true }).then(function (m) {
      if (!m && key !== path && C.forms.indexOf(path) >= 0) return caches.match(path, { ignoreVary: true });
      return m;
    }).then(function (m) { return m && withNote(m); });
  }
  function withNote(res) {
    var t = Number(res.headers.get(STAMP));
    if (!t || (res.headers.get('Content-Type') || '').indexOf('text/html') !== 0) return res;
    return res.text().then(function (html) {
      var d = new Date(t), two = function (n) { return (n < 10 ? '0' : '') + n; };
      var when = two(d.getHours()) + ':' + two(d.getMinutes());
      if (d.toDateString() !== new Date().toDateString()) when += ' del ' + d.getDate() + '/' + (d.getMonth() + 1);
      var note = '<p class="aviso guardada" role="status">' + C.saved.replace('{hora}', when) + '</p>';
      var h = new Headers(res.headers);
      h.delete('Content-Length');
      return new Response(html.replace('<main id="contenido">', '<main id="contenido">' + note),
        { status: res.status, statusText: res.statusText, headers: h });
    });
  }
  function offline() {
    return new Response(C.offline, { status: 503, headers: { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' } });
  }
  // A page: from the network, else (no signal, or no answer in a few seconds) the copy of its URL.
  function page(req, u) {
    var key = u.pathname + u.search;
    var net = fetch(req).then(function (res) {
      if (res.status === 200) keep(key, u.pathname, res.clone()).catch(noop);
      else if (res.status === 404 || res.status === 410) caches.open(VISITS).then(function (c) { return c.delete(key); }).catch(noop);
      return res;
    });
    net.catch(noop);
    var slow = new Promise(function (ok) { setTimeout(ok, wait); }).then(function () {
      return fromCache(key, u.pathname).then(function (m) { return m || net; });
    });
    return Promise.race([net, slow]).catch(function () {
      return fromCache(key, u.pathname).then(function (m) { return m || offline(); });
    });
  }
  // An asset (its URL holds a hash of its content, so a kept copy is always right): from the cache, else
  // from the network, then kept. Offline, an asset of a page kept by an earlier version of the site is
  // answered with today's asset of the same name.
  function asset(req, u) {
    return caches.open(name).then(function (c) {
      return c.match(u.pathname).then(function (m) {
        return m || fetch(req).then(function (res) {
          if (res.status === 200) c.put(u.pathname, res.clone()).catch(noop);
          return res;
        }, function (err) {
          var n = /^\/assets\/(.+)\.[0-9a-f]{10}(\.[a-z]+)$/.exec(u.pathname), now = n && C.assets[n[1] + n[2]];
          return (now ? c.match(now) : Promise.resolve()).then(function (m) { if (m) return m; throw err; });
        });
      });
    });
  }
  self.addEventListener('fetch', function (ev) {
    var req = ev.request, u = new URL(req.url);
    if (req.method !== 'GET' || u.origin !== self.location.origin) return;
    if (req.mode === 'navigate') {
      ev.respondWith(page(req, u));
    } else if (u.pathname.indexOf('/assets/') === 0) {
      ev.respondWith(asset(req, u));
    }
  });

  // Background Sync: send the outbox, tell the open pages, and fail while something waits (the browser
  // then tries again later).
  self.addEventListener('sync', function (ev) {
    if (ev.tag !== 'bandeja' || !self.directaidOutbox) return;
    ev.waitUntil(self.directaidOutbox.flush(function (item, data) {
      return self.clients.matchAll({ includeUncontrolled: true }).then(function (cs) {
        cs.forEach(function (c) { c.postMessage({ type: 'directaid:enviada', item: item, data: data }); });
      });
    }).then(function (n) { if (n) throw new Error('pendiente'); }));
  });
})();
