// The service worker. The server prepends self.DIRECTAID = {version, urls, offline} (its build and the
// active emergencies decide both: a deploy changes the script, so browsers install the new one) and the
// outbox. The pages of urls (home, forms, emergency pages), the assets and the place list are kept at
// install and open with no signal; pages come from the network first and are refreshed when they do.
(function () {
  'use strict';
  var C = self.DIRECTAID, name = 'directaid-' + C.version, wait = 4000;
  var kept = {};
  C.urls.forEach(function (u) { kept[u] = true; });

  self.addEventListener('install', function (ev) {
    ev.waitUntil(caches.open(name).then(function (c) { return c.addAll(C.urls); }).then(function () { return self.skipWaiting(); }));
  });
  self.addEventListener('activate', function (ev) {
    ev.waitUntil(caches.keys().then(function (keys) {
      return Promise.all(keys.filter(function (k) { return k.indexOf('directaid-') === 0 && k !== name; })
        .map(function (k) { return caches.delete(k); }));
    }).then(function () { return self.clients.claim(); }));
  });

  function cached(req) {
    return caches.open(name).then(function (c) { return c.match(req, { ignoreSearch: true, ignoreVary: true }); });
  }
  function offline() {
    return new Response(C.offline, { status: 503, headers: { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' } });
  }
  // A page: from the network, else (no signal, or no answer in a few seconds) from the cache.
  function page(req, path) {
    var net = fetch(req).then(function (res) {
      if (res.status === 200 && kept[path]) {
        var copy = res.clone();
        caches.open(name).then(function (c) { return c.put(path, copy); });
      }
      return res;
    });
    net.catch(function () { /* answered below */ });
    var slow = new Promise(function (ok) { setTimeout(ok, wait); }).then(function () {
      return cached(req).then(function (m) { return m || net; });
    });
    return Promise.race([net, slow]).catch(function () {
      return cached(req).then(function (m) { return m || offline(); });
    });
  }
  self.addEventListener('fetch', function (ev) {
    var req = ev.request, u = new URL(req.url);
    if (req.method !== 'GET' || u.origin !== self.location.origin) return;
    if (req.mode === 'navigate') {
      ev.respondWith(page(req, u.pathname));
    } else if (kept[u.pathname]) {
      ev.respondWith(cached(req).then(function (m) { return m || fetch(req); }));
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
