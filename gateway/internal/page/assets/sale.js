// sale.js: the sale page's script. The page is the same for every buyer; this
// script reads the sale id from the URL, the sale from the public API, and
// the buyer's bearer token from where the shop keeps it (the <html>
// element's data-token: "localStorage:<key>" or "cookie:<name>"). Words come
// from i18n.js (every text is a message, kept as key and values so that a
// switch of language shows it again), the shop's look from brand.js.
//
// States (main[data-state]): loading, signin, countdown, open, ticket,
// queued, busy, proof, buying, processing, reserved, paying, paid,
// cancelling, cancelled, expired, failed, soldout, ended, paused, limited,
// error, notfound. The page never says "reserved" before the order is
// persisted.
'use strict';
(() => {
  const API = '/api/flash-sales';
  const I = FlashSale.i18n;
  const { t, msg } = I;
  const root = document.documentElement.dataset;
  const $ = (id) => document.getElementById(id);
  const main = $('main');
  const el = {
    title: $('title'), when: $('when'), list: $('item-list'), choice: $('choice'), choices: $('choices'),
    countdown: $('countdown'), status: $('status'), alert: $('alert'), progress: $('progress'),
    buy: $('buy'), retry: $('retry'), order: $('order'), orderH: $('order-h'), orderText: $('order-text'),
    payLeft: $('pay-left'), pay: $('pay'), cancel: $('cancel'), orderId: $('order-id'),
    who: $('who'), signin: $('signin'), userId: $('user-id'), signout: $('signout'),
    items: $('items'), account: $('account'),
  };
  const m = /^\/sale\/([1-9][0-9]{0,18})\/?$/.exec(location.pathname);
  const saleId = m ? m[1] : null;

  let sale = null;          // the sale description
  let offset = 0;           // server clock minus client clock, ms
  let state = 'loading';
  let orderId = null;
  let orderExpires = 0;     // server ms
  let idemKey = null;       // Idempotency-Key of the current purchase attempt
  let ticketRetried = false;
  let soldOutSeen = -Infinity; // when a purchase or ticket was told SOLD_OUT (server ms)
  let held = null;            // {ticket, expires}: handed out after a wait in the pre-queue, not used yet
  let joinAt = 0;             // server ms from which the page joins the pre-queue (0: joined, or none)
  let retries = 0;            // fresh challenges or passes asked for in this attempt
  let busyTries = 0;          // 503s of the queue waited out in this attempt
  let inQueue = false;        // this attempt has been answered QUEUED
  let timers = [];
  // What the page says, as messages (shown again on a switch of language).
  const says = { status: null, alert: null, order: null, notFound: null };
  // The order the page knows of is kept in localStorage, shared by this
  // browser's tabs (a 'storage' event tells the others), for its user.
  const orderKey = () => 'flashsale.order.' + saleId;

  const now = () => Date.now() + offset;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // ---- the bearer token -------------------------------------------------
  const [tokenKind, tokenName] = (root.token || 'localStorage:flashsale.token').split(':');
  function getToken() {
    if (tokenKind === 'cookie') {
      for (const part of document.cookie.split(';')) {
        const [k, v] = part.trim().split('=');
        if (k === tokenName && v) return decodeURIComponent(v);
      }
      return null;
    }
    try { return localStorage.getItem(tokenName); } catch (e) { return null; }
  }
  function setToken(tok) {
    if (tokenKind === 'cookie') {
      document.cookie = tokenName + '=' + (tok ? encodeURIComponent(tok) : '') + '; path=/; SameSite=Strict' +
        (tok ? '' : '; max-age=0') + (location.protocol === 'https:' ? '; Secure' : '');
      return;
    }
    try { tok ? localStorage.setItem(tokenName, tok) : localStorage.removeItem(tokenName); } catch (e) { /* private mode */ }
  }
  function tokenClaims(tok) {
    try { return JSON.parse(atob(tok.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))) || {}; } catch (e) { return {}; }
  }
  function tokenUser(tok) {
    const p = tok ? tokenClaims(tok) : {};
    return p.sub ? String(p.sub) : null;
  }
  // tokenExpired: the token's exp (if it has one) is past by the server's
  // clock. The gateway decides; this only spares the buyer a refused click.
  function tokenExpired(tok) {
    const exp = tokenClaims(tok).exp;
    return typeof exp === 'number' && exp * 1000 <= now();
  }

  // ---- talking to the gateway -------------------------------------------
  async function call(method, path, headers) {
    const h = Object.assign({}, headers || {});
    const tok = getToken();
    if (tok) h.Authorization = 'Bearer ' + tok;
    let resp;
    try {
      resp = await fetch(API + path, { method, headers: h, credentials: 'same-origin', cache: 'no-store' });
    } catch (e) {
      return { status: 0, body: {}, retryAfter: 2 };
    }
    let body = {};
    try { body = await resp.json(); } catch (e) { /* empty or not JSON */ }
    const ra = parseInt(resp.headers.get('Retry-After') || '', 10);
    return { status: resp.status, body, retryAfter: Number.isFinite(ra) && ra > 0 ? ra : 1 };
  }

  async function syncClock() {
    let best = Infinity;
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      let r;
      try { r = await fetch(API + '/time', { cache: 'no-store' }); } catch (e) { continue; }
      const t1 = Date.now();
      if (!r.ok) continue;
      const { serverTime } = await r.json();
      const server = Date.parse(serverTime);
      if (Number.isFinite(server) && t1 - t0 < best) {
        best = t1 - t0;
        offset = server - (t0 + t1) / 2;
      }
    }
  }

  async function loadSale() {
    let r;
    try { r = await fetch(API + '/sales/' + saleId, { cache: 'no-cache' }); } catch (e) { return false; }
    if (r.status === 404) { sale = null; return 'notfound'; }
    if (!r.ok) return false;
    sale = await r.json();
    // How old the copy is (a CDN's Age): an old copy must not undo a
    // SOLD_OUT answer the page had since.
    const age = parseInt(r.headers.get('Age') || '0', 10);
    sale.asOf = now() - (age > 0 ? age * 1000 : 0);
    sale.start = Date.parse(sale.startsAt);
    sale.end = Date.parse(sale.endsAt);
    sale.queueOpens = sale.queueOpensAt ? Date.parse(sale.queueOpensAt) : null;
    return true;
  }

  // ---- rendering ---------------------------------------------------------
  function renderSale() {
    document.title = t('title.sale', { sale: sale.name });
    el.title.textContent = sale.name;
    el.when.textContent = t('sale.when', { start: I.dateTime(sale.start), end: I.dateTime(sale.end) });
    FlashSale.brand.show(sale);
    const keep = chosenItem();
    el.list.replaceChildren();
    el.choices.replaceChildren();
    const many = sale.items.length > 1;
    el.choice.hidden = !many;
    el.list.hidden = many;
    sale.items.forEach((it, i) => {
      const left = it.remaining == null ? '' : ' · ' + (it.remaining > 0
        ? t('item.left', { left: I.number(it.remaining), quantity: I.number(it.quantity) }) : t('item.soldout'));
      const img = FlashSale.brand.image(it.itemId, it.image);
      const about = document.createElement('span');
      about.className = 'about';
      const name = document.createElement('span');
      name.className = 'name';
      name.textContent = it.name;
      about.append(name, left);
      if (it.description) {
        const d = document.createElement('span');
        d.className = 'desc';
        d.textContent = it.description;
        about.append(d);
      }
      const price = document.createElement('span');
      price.className = 'price';
      price.textContent = I.money(it.price, it.currency);
      if (many) {
        const label = document.createElement('label');
        const input = document.createElement('input');
        input.type = 'radio'; input.name = 'item'; input.value = it.itemId;
        input.checked = keep ? String(it.itemId) === keep : i === 0;
        label.append(input);
        if (img) label.append(img);
        label.append(about, price);
        el.choices.append(label);
      } else {
        const li = document.createElement('li');
        if (img) li.append(img);
        li.append(about, price);
        el.list.append(li);
      }
    });
  }
  function chosenItem() {
    const r = el.choices.querySelector('input[name=item]:checked');
    return r ? r.value : sale && sale.items.length ? String(sale.items[0].itemId) : null;
  }

  // say shows messages on the status line (announced); warn in the alert.
  function say(refs) { says.status = refs; el.status.textContent = I.text(refs); }
  function warn(refs) { says.alert = refs; el.alert.textContent = I.text(refs); }
  function orderSays(refs) { says.order = refs; el.orderText.textContent = I.text(refs); }

  // set moves to state s: the status line (announced), the alert (errors),
  // which controls show. focus names an element to move focus to.
  function set(s, status, opts) {
    const o = opts || {};
    state = s;
    main.dataset.state = s;
    // Busy only while loading: aria-busy on main would hold back the
    // announcements of the status line inside it.
    main.setAttribute('aria-busy', String(s === 'loading'));
    say(status || null);
    warn(o.alert || null);
    el.progress.hidden = !['ticket', 'busy', 'buying', 'processing', 'paying', 'cancelling', 'proof', 'queued'].includes(s);
    el.retry.hidden = !o.retry;
    const inOrder = ['processing', 'reserved', 'paying', 'paid', 'cancelling', 'cancelled', 'expired', 'failed'].includes(s) && orderId;
    el.order.hidden = !inOrder;
    el.pay.hidden = el.cancel.hidden = s !== 'reserved';
    // After a cancelled, expired or failed order the buyer may buy again;
    // after an error the retry button is the one way on.
    el.buy.hidden = (!!inOrder && !afterOrder(s)) || !!o.retry || s === 'notfound';
    showBuyable();
    if (o.focus) o.focus.focus();
  }
  const afterOrder = (s) => ['cancelled', 'expired', 'failed'].includes(s);
  // showBuyable turns "buy" on while the sale is open, also after an order
  // ended (kept up to date by the clock: a unit comes back). It stays in the
  // tab order when off (aria-disabled, not disabled).
  function showBuyable() {
    const on = state === 'open' || (afterOrder(state) && sale && phase() === 'open');
    el.buy.setAttribute('aria-disabled', String(!on));
  }
  const buyOff = () => el.buy.getAttribute('aria-disabled') === 'true';

  function every(ms, fn) { fn(); const id = setInterval(fn, ms); timers.push(id); return id; }
  function stopTimers() { timers.forEach(clearInterval); timers = []; }

  // ---- the sale's phases -------------------------------------------------
  function phase() {
    const n = now();
    if (!getToken()) return 'signin';
    if (sale.status === 'ENDED' || n >= sale.end) return 'ended';
    if (sale.status === 'PAUSED') return 'paused';
    if (n < sale.start) return 'countdown';
    // A SOLD_OUT answer outranks a description a second or two old.
    if (sale.status === 'SOLD_OUT' || n - soldOutSeen < 5000 || sale.asOf < soldOutSeen) return 'soldout';
    return 'open';
  }
  // countdownText is the line under the items: time to the start, time
  // left, or why nothing can be bought.
  function countdownText(p) {
    const n = now();
    if (n >= sale.end || sale.status === 'ENDED') return t('countdown.ended');
    if (n < sale.start) return t('countdown.starts', { time: I.clock(sale.start - n) });
    if (p === 'paused') return t('countdown.paused');
    if (p === 'soldout') return t('countdown.soldout');
    return t('countdown.open', { time: I.clock(sale.end - n) });
  }
  // phaseStatus is the status line of an idle phase.
  function phaseStatus(p) {
    switch (p) {
      case 'countdown': return msg('status.countdown');
      case 'open': return msg('status.open');
      case 'signin': return msg('status.signin');
      case 'ended': return msg('status.ended');
      case 'paused': return msg('status.paused');
      case 'soldout': return msg('status.soldout');
    }
    return null;
  }
  // showPhase follows the clock and the sale: the countdown line always, the
  // state only while no purchase or order owns the page.
  function showPhase() {
    const p = phase();
    // While the buyer's order owns the page, the line is about the order
    // (its timer below), not the sale: no "Sold out" over "Paid".
    el.countdown.textContent = ownOrder() ? '' : countdownText(p);
    // (A tab opened before this buyer's purchase in another tab learns of
    // it through localStorage, not by asking the gateway at the sell-out:
    // every open page would ask at once.)
    if (idle() && state !== p) set(p, phaseStatus(p));
    if (afterOrder(state)) showBuyable();
    // A sale with a pre-queue: join it by itself once it opens, so the
    // buyer's place is drawn at the start like everyone else's.
    if (state === 'countdown' && joinAt && now() >= joinAt) {
      joinAt = 0;
      newAttempt();
      getTicket({}, true);
    }
    if (held && held.expires - now() < 2000) {
      held = null;
      if (state === 'open') set('open', phaseStatus('open'));
    }
  }
  function newAttempt() {
    ticketRetried = false;
    retries = 0;
    busyTries = 0;
    inQueue = false;
    idemKey = (crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2) + Date.now());
  }
  // The idle phases follow the clock and the sale; the order flow owns the
  // page while it runs.
  const idle = () => ['loading', 'signin', 'countdown', 'open', 'ended', 'paused', 'soldout'].includes(state);
  const ownOrder = () => ['processing', 'reserved', 'paying', 'paid', 'cancelling'].includes(state);

  // ---- buying ------------------------------------------------------------
  async function buy() {
    if (buyOff()) return;
    if (orderId) { forgetOrder(); orderId = null; }
    if (held) {
      const tk = held.ticket;
      held = null;
      return purchase(tk);
    }
    newAttempt();
    await getTicket({}, false);
  }

  // getTicket asks for the ticket. auto marks the page's own join of the
  // pre-queue: once admitted it holds the ticket and lets the buyer click,
  // where a buyer who clicked goes straight on to the purchase.
  async function getTicket(headers, auto) {
    if (state !== 'queued' && state !== 'proof') set('ticket', msg(auto ? 'status.joining' : 'status.asking'));
    const r = await call('POST', '/sales/' + saleId + '/ticket', headers);
    const code = r.body.error;
    if (r.status === 200 && r.body.ticket) {
      if (!auto) return purchase(r.body.ticket);
      held = { ticket: r.body.ticket, expires: Date.parse(r.body.expiresAt) };
      set('open', msg('status.turn', { time: I.time(held.expires - offset, true) }), { focus: el.buy });
      return;
    }
    if (r.status === 202 && r.body.status === 'QUEUED') {
      inQueue = true;
      set('queued', queued(r.body.position, r.body.estimatedWaitSeconds));
      await sleep(r.retryAfter * 1000);
      return getTicket({}, auto);
    }
    if (r.status === 428 && code === 'PROOF_REQUIRED') return proof(r.body.challenge, r.body.difficulty, auto);
    if (r.status === 403 && (code === 'PROOF_INVALID' || code === 'QUEUE_PASS_INVALID') && retries < 2) {
      retries++; // a stale challenge or pass (the gateway cleared the pass): ask afresh
      return getTicket({}, auto);
    }
    if (auto && r.status === 403 && code === 'SALE_NOT_STARTED') {
      joinAt = now() + 2000; // the pre-queue is not open yet by the gateway's clock
      return set('countdown', phaseStatus('countdown'));
    }
    if (r.status === 503 && code !== 'SALE_PAUSED' && (auto || inQueue) && busyTries < maxBusyTries) {
      // The page joined (or waits in) the queue by itself: a 503 means
      // nothing happened, so it asks again after a jittered back-off
      // rather than dropping the buyer out of the queue to an error.
      busyTries++;
      const ms = Math.min(8, 2 ** (busyTries - 1)) * (500 + Math.random() * 1000);
      set('busy', msg('status.busy', { seconds: Math.ceil(ms / 1000) }));
      await sleep(ms);
      return getTicket(headers, auto);
    }
    return refused(r, () => getTicket(headers, auto));
  }
  const maxBusyTries = 6; // about half a minute, then the error and its retry button

  // queued is the status line of a place in the queue (its sentences).
  function queued(pos, wait) {
    return [
      pos > 0 ? msg('queue.position', { position: I.number(pos) }) : msg('queue.in'),
      now() < sale.start ? msg('queue.drawn') : null,
      wait > 0 ? msg('queue.wait', { time: I.clock(wait * 1000) }) : null,
      msg('queue.keepOpen'),
    ];
  }

  function proof(challenge, difficulty, auto) {
    set('proof', msg('status.proof'));
    return new Promise((resolve) => {
      let w;
      try { w = new Worker(root.worker); } catch (e) {
        set('error', null, { alert: msg('alert.noWorker'), retry: true });
        return resolve();
      }
      w.onmessage = (ev) => {
        if (ev.data.progress) return;
        w.terminate();
        if (ev.data.error) {
          set('error', null, { alert: msg('alert.proofUnsolvable'), retry: true });
          return resolve();
        }
        resolve(getTicket({ 'X-Proof': challenge + ':' + ev.data.nonce }, auto));
      };
      w.onerror = () => { w.terminate(); set('error', null, { alert: msg('alert.proofFailed'), retry: true }); resolve(); };
      w.postMessage({ challenge, difficulty });
    });
  }

  async function purchase(ticket) {
    set('buying', msg('status.buying'));
    const r = await call('POST', '/items/' + chosenItem() + '/purchase', { 'X-Purchase-Ticket': ticket, 'Idempotency-Key': idemKey });
    const code = r.body.error;
    if (r.status === 202 || (r.status === 409 && code === 'ALREADY_PURCHASED' && r.body.orderId)) {
      orderId = r.body.orderId;
      rememberOrder();
      return track(r.status === 409 ? msg('note.alreadyOrdered') : null);
    }
    if (r.status === 403 && (code === 'TICKET_INVALID' || code === 'TICKET_REQUIRED') && !ticketRetried) {
      ticketRetried = true; // the ticket ran out (a slow network): one new one
      return getTicket({});
    }
    return refused(r, () => purchase(ticket));
  }

  // refused shows the refusal r of a ticket or purchase request; again
  // repeats the request (after a 429's Retry-After).
  async function refused(r, again) {
    const code = r.body.error || r.status;
    if (r.status === 410 && code === 'SOLD_OUT') {
      soldOutSeen = now();
      const it = sale.items.find((i) => String(i.itemId) === chosenItem());
      if (it && sale.items.length === 1) { it.remaining = 0; renderSale(); }
      el.countdown.textContent = countdownText('soldout');
      return set('soldout', msg('status.soldoutNow'), { focus: el.title });
    }
    if (r.status === 410 && code === 'SALE_ENDED') {
      sale.status = 'ENDED';
      el.countdown.textContent = countdownText('ended');
      return set('ended', msg('status.ended'), { focus: el.title });
    }
    if (r.status === 503 && code === 'SALE_PAUSED') {
      sale.status = 'PAUSED';
      el.countdown.textContent = countdownText('paused');
      return set('paused', msg('status.pausedNothingBought'));
    }
    if (r.status === 403 && code === 'SALE_NOT_STARTED') { await syncClock(); return set('countdown', msg('status.notStarted')); }
    if (r.status === 401) return signedOut();
    if (r.status === 429) return limited(r.retryAfter, again);
    if (r.status === 403) return set('error', null, { alert: msg('alert.refused', { code }), retry: true });
    if (r.status === 503) return set('error', null, { alert: msg('alert.busy'), retry: true });
    if (r.status === 0) return set('error', null, { alert: msg('alert.offline'), retry: true });
    return set('error', null, { alert: msg('alert.error', { code }), retry: true });
  }

  // limited waits out a 429's Retry-After, counting the seconds down on the
  // status line (the alert is said once), then repeats the request.
  async function limited(secs, again) {
    set('limited', null, { alert: msg('alert.limited') });
    for (let s = secs; s > 0; s--) {
      say(msg('status.tryingAgain', { seconds: s }));
      await sleep(1000);
    }
    return again();
  }

  // ---- the order ---------------------------------------------------------
  // track polls the order until PostgreSQL holds it, then shows it. note is
  // a message said before "processing".
  async function track(note) {
    el.orderId.textContent = orderId;
    set('processing', [note, msg('status.processing')], { focus: el.orderH });
    orderSays(msg('order.held'));
    el.payLeft.textContent = '';
    let down = 0; // failed polls in a row
    for (let i = 0; ; i++) {
      const r = await call('GET', '/orders/' + orderId);
      if (r.status === 0 || r.status >= 500) {
        if (++down === 3 && state === 'processing') say(msg('status.stillRecording'));
      } else if (down >= 3 && state === 'processing') {
        say([msg('status.connectedAgain'), msg('status.processing')]);
      }
      if (r.status !== 0 && r.status < 500) down = 0;
      if (r.status === 200) {
        if (r.body.status !== 'PENDING') return showOrder(r.body);
        if (r.body.persisted) return showOrder(r.body);
      } else if (r.status === 404) {
        forgetOrder();
        return set('error', null, { alert: msg('alert.orderNotFound'), retry: true });
      } else if (r.status === 401) {
        return refused(r, () => track(note));
      }
      await sleep(Math.min(500 + i * 250, 2000));
    }
  }

  // findOrder asks for the order this user holds in the sale, for a page
  // that knows of none (its tab was closed, another device): after the sell
  // out a click is answered 410 SOLD_OUT, so the page would never learn of
  // it. On load or sign-in, and only after the start; nothing changes when
  // there is none. A busy or unreachable gateway (503, 429, no answer) is
  // asked again a few times: one lost answer must not hide the order.
  async function findOrder() {
    for (let i = 0; i < 5; i++) {
      if (orderId || !getToken() || !sale || now() < sale.start) return;
      const r = await call('GET', '/sales/' + saleId + '/order');
      if (r.status === 401) return signedOut();
      if (r.status === 503 || r.status === 429 || r.status === 0) {
        await sleep(500 * (i + 1));
        continue;
      }
      return foundOrder(r);
    }
  }

  // foundOrder shows the order findOrder's answer r names, if any.
  function foundOrder(r) {
    if (r.status !== 200 || !r.body.orderId || orderId) return;
    orderId = r.body.orderId;
    if (r.body.status === 'PENDING') rememberOrder();
    if (r.body.status === 'PENDING' && !r.body.persisted) return track(msg('note.haveOrder'));
    el.orderId.textContent = orderId;
    showOrder(r.body);
  }

  function rememberOrder() {
    try { localStorage.setItem(orderKey(), tokenUser(getToken()) + ':' + orderId); } catch (e) { /* private mode */ }
  }
  function forgetOrder() {
    try { localStorage.removeItem(orderKey()); } catch (e) { /* private mode */ }
  }
  // savedOrder is the order remembered for the signed-in user, or null.
  function savedOrder() {
    let v = null;
    try { v = localStorage.getItem(orderKey()); } catch (e) { return null; }
    const user = tokenUser(getToken());
    if (!v || !user || !v.startsWith(user + ':')) return null;
    return v.slice(user.length + 1) || null;
  }
  // sharedOrder follows the other tabs: an order made in one is shown in
  // the others, and one paid or cancelled there is settled here.
  function sharedOrder(ev) {
    if (ev.key !== orderKey() || !sale) return;
    const id = savedOrder();
    // (A tab showing an order that ended follows the buyer's next one.)
    if (id && id !== orderId && (idle() || afterOrder(state))) { orderId = id; track(msg('note.haveOrder')); }
    else if (!id && orderId && state === 'reserved') settle();
  }

  // signedOut forgets a token the gateway refused (expired, or not one of
  // its own) and asks for a new sign-in; the order, if any, is found again
  // after it.
  function signedOut() {
    setToken(null);
    orderId = null;
    stopTimers();
    startClock();
    showAccount();
    set('signin', phaseStatus('signin'), { alert: msg('alert.signedOut') });
  }

  function showOrder(o) {
    stopTimers();
    startClock();
    orderExpires = Date.parse(o.expiresAt);
    const s = o.status;
    if (s === 'PENDING') {
      // The line is announced once, so it names the deadline; the timer
      // below counts down to it.
      set('reserved', msg('status.reserved', { time: I.time(orderExpires - offset, true) }), { focus: el.orderH });
      orderSays(msg('order.reserved'));
      every(500, () => {
        if (state !== 'reserved') return;
        const left = orderExpires - now();
        el.payLeft.textContent = t('order.payWithin', { time: I.clock(left) });
        if (left <= 0) {
          el.payLeft.textContent = '';
          set('processing', msg('status.timeUp'));
          settle();
        }
      });
      return;
    }
    el.payLeft.textContent = '';
    forgetOrder();
    if (s === 'PAID') {
      set('paid', msg('status.paid'), { focus: el.orderH });
      return orderSays(msg('order.paid'));
    }
    // The unit went back on sale: a SOLD_OUT seen before no longer holds.
    soldOutSeen = -Infinity;
    if (s === 'CANCELLED') { set('cancelled', msg('status.cancelled'), { focus: el.orderH }); orderSays(msg('order.cancelled')); }
    else if (s === 'EXPIRED') { set('expired', msg('status.expired'), { focus: el.orderH }); orderSays(msg('order.expired')); }
    else { set('failed', msg('status.failed'), { focus: el.orderH }); orderSays(msg('order.failed')); }
  }

  async function act(what) {
    if (state !== 'reserved') return;
    const paying = what === 'pay';
    set(paying ? 'paying' : 'cancelling', msg(paying ? 'status.paying' : 'status.cancelling'));
    const r = await call('POST', '/orders/' + orderId + '/' + what);
    const code = r.body.error || r.status;
    const was = (st) => showOrder({ status: st, expiresAt: new Date(orderExpires).toISOString() });
    if (r.status === 202) return settle();
    if (r.status === 409 && code === 'ORDER_EXPIRED') return was('EXPIRED');
    if (r.status === 409 && code === 'ORDER_PAID') return was('PAID');
    if (r.status === 409 && code === 'ORDER_CANCELLED') return was('CANCELLED');
    if (r.status === 409) return was('FAILED');
    if (r.status === 429) {
      // Nothing happened yet: wait out Retry-After, saying so, and ask again.
      say(msg(paying ? 'status.payingBusy' : 'status.cancellingBusy', { seconds: r.retryAfter }));
      await sleep(r.retryAfter * 1000);
      state = 'reserved';
      return act(what);
    }
    if (r.status === 0) {
      // The reply was lost, not the request: look before saying anything.
      const o = await call('GET', '/orders/' + orderId);
      if (o.status === 200 && o.body.status !== 'PENDING') return showOrder(o.body);
      return set('reserved', null, { alert: msg(paying ? 'alert.payOffline' : 'alert.cancelOffline') });
    }
    if (r.status === 503) return set('reserved', null, { alert: msg(paying ? 'alert.payBusy' : 'alert.cancelBusy') });
    set('reserved', null, { alert: msg(paying ? 'alert.payFailed' : 'alert.cancelFailed', { code }) });
  }

  // settle polls the order until it leaves PENDING.
  async function settle() {
    for (let i = 0; ; i++) {
      const r = await call('GET', '/orders/' + orderId);
      if (r.status === 200 && r.body.status !== 'PENDING') return showOrder(r.body);
      await sleep(Math.min(500 + i * 250, 2000));
    }
  }

  // ---- sign-in -----------------------------------------------------------
  function showAccount() {
    const tok = getToken();
    const dev = root.dev === 'true';
    el.signin.hidden = !!tok || !dev;
    el.signout.hidden = !tok || !dev;
    const user = tok && tokenUser(tok);
    if (tok) el.who.textContent = user ? t('who.signedInAs', { user }) : t('who.signedIn');
    else el.who.textContent = t(dev ? 'who.signedOut' : 'who.signInAtShop');
  }
  async function devSignIn(ev) {
    ev.preventDefault();
    const id = el.userId.value.trim();
    if (!/^[1-9][0-9]{0,18}$/.test(id)) {
      warn(msg('alert.badUserId'));
      el.userId.setAttribute('aria-invalid', 'true');
      el.userId.focus();
      return;
    }
    el.userId.removeAttribute('aria-invalid');
    let r;
    try {
      r = await fetch(API + '/dev/token', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ userId: id }), credentials: 'same-origin' });
    } catch (e) { warn(msg('alert.noConnection')); return; }
    const body = await r.json().catch(() => ({}));
    if (r.status !== 200 || !body.token) { warn(msg('alert.signInRefused', { code: body.error || r.status })); return; }
    setToken(body.token);
    warn(null);
    showAccount();
    state = 'loading';
    showPhase();
    (buyOff() ? el.title : el.buy).focus();
    findOrder();
  }

  // ---- start -------------------------------------------------------------
  // startClock runs showPhase every 250 ms, once however often called;
  // stopTimers leaves it running.
  let clockTimer = null;
  function startClock() {
    if (clockTimer) return;
    showPhase();
    clockTimer = setInterval(showPhase, 250);
  }
  // refreshLoop reloads the sale (a cacheable description, at most a second
  // old): every second while paused, sold out or after the buyer's order
  // ended, to notice a resume or returned stock; every two while open (a
  // pause shows soon) or while the buyer's order runs (the units left);
  // else every five. A change of the shop's branding shows with it.
  async function refreshLoop() {
    for (;;) {
      await sleep(['paused', 'soldout'].includes(state) || afterOrder(state) ? 1000 : state === 'open' || ownOrder() ? 2000 : 5000);
      if ((await loadSale()) === true) renderSale();
    }
  }

  // relabel shows everything the page says again, in the language just
  // picked.
  function relabel() {
    if (says.notFound) return noSale(says.notFound);
    if (sale) renderSale(); else el.title.textContent = document.title = t('title.page');
    if (state === 'loading') el.countdown.textContent = t('loading');
    else if (sale) el.countdown.textContent = ownOrder() ? '' : countdownText(phase());
    if (state !== 'loading') showAccount(); else el.who.textContent = t('who.checking');
    say(says.status);
    warn(says.alert);
    orderSays(says.order);
  }

  async function init() {
    el.buy.addEventListener('click', buy);
    el.retry.addEventListener('click', () => {
      if (!sale) { location.reload(); return; }
      state = 'loading';
      showPhase();
      if (state === 'open') buy(); else el.title.focus();
    });
    el.pay.addEventListener('click', () => act('pay'));
    el.cancel.addEventListener('click', () => act('cancel'));
    el.signin.addEventListener('submit', devSignIn);
    el.signout.addEventListener('click', () => { setToken(null); forgetOrder(); orderId = null; showAccount(); state = 'loading'; showPhase(); });
    window.addEventListener('storage', sharedOrder);
    I.onChange(relabel);
    const words = I.start().catch((e) => {
      // No messages at all: the one text that ships in the script.
      el.alert.textContent = 'The page could not be loaded. Reload it. / ページを読み込めませんでした。再読み込みしてください。';
      throw e;
    });
    if (!saleId) { await words; return noSale(msg('notFound.noSaleId')); }
    // The messages load while the clock is set and the sale read.
    const [ok] = await Promise.all([syncClock().then(loadSale), words]);
    if (ok === 'notfound') return noSale(msg('notFound.unknown', { sale: saleId }));
    if (!ok) { el.buy.hidden = true; showAccount(); set('error', null, { alert: msg('alert.loadFailed'), retry: true }); el.countdown.textContent = ''; return; }
    renderSale();
    const tok = getToken();
    const expired = tok && tokenExpired(tok);
    if (expired) setToken(null);
    showAccount();
    if (sale.queueOpens && now() < sale.start) joinAt = sale.queueOpens;
    const saved = savedOrder();
    refreshLoop();
    if (expired) { startClock(); return signedOut(); }
    if (saved) { orderId = saved; track(null); startClock(); return; }
    // The buyer's order, if any, before the page says "sold out" (bounded:
    // a slow answer is followed by the order when it arrives).
    await Promise.race([findOrder(), sleep(1500)]);
    startClock();
  }
  function noSale(why) {
    says.notFound = why;
    document.title = el.title.textContent = t('notFound.title');
    el.buy.hidden = true;
    el.countdown.textContent = '';
    el.when.textContent = '';
    el.items.hidden = true;
    el.account.hidden = true;
    set('notfound', why);
  }
  init();
})();
