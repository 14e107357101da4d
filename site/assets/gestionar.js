// /gestionar with JavaScript: the id and token come from the URL fragment (never sent to the server),
// and each action is a POST to the API with the token in the Authorization header.
(function () {
  "use strict";
  var form = document.getElementById("gestion-formulario");
  if (!form || !window.fetch) return;
  var idIn = document.getElementById("g-id"), tokIn = document.getElementById("g-token");
  var okBox = document.getElementById("gestion-resultado"), okText = document.getElementById("gestion-hecho");
  var errBox = document.getElementById("gestion-errores"), errText = document.getElementById("gestion-error");
  var info = document.getElementById("gestion-publicacion");
  var api = "/api/public/v1/help";
  var frag = new URLSearchParams(location.hash.slice(1));
  // Another manage link opened in this tab changes the fragment alone, and no page loads: the page must
  // not go on acting on the publication it was opened for.
  window.addEventListener("hashchange", function () { location.reload(); });
  if (frag.get("id")) idIn.value = frag.get("id");
  if (frag.get("token")) tokIn.value = frag.get("token");
  // The fields came filled from the link: the advice to paste it is not for this person.
  if (idIn.value && tokIn.value) document.getElementById("gestion-pegar").hidden = true;
  // The manage link pasted whole in either field: its codes, as the server reads them without JavaScript.
  function fromLink(el) {
    var v = el.value.trim(), at = v.search(/[#?]/);
    if (at < 0) return;
    var codes = v.slice(at + 1);
    // The link's «=» and «&» escaped once more by the app it came through.
    if (codes.indexOf("id=") < 0) { try { codes = decodeURIComponent(codes); } catch (e) { return; } }
    if (codes.indexOf("id=") < 0) return;
    var p = new URLSearchParams(codes);
    if (!p.get("id")) return;
    idIn.value = p.get("id").trim();
    tokIn.value = (p.get("token") || (el === tokIn ? "" : tokIn.value)).trim();
  }
  [idIn, tokIn].forEach(function (el) { el.addEventListener("change", function () { fromLink(el); }); });

  function show(ok, text) {
    okBox.hidden = !ok; errBox.hidden = ok;
    (ok ? okText : errText).textContent = text;
    (ok ? okBox : errBox).focus();
  }
  // The buttons follow the record's status (data-acciones: the actions that change it); a record that is
  // gone (withdrawn) has no buttons and no responses left.
  var actions = JSON.parse(form.dataset.acciones || "{}"), gone = false;
  var row = form.querySelector(".acciones"), box = document.getElementById("gestion-respuestas");
  function fit(status) {
    if (!row) return;
    row.hidden = gone;
    if (gone && box) box.hidden = true;
    var ok = actions[status];
    Array.prototype.forEach.call(row.querySelectorAll("button[value]"), function (b) {
      if (b.value !== "responses") b.hidden = !!ok && ok.indexOf(b.value) < 0;
    });
  }
  function describe(withExpiry) {
    fromLink(idIn); fromLink(tokIn);
    var id = idIn.value.trim();
    if (!id) return Promise.resolve();
    // no-cache: the detail is cacheable for a minute, and the status just shown must be the new one.
    return fetch(api + "?view=detail&id=" + encodeURIComponent(id), { headers: { Accept: "application/json" }, cache: "no-cache" })
      .then(function (r) {
        if (r.status === 410) {
          // Hidden while reports are reviewed: its publisher can still withdraw it (its data are kept).
          return r.json().catch(function () { return {}; }).then(function (b) {
            var hidden = b.recordStatus === "hidden";
            info.textContent = hidden ? form.dataset.oculta : form.dataset.noExiste;
            info.hidden = false;
            gone = !hidden;
            fit(hidden ? "hidden" : "");
            return null;
          });
        }
        if (r.status === 404 || r.status === 400) { info.textContent = form.dataset.noHay; info.hidden = false; fit(""); return null; }
        return r.ok ? r.json() : null;
      })
      .then(function (d) {
        if (!d) return;
        var w = { open: "vigente", resolved: "resuelta", withdrawn: "retirada", expired: "vencida", hidden: "oculta mientras se revisa" };
        info.textContent = (d.title || "") + " — " + form.dataset.estado + " " + (w[d.status] || d.status || "") + ".";
        // Until when it shows (unless the line of the action just done says it), as without JavaScript.
        var until = withExpiry !== false && window.colombiaTime(d.expiresAt, form.dataset.meses.split(","));
        if (until) info.textContent += " " + form.dataset.vence.replace("{fecha}", until);
        // An open record without its phone: someone reported it as not the publisher's.
        if (d.status === "open" && !(d.contact && d.contact.whatsapp)) info.textContent += " " + form.dataset.numeroOculto;
        // Resolved, its phone still shows on its page: withdrawing removes it.
        if (d.status === "resolved" && d.contact && d.contact.whatsapp) info.textContent += " " + form.dataset.resuelta;
        if (d.status === "expired") info.textContent += " " + form.dataset.vencida;
        info.hidden = false;
        fit(d.status);
      })
      .catch(function () {});
  }

  // when is a response's time as the page without JavaScript says it: in Colombia's time, whatever the
  // phone's zone.
  function when(iso) {
    var d = new Date(iso);
    try {
      return d.toLocaleString("es-CO", { timeZone: "America/Bogota", day: "numeric", month: "long", year: "numeric",
        hour: "2-digit", minute: "2-digit", hour12: false }) + " (hora de Colombia)";
    } catch (e) { return d.toLocaleString("es-CO"); }
  }

  // phoneText groups a Colombian number for reading (+57 300 123 4567), as the page without JavaScript does:
  // the number the wa.me link writes to, not the one typed («3112223344»).
  function phoneText(e164) {
    var m = /^\+57([0-9]{3})([0-9]{3})([0-9]{4})$/.exec(e164);
    return m ? "+57 " + m[1] + " " + m[2] + " " + m[3] : e164;
  }
  // The responses («yo puedo ayudar»), with the manage token: only the publisher sees them.
  var list = document.getElementById("gestion-respuestas-lista");
  function responses() {
    fromLink(idIn); fromLink(tokIn);
    var id = idIn.value.trim(), tok = tokIn.value.trim();
    if (!id || !tok || !box || gone) return;
    fetch(api + "/" + encodeURIComponent(id) + "/responses", { headers: { Accept: "application/json", Authorization: "Bearer " + tok }, cache: "no-store" })
      .then(function (r) {
        if (r.ok) return r.json();
        // A wrong code says so, as the page without JavaScript does (nothing here looked like «no one answered»).
        return r.json().then(function (b) { show(false, b.error || form.dataset.red); return null; }, function () { return null; });
      })
      .then(function (d) {
        if (!d || gone) return;
        var words = JSON.parse(box.dataset.estados || "{}");
        list.textContent = "";
        (d.items || []).forEach(function (it) {
          var li = document.createElement("li"), p = document.createElement("p"), meta = document.createElement("p");
          p.textContent = it.message || "";
          meta.className = "hint";
          meta.textContent = (it.contactName ? it.contactName + " · " : "") + when(it.createdAt) + " · " + (words[it.status] || it.status);
          li.appendChild(p); li.appendChild(meta);
          if (/^https:\/\/wa\.me\/[0-9]{6,15}$/.test(it.whatsappUrl || "")) {
            var a = document.createElement("a"), pa = document.createElement("p");
            a.href = it.whatsappUrl; a.rel = "noopener"; a.textContent = box.dataset.escribir + " (" + phoneText("+" + it.whatsappUrl.slice("https://wa.me/".length)) + ")";
            pa.appendChild(a); li.appendChild(pa);
          }
          list.appendChild(li);
        });
        // How many answered and how many still count, in the words the page without JavaScript uses.
        // The people helping: one per number among the active responses (manage.go's helpers).
        function people(activeOnly) {
          var seen = {}, n = 0;
          (d.items || []).forEach(function (it) {
            if (activeOnly && it.status !== "active") return;
            if (it.whatsappUrl) { if (seen[it.whatsappUrl]) return; seen[it.whatsappUrl] = true; }
            n++;
          });
          return n;
        }
        var sums = JSON.parse(box.dataset.resumenes || "{}"), total = people(false), active = people(true);
        var key = active === 0 ? (total === 0 ? "none" : total === 1 ? "inactive1" : "inactiveN") : active === 1 ? "one" : "many";
        var sum = document.getElementById("gestion-respuestas-resumen");
        if (sum && sums[key]) { sum.textContent = sums[key].replace("{n}", String(active === 0 ? total : active)); sum.hidden = false; }
        else if (!list.firstChild) { var li = document.createElement("li"); li.textContent = box.dataset.vacio; list.appendChild(li); }
        box.hidden = false;
      })
      .catch(function () {});
  }
  describe().then(responses);

  form.addEventListener("submit", function (ev) {
    var btn = ev.submitter;
    // Enter in a field: the form's default button, first in it, which only shows the publication (a
    // first action button would act: Enter marked it resolved).
    if (btn && btn.hasAttribute("data-abrir")) { ev.preventDefault(); describe().then(responses); return; }
    if (!btn || !btn.value) return;
    ev.preventDefault();
    // Without the codes (nor the link), say so, as the page without JavaScript does.
    fromLink(idIn); fromLink(tokIn);
    var id = idIn.value.trim();
    if (!id || !tokIn.value.trim()) { show(false, form.dataset.faltan); return; }
    if (btn.value === "responses") { responses(); return; }
    if (btn.value === "withdraw" && !window.confirm(form.dataset.confirmar)) return;
    fetch(api + "/" + encodeURIComponent(id) + "/actions", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", Authorization: "Bearer " + tokIn.value.trim() },
      body: JSON.stringify({ action: btn.value })
    }).then(function (r) {
      return r.json().then(function (b) {
        if (r.ok) {
          var when = window.colombiaTime(b.expiresAt, form.dataset.meses.split(","));
          show(true, btn.textContent + ": listo." + (when ? " " + form.dataset.vence.replace("{fecha}", when) : ""));
          describe(!when);
        }
        else show(false, b.error || form.dataset.red);
      });
    }).catch(function () { show(false, form.dataset.red); });
  });
})();
