// The outbox: publications a person sent with no signal, kept on the phone in IndexedDB (which the
// service worker reads too) with their externalId already fixed, so that sending one again is always
// safe. Shared by the pages (site.js) and the service worker (sw.js), which the server builds with it.
self.directaidOutbox = (function () {
  'use strict';
  if (!self.indexedDB || !self.fetch || !self.Promise) return null;
  var STORE = 'bandeja';

  function tx(mode, fn) {
    return new Promise(function (ok, fail) {
      var o = indexedDB.open('directaid', 1);
      o.onupgradeneeded = function () { o.result.createObjectStore(STORE, { keyPath: 'externalId' }); };
      o.onerror = function () { fail(o.error); };
      o.onsuccess = function () {
        var db = o.result, t = db.transaction(STORE, mode), req = fn(t.objectStore(STORE));
        t.oncomplete = function () { db.close(); ok(req.result); };
        t.onerror = t.onabort = function () { db.close(); fail(t.error); };
      };
    });
  }
  function put(item) { return tx('readwrite', function (s) { return s.put(item); }); }
  function all() { return tx('readonly', function (s) { return s.getAll(); }); }
  function remove(id) { return tx('readwrite', function (s) { return s.delete(id); }); }

  // sent keeps of a published item only what its publisher needs to manage it (never the form's body,
  // which holds the phone), until a page moves it to localStorage (site.js): the service worker may send
  // it with no page open. A crossing resend's answer without a link leaves the earlier one's.
  function sent(item, data) {
    var title = '';
    try { title = JSON.parse(item.body).title || ''; } catch (e) { /* no body: already sent */ }
    return tx('readwrite', function (s) {
      var get = s.get(item.externalId);
      get.onsuccess = function () {
        var old = (get.result && get.result.sent) || {};
        s.put({ externalId: item.externalId, action: item.action, sent: { id: data.id || old.id, title: title || old.title || '',
          publicUrl: data.publicUrl || old.publicUrl, manageUrl: data.manageUrl || old.manageUrl } });
      };
      return get;
    });
  }

  var sending = null;
  // flush sends every saved publication in turn, and stops at the first without an answer. done(item,
  // data) hears of each settled one: published (data.ok; the item is kept as sent), or refused
  // (item.rejected holds the answer, and the item stays until its form shows the errors). It resolves
  // to how many still wait.
  function flush(done) {
    if (sending) return sending;
    var left = 0;
    sending = all().then(function (items) {
      return items.reduce(function (p, item) {
        if (item.rejected || item.sent) return p;
        return p.then(function () {
          if (left) { left++; return null; }
          // A weak signal can leave a request hanging: give up after a while, and try again later.
          var ctl = self.AbortController ? new AbortController() : null, timer = ctl && setTimeout(function () { ctl.abort(); }, 15000);
          return fetch(item.api, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: item.body, signal: ctl && ctl.signal })
            .then(function (res) {
              clearTimeout(timer);
              return res.json().catch(function () { return {}; }).then(function (data) {
                if ((res.status === 200 || res.status === 201) && data.ok) {
                  return sent(item, data).then(function () { done(item, data); });
                }
                // Refused only by the API's own answer: a 4xx with its JSON error. Anything else (a Wi-Fi
                // portal's page, a proxy's, a 408, 429 or 5xx) is no answer yet: it waits and is sent again.
                if (res.status < 400 || res.status >= 500 || res.status === 408 || res.status === 429 || !data.code) { left++; return null; }
                item.rejected = { status: res.status, data: data };
                return put(item).then(function () { done(item, data); });
              });
            }, function () { left++; });
        });
      }, Promise.resolve());
    }).then(function () { return left; }, function () { return left || 1; }).then(function (n) {
      sending = null;
      return n;
    });
    return sending;
  }
  return { put: put, all: all, remove: remove, flush: flush };
})();
