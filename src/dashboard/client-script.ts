/**
 * The dashboard's browser script, served as /dashboard/dashboard.js. Plain ES2020 (no build
 * step); kept as text here so it ships inside the compiled service. It must not contain
 * backquotes or dollar-brace sequences.
 *
 * The tokens (access and refresh) and the subscription key live in this closure only: nothing
 * is written to storage, cookies or the URL, so a reload signs out. Shortly before the access
 * token expires, or on a 401, the refresh token gets a new one (once; one refresh at a time, as
 * a spent refresh token presented twice ends the sign-in); only a refused refresh signs out.
 * "Sign out" also revokes the refresh token (RFC 7009) where the page knows a revocation endpoint,
 * so a copy of it elsewhere stops working too.
 */
export const dashboardScript = String.raw`
(function () {
  'use strict';
  var body = document.body;
  var tokenUrl = body.getAttribute('data-token-url');
  var revocationUrl = body.getAttribute('data-revocation-url');
  var refreshMs = Number(body.getAttribute('data-refresh-seconds') || 5) * 1000;
  var session = null;
  var timer = null;
  var arrivalsChart = null;
  var lastUpdate = null;
  var shown = 0;
  var $ = function (id) { return document.getElementById(id); };

  function setStatus(text) { $('status').textContent = text; }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) { node.append(c instanceof Node ? c : document.createTextNode(String(c))); });
    return node;
  }

  function table(caption, headers, rows) {
    var head = el('tr', {}, headers.map(function (h, i) { return el('th', { scope: 'col', class: i > 0 ? 'num' : '' }, [h]); }));
    var lines = rows.map(function (r) {
      return el('tr', {}, r.map(function (v, i) { return i === 0 ? el('th', { scope: 'row' }, [v]) : el('td', { class: 'num' }, [v]); }));
    });
    var t = el('table', {}, [el('caption', {}, [caption]), el('thead', {}, [head]), el('tbody', {}, lines)]);
    return el('div', { class: 'table-scroll' }, [t]);
  }

  /**
   * 'YYYY-MM-DD HH:mm' on the event's clock: the IANA zone the server reads the event on
   * (ianaTimeZone: its timeZoneId with Windows names mapped, else the account's, else UTC);
   * UTC (and says so) when the browser does not know the zone.
   */
  function localStamp(iso, zone) {
    try {
      var parts = {};
      new Intl.DateTimeFormat('en-GB', { timeZone: zone || 'UTC', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
        .formatToParts(new Date(iso)).forEach(function (p) { parts[p.type] = p.value; });
      return parts.year + '-' + parts.month + '-' + parts.day + ' ' + parts.hour + ':' + parts.minute + (zone && zone !== 'UTC' ? '' : ' UTC');
    } catch (e) {
      return zone ? localStamp(iso, null) : String(iso).slice(0, 16).replace('T', ' ') + ' UTC';
    }
  }

  /** The event running now (the latest started), else the one whose start or end is nearest to now. */
  function currentEvent(items) {
    var now = Date.now();
    var start = function (ev) { return Date.parse(ev.startTime); };
    var end = function (ev) { return Date.parse(ev.endTime); };
    var distance = function (ev) { return Math.min(Math.abs(now - start(ev)), Math.abs(now - end(ev))); };
    var running = items.filter(function (ev) { return start(ev) <= now && now < end(ev); });
    if (running.length) return running.reduce(function (a, b) { return start(b) >= start(a) ? b : a; });
    return items.reduce(function (a, b) { return distance(b) < distance(a) ? b : a; });
  }

  /** Every page of the caller's events (the list is paged by start time, the newest last). */
  function allEvents(cursor, items) {
    return api('/checkin/v1/api/events?limit=1000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')).then(function (page) {
      items = items.concat(page.items);
      return page.nextCursor ? allEvents(page.nextCursor, items) : items;
    });
  }

  /** POSTs a token request; resolves with the reply, its JSON read (an empty object when it is not JSON). */
  function tokenRequest(fields) {
    return fetch(tokenUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) })
      .then(function (res) { return res.json().catch(function () { return {}; }).then(function (json) { return { ok: res.ok, status: res.status, json: json }; }); });
  }

  function startSession(reply, key) {
    return {
      token: reply.access_token,
      refreshToken: reply.refresh_token || null,
      expiresAt: reply.expires_in > 0 ? Date.now() + Number(reply.expires_in) * 1000 : null,
      // Refresh this long before expiry: a minute, or a tenth of a shorter lifetime.
      margin: Math.min(60000, Number(reply.expires_in) * 100) || 0,
      key: key,
      refreshing: null,
    };
  }

  /**
   * A new access token from the refresh token (RFC 6749 section 6). Resolves true when the session
   * has one, false when the identity provider refused (the session is over); rejects when it could
   * not be asked (offline: the session stays and the next poll tries again).
   */
  function refreshSession() {
    var current = session;
    if (!current || !current.refreshToken) return Promise.resolve(false);
    if (current.refreshing) return current.refreshing;
    current.refreshing = tokenRequest({ grant_type: 'refresh_token', client_id: 'checkin-app', refresh_token: current.refreshToken })
      .then(function (reply) {
        if (session !== current) return false;
        if (reply.ok && reply.json.access_token) {
          var next = startSession(reply.json, current.key);
          // A provider that does not rotate answers no new refresh token: the old one stays (RFC 6749 section 6).
          current.token = next.token;
          current.expiresAt = next.expiresAt;
          current.margin = next.margin;
          if (next.refreshToken) current.refreshToken = next.refreshToken;
          return true;
        }
        if (reply.status >= 400 && reply.status < 500) { current.refreshToken = null; return false; }
        throw new Error('the sign-in service answered HTTP ' + reply.status);
      })
      .finally(function () { current.refreshing = null; });
    return current.refreshing;
  }

  function ended(message) {
    signOut('Your session ended (' + (message || 'unauthorized') + '). Sign in again.');
    return new Error('unauthorized');
  }

  function api(path, retried) {
    if (!session) return Promise.reject(new Error('unauthorized'));
    // Shortly before the access token expires (a minute, or a tenth of a short lifetime), refresh it first.
    var current = session;
    var soon = current.expiresAt && current.refreshToken && Date.now() > current.expiresAt - current.margin;
    var ready = soon && !retried ? refreshSession().catch(function () { return true; }) : Promise.resolve(true);
    return ready.then(function (ok) {
      if (!ok) throw ended('the sign-in could not be renewed');
      var used = current.token;
      return fetch(path, {
        headers: { authorization: 'Bearer ' + used, 'ocp-apim-subscription-key': current.key, accept: 'application/json' },
      }).then(function (res) {
        return res.json().catch(function () { return {}; }).then(function (json) {
          if (res.status === 401) {
            if (session !== current) throw new Error('unauthorized');
            if (retried || !current.refreshToken) throw ended(json.message);
            // Another request may have refreshed meanwhile: retry with its token, else refresh once.
            var renewed = current.token !== used ? Promise.resolve(true) : refreshSession();
            return renewed.then(function (again) {
              if (!again) throw ended(json.message);
              return api(path, true);
            });
          }
          if (!res.ok) { var e = new Error(json.message || ('HTTP ' + res.status)); e.status = res.status; e.code = json.code; throw e; }
          return json;
        });
      });
    });
  }

  function signIn(event) {
    event.preventDefault();
    var form = new URLSearchParams({
      grant_type: 'password',
      client_id: 'checkin-app',
      username: $('username').value,
      password: $('password').value,
    });
    var key = $('subscription-key').value.trim();
    $('login-error').textContent = '';
    if (!key) { $('login-error').textContent = 'Enter the account\u2019s subscription key.'; return; }
    setStatus('Signing in\u2026');
    tokenRequest(form)
      .then(function (reply) {
        if (!reply.ok || !reply.json.access_token) {
          throw new Error(reply.json.error_description || reply.json.message || reply.json.error || (reply.ok ? 'sign-in failed' : 'the sign-in service answered HTTP ' + reply.status));
        }
        session = startSession(reply.json, key);
        $('password').value = '';
        return allEvents(null, []);
      })
      .then(function (items) {
        var select = $('event');
        select.textContent = '';
        items.forEach(function (ev) { select.append(el('option', { value: ev.id }, [ev.title + ' (' + localStamp(ev.startTime, ev.ianaTimeZone || ev.timeZoneId) + ')'])); });
        if (items.length === 0) throw new Error('this account has no events yet');
        select.value = currentEvent(items).id;
        $('login').hidden = true;
        $('board').hidden = false;
        $('event').focus();
        refresh();
      })
      .catch(function (err) {
        if (err.message === 'unauthorized') return;
        session = null;
        $('login-error').textContent = 'Could not sign in: ' + err.message;
        setStatus('Not signed in.');
      });
  }

  /** RFC 7009: ends the sign-in at the identity provider; the page forgets it whatever the answer. */
  function revokeSession(current) {
    if (!revocationUrl || !current || !current.refreshToken) return;
    fetch(revocationUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: current.refreshToken, token_type_hint: 'refresh_token', client_id: 'checkin-app' }),
    }).catch(function () {});
  }

  function signOut(message) {
    session = null;
    shown++;
    lastUpdate = null;
    $('board').removeAttribute('data-stale');
    clearTimeout(timer);
    $('board').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
    setStatus('Not signed in.');
  }

  function refresh() {
    clearTimeout(timer);
    if (!session) return;
    // A tab in the background asks nothing (a dashboard left open all night on a laptop); it
    // catches up at once when shown again (the visibilitychange listener below).
    if (document.hidden) { setStatus('Paused while this tab is hidden' + (lastUpdate ? '; figures from ' + lastUpdate.toLocaleTimeString() : '') + '.'); return; }
    var eventId = $('event').value;
    var bucket = $('bucket').value;
    var id = encodeURIComponent(eventId);
    // An answer for the event or bucket shown before a change is not drawn over the new one's.
    var ask = ++shown;
    Promise.all([
      api('/checkin/v1/api/event/' + id + '/timeline?bucket=' + bucket + '&by=gate'),
      api('/comms/v1/api/comms/funnel?eventId=' + id).catch(function (err) { return { unavailable: err.message }; }),
    ])
      .then(function (results) {
        if (ask !== shown) return;
        renderTimeline(results[0]);
        renderFunnel(results[1]);
        lastUpdate = new Date();
        $('board').removeAttribute('data-stale');
        setStatus('Updated ' + lastUpdate.toLocaleTimeString() + ' \u00b7 refreshes every ' + refreshMs / 1000 + ' s');
      })
      .catch(function (err) {
        if (err.message === 'unauthorized' || ask !== shown) return;
        // The figures on screen stay, marked as old: say since when, not just that this poll failed.
        $('board').setAttribute('data-stale', 'true');
        setStatus('Update failed at ' + new Date().toLocaleTimeString() + ': ' + err.message + '. '
          + (lastUpdate ? 'The figures shown are from ' + lastUpdate.toLocaleTimeString() : 'No figures yet') + '; retrying.');
      })
      .then(function () { if (session && ask === shown) timer = setTimeout(refresh, refreshMs); });
  }

  function renderTimeline(timeline) {
    var totals = timeline.totals;
    $('inside-now').textContent = totals.insideNow;
    // People, as inside-now counts them: admitted at the door and imported as admitted (a guest
    // create with admitted set), so that admitted less exits is inside now.
    $('admitted').textContent = totals.admitted + (totals.importedAdmitted || 0);
    $('exits').textContent = totals.exits + (totals.importedExits || 0);
    $('rejected').textContent = totals.rejectedTotal;
    var buckets = timeline.buckets;
    var xs = buckets.map(function (b) { return Date.parse(b.start) / 1000; });
    var data = [xs, buckets.map(function (b) { return b.admitted; }), buckets.map(function (b) { return b.insideNow; })];
    drawArrivals(data, timeline.timeZone);
    $('arrivals-chart').setAttribute('aria-label', 'Chart of people admitted per ' + timeline.bucketMinutes + '-minute bucket and people inside; '
      + totals.admitted + ' admitted in all, ' + totals.insideNow + ' inside now. The table below has the same figures.');
    $('arrivals-table').replaceChildren(table('Per bucket (' + timeline.timeZone + ')', ['Starts', 'Admitted', 'Exits', 'Rejected', 'Inside'],
      buckets.map(function (b) { return [b.localStart.replace('T', ' '), b.admitted, b.exits, b.rejectedTotal, b.insideNow]; })));

    var reasons = Object.keys(totals.rejected).sort(function (a, b) { return totals.rejected[b] - totals.rejected[a]; });
    var most = reasons.length ? totals.rejected[reasons[0]] : 1;
    $('rejects').replaceChildren(reasons.length === 0 ? el('p', {}, ['No rejected scans.']) : table('Scans refused at the door', ['Reason', 'Scans'],
      reasons.map(function (r) {
        var bar = el('span', { class: 'bar', 'aria-hidden': 'true' });
        bar.style.width = Math.round(60 * totals.rejected[r] / most) + 'px';
        return [r.replace(/_/g, ' '), el('span', {}, [String(totals.rejected[r]), bar])];
      })));

    // Gate names are free text: "constructor" or "__proto__" must not meet Object.prototype.
    var gates = Object.create(null);
    buckets.forEach(function (b) {
      Object.keys(b.groups || {}).forEach(function (g) {
        var t = gates[g] || (gates[g] = { admissions: 0, admitted: 0, last: 0 });
        t.admissions += b.groups[g].admissions;
        t.admitted += b.groups[g].admitted;
      });
    });
    var latest = buckets.length ? buckets[buckets.length - 1] : null;
    Object.keys((latest && latest.groups) || {}).forEach(function (g) { gates[g].last = latest.groups[g].admissions; });
    var names = Object.keys(gates).sort();
    $('gates').replaceChildren(names.length === 0 ? el('p', {}, ['No admissions yet.']) : table(
      'Admissions (scans) per gate; last bucket = the latest ' + timeline.bucketMinutes + ' min with activity',
      ['Gate', 'Last bucket', 'Per minute', 'All', 'People'],
      names.map(function (g) { var t = gates[g]; return [g, t.last, (t.last / timeline.bucketMinutes).toFixed(1), t.admissions, t.admitted]; })));
  }

  function drawArrivals(data, timeZone) {
    var box = $('arrivals-chart');
    var width = Math.max(280, box.clientWidth);
    if (typeof uPlot === 'undefined') { box.textContent = 'The chart library did not load; the table below has the figures.'; return; }
    if (arrivalsChart && arrivalsChart.timeZone === timeZone) {
      arrivalsChart.setData(data);
      arrivalsChart.setSize({ width: width, height: 260 });
      return;
    }
    if (arrivalsChart) arrivalsChart.destroy();
    var bars = uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.8, 40] }) : undefined;
    arrivalsChart = new uPlot({
      width: width,
      height: 260,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), timeZone); },
      series: [
        { label: 'Time' },
        { label: 'Admitted', stroke: '#0b4f8a', fill: 'rgba(11,79,138,0.35)', paths: bars, points: { show: false } },
        { label: 'Inside', stroke: '#a4161a', width: 2 },
      ],
      axes: [{}, { label: 'People' }],
    }, data, box);
    arrivalsChart.timeZone = timeZone;
  }

  function pct(rate) { return rate === null || rate === undefined ? '\u2013' : Math.round(rate * 1000) / 10 + ' %'; }
  function duration(seconds) {
    if (seconds === null || seconds === undefined) return '\u2013';
    var h = Math.floor(seconds / 3600), m = Math.round((seconds % 3600) / 60);
    return h > 0 ? h + ' h ' + m + ' min' : m + ' min';
  }

  function renderFunnel(funnel) {
    if (funnel.unavailable) { $('funnel').replaceChildren(el('p', {}, ['Funnel unavailable: ' + funnel.unavailable])); return; }
    var rows = funnel.byTemplate.map(function (t) { return [t.templateName || t.templateId, t]; });
    rows.push(['All templates', funnel.totals]);
    $('funnel').replaceChildren(table('Guests at each step (distinct guests)',
      ['Template', 'Invited', 'Sent', 'Delivered', 'Opened', 'Bounced, dropped, spam, unsubscribed', 'Checked in', 'Check-in rate', 'Median send \u2192 arrival'],
      rows.map(function (r) { var f = r[1]; return [r[0], f.invited, f.sent, f.delivered, f.opened, f.bounced + f.dropped + f.spamReported + f.unsubscribed, f.checkedIn, pct(f.rates.checkedIn), duration(f.medianSendToArrivalSeconds)]; })));
  }

  $('login-form').addEventListener('submit', signIn);
  $('logout').addEventListener('click', function () { revokeSession(session); signOut('Signed out.'); $('username').focus(); });
  $('event').addEventListener('change', function () {
    if (arrivalsChart) { arrivalsChart.destroy(); arrivalsChart = null; }
    // Nothing of the event shown before stays on screen under the new one's name.
    ['inside-now', 'admitted', 'exits', 'rejected'].forEach(function (id) { $(id).textContent = '\u2013'; });
    ['arrivals-chart', 'arrivals-table', 'rejects', 'gates', 'funnel'].forEach(function (id) { $(id).replaceChildren(); });
    lastUpdate = null;
    refresh();
  });
  $('bucket').addEventListener('change', refresh);
  document.addEventListener('visibilitychange', function () { if (!document.hidden && session) refresh(); });
  window.addEventListener('resize', function () { if (arrivalsChart) arrivalsChart.setSize({ width: Math.max(280, $('arrivals-chart').clientWidth), height: 260 }); });
})();
`;
