// The payment page's script (served by us; CSP script-src 'self'). The page works without it
// (meta refresh); with it: copy buttons, a countdown synced to the server clock, and live status
// by polling /pay/<token>/status, re-rendering from the server's own HTML when anything changed.
(function () {
  'use strict';
  var POLL_MS = 2000;
  var main = document.getElementById('pay');
  if (!main) return;
  var clockOffset = 0; // server time minus this device's time
  var timer = null;
  var busy = false;

  function syncClock(serverTime) {
    var t = Date.parse(serverTime);
    if (!isNaN(t)) clockOffset = t - Date.now();
  }

  function formatLeft(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    var h = Math.floor(s / 3600);
    var m = Math.floor((s % 3600) / 60);
    var sec = String(s % 60).padStart(2, '0');
    return h > 0 ? h + ':' + String(m).padStart(2, '0') + ':' + sec : m + ':' + sec;
  }

  function tick() {
    var el = document.getElementById('countdown');
    if (!el) return;
    var left = Date.parse(el.getAttribute('data-expires-at')) - (Date.now() + clockOffset);
    el.textContent = formatLeft(left);
    if (left <= 0) poll();
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    // Plain http: select a temporary field and copy it.
    return new Promise(function (resolve, reject) {
      var area = document.createElement('textarea');
      area.value = text;
      area.setAttribute('readonly', '');
      area.className = 'offscreen';
      document.body.appendChild(area);
      area.select();
      var ok = document.execCommand('copy');
      document.body.removeChild(area);
      if (ok) resolve();
      else reject(new Error('copy failed'));
    });
  }

  // Announces "Copied" to screen readers (the button's own label stays "Copy …").
  var copyAnnouncer = document.createElement('p');
  copyAnnouncer.className = 'offscreen';
  copyAnnouncer.setAttribute('role', 'status');
  copyAnnouncer.setAttribute('aria-live', 'polite');
  document.body.appendChild(copyAnnouncer);

  function wireCopyButtons(root) {
    var buttons = root.querySelectorAll('button[data-copy]');
    for (var i = 0; i < buttons.length; i++) {
      (function (button) {
        var label = button.textContent;
        button.hidden = false;
        button.addEventListener('click', function () {
          copyText(button.getAttribute('data-copy')).then(function () {
            button.textContent = button.getAttribute('data-copied');
            copyAnnouncer.textContent = button.getAttribute('data-copied');
            setTimeout(function () { button.textContent = label; copyAnnouncer.textContent = ''; }, 2000);
          }, function () {});
        });
      })(buttons[i]);
    }
  }

  // Re-render from the server's HTML of this page: one renderer, no template in the browser.
  function rerender() {
    return fetch(location.href, { cache: 'no-store', credentials: 'omit' })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (text) {
        if (!text) return;
        var doc = new DOMParser().parseFromString(text, 'text/html');
        var next = doc.getElementById('pay');
        if (!next) return;
        // The live region stays in place and only its text changes, so it is announced.
        var status = document.getElementById('status');
        var nextStatus = doc.getElementById('status');
        status.className = nextStatus.className;
        document.getElementById('status-heading').textContent = doc.getElementById('status-heading').textContent;
        document.getElementById('status-text').textContent = doc.getElementById('status-text').textContent;
        var body = document.getElementById('pay-body');
        body.innerHTML = doc.getElementById('pay-body').innerHTML;
        var attrs = ['data-state', 'data-version', 'data-server-time', 'data-final'];
        for (var i = 0; i < attrs.length; i++) main.setAttribute(attrs[i], next.getAttribute(attrs[i]));
        document.title = doc.title;
        syncClock(next.getAttribute('data-server-time'));
        wireCopyButtons(body);
        tick();
      });
  }

  function poll() {
    if (busy || main.getAttribute('data-final') === 'true') return;
    busy = true;
    fetch(main.getAttribute('data-status-url'), { cache: 'no-store', credentials: 'omit', headers: { accept: 'application/json' } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (s) {
        if (!s) return;
        syncClock(s.serverTime);
        if (s.version !== main.getAttribute('data-version')) return rerender();
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (main.getAttribute('data-final') === 'true' && timer) clearInterval(timer);
      });
  }

  syncClock(main.getAttribute('data-server-time'));
  wireCopyButtons(document);
  setInterval(tick, 1000);
  if (main.getAttribute('data-final') !== 'true') {
    timer = setInterval(function () { if (!document.hidden) poll(); }, POLL_MS);
    document.addEventListener('visibilitychange', function () { if (!document.hidden) poll(); });
  }
})();
