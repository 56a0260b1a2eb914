// sale.js: the sale page's script. The page is the same for every buyer; this
// script reads the sale id from the URL, the sale from the public API, and
// the buyer's bearer token from where the shop keeps it (the <html>
// element's data-token: "localStorage:<key>" or "cookie:<name>").
//
// States (main[data-state]): loading, signin, countdown, open, ticket,
// queued, proof, buying, processing, reserved, paying, paid, cancelling,
// cancelled, expired, failed, soldout, ended, paused, limited, error,
// notfound. The page never says "reserved" before the order is persisted.
'use strict';
(() => {
  const API = '/api/flash-sales';
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
  function money(price, currency) {
    try {
      const f = new Intl.NumberFormat(undefined, { style: 'currency', currency });
      const digits = f.resolvedOptions().maximumFractionDigits;
      return f.format(price / Math.pow(10, digits));
    } catch (e) { return price + ' ' + currency; }
  }
  function clock(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, mi = Math.floor(s / 60) % 60, se = s % 60;
    const pad = (n) => String(n).padStart(2, '0');
    return (d > 0 ? d + 'd ' : '') + (d > 0 || h > 0 ? pad(h) + ':' : '') + pad(mi) + ':' + pad(se);
  }
  function renderSale() {
    document.title = sale.name + ' – flash sale';
    el.title.textContent = sale.name;
    const fmt = (t) => new Date(t).toLocaleString(undefined,
      { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
    el.when.textContent = 'From ' + fmt(sale.start) + ' to ' + fmt(sale.end);
    el.list.replaceChildren();
    el.choices.replaceChildren();
    const many = sale.items.length > 1;
    el.choice.hidden = !many;
    el.list.hidden = many;
    sale.items.forEach((it, i) => {
      const left = it.remaining == null ? '' : ' · ' + (it.remaining > 0 ? it.remaining + ' of ' + it.quantity + ' left' : 'sold out');
      if (many) {
        const label = document.createElement('label');
        const input = document.createElement('input');
        input.type = 'radio'; input.name = 'item'; input.value = it.itemId; input.checked = i === 0;
        label.append(input, ' ' + it.name + ' – ' + money(it.price, it.currency) + left);
        el.choices.append(label);
      } else {
        const li = document.createElement('li');
        const name = document.createElement('span');
        name.textContent = it.name + left;
        const price = document.createElement('span');
        price.className = 'price';
        price.textContent = money(it.price, it.currency);
        li.append(name, price);
        el.list.append(li);
      }
    });
  }
  function chosenItem() {
    const r = el.choices.querySelector('input[name=item]:checked');
    return r ? r.value : String(sale.items[0].itemId);
  }

  // set moves to state s: the status line (announced), the alert (errors),
  // which controls show. focus names an element to move focus to.
  function set(s, status, opts) {
    const o = opts || {};
    state = s;
    main.dataset.state = s;
    // Busy only while loading: aria-busy on main would hold back the
    // announcements of the status line inside it.
    main.setAttribute('aria-busy', String(s === 'loading'));
    el.status.textContent = status || '';
    el.alert.textContent = o.alert || '';
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

  function every(ms, fn) { fn(); const t = setInterval(fn, ms); timers.push(t); return t; }
  function stopTimers() { timers.forEach(clearInterval); timers = []; }

  // ---- the sale's phases -------------------------------------------------
  function phase() {
    const t = now();
    if (!getToken()) return 'signin';
    if (sale.status === 'ENDED' || t >= sale.end) return 'ended';
    if (sale.status === 'PAUSED') return 'paused';
    if (t < sale.start) return 'countdown';
    // A SOLD_OUT answer outranks a description a second or two old.
    if (sale.status === 'SOLD_OUT' || t - soldOutSeen < 5000 || sale.asOf < soldOutSeen) return 'soldout';
    return 'open';
  }
  // countdownText is the line under the items: time to the start, time
  // left, or why nothing can be bought.
  function countdownText(p) {
    const t = now();
    if (t >= sale.end || sale.status === 'ENDED') return 'The sale has ended.';
    if (t < sale.start) return 'Starts in ' + clock(sale.start - t);
    if (p === 'paused') return 'Paused';
    if (p === 'soldout') return 'Sold out';
    return 'On sale now · ends in ' + clock(sale.end - t);
  }
  const phaseStatus = {
    countdown: 'The buy button turns on when the sale starts.',
    open: 'The sale has started: you can buy now.',
    signin: 'Sign in to buy.',
    ended: 'This sale is over.',
    paused: 'The sale is paused for a moment. This page carries on by itself when it resumes.',
    soldout: 'Everything has been sold. When an unpaid order expires or is cancelled, its unit goes back on sale: keep this page open to see it.',
  };
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
    if (idle() && state !== p) set(p, phaseStatus[p]);
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
      if (state === 'open') set('open', phaseStatus.open);
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
      const t = held.ticket;
      held = null;
      return purchase(t);
    }
    newAttempt();
    await getTicket({}, false);
  }

  // getTicket asks for the ticket. auto marks the page's own join of the
  // pre-queue: once admitted it holds the ticket and lets the buyer click,
  // where a buyer who clicked goes straight on to the purchase.
  async function getTicket(headers, auto) {
    if (state !== 'queued' && state !== 'proof') set('ticket', auto ? 'Joining the queue…' : 'Asking for your place…');
    const r = await call('POST', '/sales/' + saleId + '/ticket', headers);
    const code = r.body.error;
    if (r.status === 200 && r.body.ticket) {
      if (!auto) return purchase(r.body.ticket);
      held = { ticket: r.body.ticket, expires: Date.parse(r.body.expiresAt) };
      const until = new Date(held.expires).toLocaleTimeString(undefined, { timeStyle: 'medium' });
      set('open', 'It is your turn: buy now. Your place is kept until ' + until + '.', { focus: el.buy });
      return;
    }
    if (r.status === 202 && r.body.status === 'QUEUED') {
      const pos = r.body.position, wait = r.body.estimatedWaitSeconds;
      inQueue = true;
      const before = now() < sale.start;
      set('queued', 'You are in the queue' + (pos > 0 ? ', number ' + pos : '') +
        (before ? '. Places are drawn at random when the sale starts' : '') +
        (wait > 0 ? '. Estimated wait: ' + clock(wait * 1000) : '') + '. Keep this page open: it asks again by itself.');
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
      return set('countdown', phaseStatus.countdown);
    }
    if (r.status === 503 && code !== 'SALE_PAUSED' && (auto || inQueue) && busyTries < maxBusyTries) {
      // The page joined (or waits in) the queue by itself: a 503 means
      // nothing happened, so it asks again after a jittered back-off
      // rather than dropping the buyer out of the queue to an error.
      busyTries++;
      const ms = Math.min(8, 2 ** (busyTries - 1)) * (500 + Math.random() * 1000);
      set('busy', 'The shop is very busy. Nothing is lost: this page asks again by itself in ' + Math.ceil(ms / 1000) + ' s…');
      await sleep(ms);
      return getTicket(headers, auto);
    }
    return refused(r, () => getTicket(headers, auto));
  }
  const maxBusyTries = 6; // about half a minute, then the error and its retry button

  function proof(challenge, difficulty, auto) {
    set('proof', 'Checking your browser before the purchase (this takes a moment)…');
    return new Promise((resolve) => {
      let w;
      try { w = new Worker(root.worker); } catch (e) {
        set('error', '', { alert: 'This browser cannot run the check the sale needs.', retry: true });
        return resolve();
      }
      w.onmessage = (ev) => {
        if (ev.data.progress) return;
        w.terminate();
        if (ev.data.error) {
          set('error', '', { alert: 'The sale sent a check this page cannot solve. Try again.', retry: true });
          return resolve();
        }
        resolve(getTicket({ 'X-Proof': challenge + ':' + ev.data.nonce }, auto));
      };
      w.onerror = () => { w.terminate(); set('error', '', { alert: 'The browser check failed. Try again.', retry: true }); resolve(); };
      w.postMessage({ challenge, difficulty });
    });
  }

  async function purchase(ticket) {
    set('buying', 'Buying…');
    const r = await call('POST', '/items/' + chosenItem() + '/purchase', { 'X-Purchase-Ticket': ticket, 'Idempotency-Key': idemKey });
    const code = r.body.error;
    if (r.status === 202 || (r.status === 409 && code === 'ALREADY_PURCHASED' && r.body.orderId)) {
      orderId = r.body.orderId;
      rememberOrder();
      return track(r.status === 409 ? 'You already have an order in this sale.' : '');
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
    const code = r.body.error;
    if (r.status === 410 && code === 'SOLD_OUT') {
      soldOutSeen = now();
      const it = sale.items.find((i) => String(i.itemId) === chosenItem());
      if (it && sale.items.length === 1) { it.remaining = 0; renderSale(); }
      el.countdown.textContent = countdownText('soldout');
      return set('soldout', 'Sold out: every unit has been taken.', { focus: el.title }); }
    if (r.status === 410 && code === 'SALE_ENDED') { sale.status = 'ENDED'; el.countdown.textContent = countdownText('ended'); return set('ended', 'This sale is over.', { focus: el.title }); }
    if (r.status === 503 && code === 'SALE_PAUSED') { sale.status = 'PAUSED'; el.countdown.textContent = countdownText('paused'); return set('paused', 'The sale is paused for a moment. Nothing was bought. This page carries on when it resumes.'); }
    if (r.status === 403 && code === 'SALE_NOT_STARTED') { await syncClock(); return set('countdown', 'The sale has not started yet.'); }
    if (r.status === 401) return signedOut();
    if (r.status === 429) return limited(r.retryAfter, again);
    if (r.status === 403) return set('error', '', { alert: 'The purchase was refused. Nothing was bought. (' + (code || r.status) + ')', retry: true });
    if (r.status === 503) return set('error', '', { alert: 'The shop is very busy: nothing was bought. Try again in a moment.', retry: true });
    if (r.status === 0) return set('error', '', { alert: 'No connection to the shop. Check your network and try again.', retry: true });
    return set('error', '', { alert: 'Something went wrong (' + (code || r.status) + '). Try again.', retry: true });
  }

  // limited waits out a 429's Retry-After, counting the seconds down on the
  // status line (the alert is said once), then repeats the request.
  async function limited(secs, again) {
    set('limited', '', { alert: 'Too many tries at once: nothing was bought yet. This page tries again by itself.' });
    for (let s = secs; s > 0; s--) {
      el.status.textContent = 'Trying again in ' + s + ' s…';
      await sleep(1000);
    }
    return again();
  }

  // ---- the order ---------------------------------------------------------
  // track polls the order until PostgreSQL holds it, then shows it.
  async function track(note) {
    el.orderId.textContent = orderId;
    set('processing', (note ? note + ' ' : '') + 'Processing your order: do not close this page…', { focus: el.orderH });
    el.orderText.textContent = 'Your unit is held while the order is being recorded.';
    el.payLeft.textContent = '';
    let down = 0; // failed polls in a row
    for (let i = 0; ; i++) {
      const r = await call('GET', '/orders/' + orderId);
      if (r.status === 0 || r.status >= 500) {
        if (++down === 3 && state === 'processing') {
          el.status.textContent = 'Still recording your order. The connection to the shop is interrupted: this page keeps trying, and your unit stays held.';
        }
      } else if (down >= 3 && state === 'processing') {
        el.status.textContent = 'Connected again. Processing your order: do not close this page…';
      }
      if (r.status !== 0 && r.status < 500) down = 0;
      if (r.status === 200) {
        if (r.body.status !== 'PENDING') return showOrder(r.body);
        if (r.body.persisted) return showOrder(r.body);
      } else if (r.status === 404) {
        forgetOrder();
        return set('error', '', { alert: 'Your order could not be found. Nothing was bought.', retry: true });
      } else if (r.status === 401) {
        return refused(r, () => track(note));
      }
      await sleep(Math.min(500 + i * 250, 2000));
    }
  }

  // findOrder asks for the order this user holds in the sale, for a page
  // that knows of none (its tab was closed, another device): after the sell
  // out a click is answered 410 SOLD_OUT, so the page would never learn of
  // it. Once, on load or sign-in, and only after the start; nothing changes
  // when there is none.
  async function findOrder() {
    if (orderId || !getToken() || !sale || now() < sale.start) return;
    const r = await call('GET', '/sales/' + saleId + '/order');
    if (r.status === 401) return signedOut();
    if (r.status !== 200 || !r.body.orderId || orderId) return;
    orderId = r.body.orderId;
    if (r.body.status === 'PENDING') rememberOrder();
    if (r.body.status === 'PENDING' && !r.body.persisted) return track('You have an order in this sale.');
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
    if (id && id !== orderId && (idle() || afterOrder(state))) { orderId = id; track('You have an order in this sale.'); }
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
    set('signin', phaseStatus.signin, { alert: 'Your sign-in is no longer valid (it expired or was not recognised). Sign in again to buy.' });
  }

  function showOrder(o) {
    stopTimers();
    startClock();
    orderExpires = Date.parse(o.expiresAt);
    const s = o.status;
    if (s === 'PENDING') {
      // The line is announced once, so it names the deadline; the timer
      // below counts down to it.
      const by = new Date(orderExpires - offset).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
      set('reserved', 'Reserved: pay by ' + by + '.', { focus: el.orderH });
      el.orderText.textContent = 'One unit is reserved for you.';
      every(500, () => {
        if (state !== 'reserved') return;
        const left = orderExpires - now();
        el.payLeft.textContent = 'Pay within ' + clock(left);
        if (left <= 0) {
          el.payLeft.textContent = '';
          set('processing', 'The time to pay is up: checking your order…');
          settle();
        }
      });
      return;
    }
    el.payLeft.textContent = '';
    forgetOrder();
    if (s === 'PAID') { set('paid', 'Paid. Thank you: your order is complete.', { focus: el.orderH }); el.orderText.textContent = 'Your payment went through.'; }
    else {
      // The unit went back on sale: a SOLD_OUT seen before no longer holds.
      soldOutSeen = -Infinity;
      if (s === 'CANCELLED') { set('cancelled', 'Order cancelled. Its unit went back on sale.', { focus: el.orderH }); el.orderText.textContent = 'You cancelled this order.'; }
      else if (s === 'EXPIRED') { set('expired', 'The time to pay ran out and the order expired; its unit goes back on sale.', { focus: el.orderH }); el.orderText.textContent = 'This order was not paid in time.'; }
      else { set('failed', 'The order could not be completed and nothing was charged. You can try to buy again.', { focus: el.orderH }); el.orderText.textContent = 'Something went wrong recording this order.'; }
    }
  }

  async function act(what) {
    if (state !== 'reserved') return;
    const paying = what === 'pay';
    set(paying ? 'paying' : 'cancelling', paying ? 'Paying…' : 'Cancelling…');
    const r = await call('POST', '/orders/' + orderId + '/' + what);
    const code = r.body.error;
    if (r.status === 202) return settle();
    if (r.status === 409 && code === 'ORDER_EXPIRED') return showOrder({ status: 'EXPIRED', expiresAt: new Date(orderExpires).toISOString() });
    if (r.status === 409 && code === 'ORDER_PAID') return showOrder({ status: 'PAID', expiresAt: new Date(orderExpires).toISOString() });
    if (r.status === 409 && code === 'ORDER_CANCELLED') return showOrder({ status: 'CANCELLED', expiresAt: new Date(orderExpires).toISOString() });
    if (r.status === 409) return showOrder({ status: 'FAILED', expiresAt: new Date(orderExpires).toISOString() });
    if (r.status === 429) {
      // Nothing happened yet: wait out Retry-After, saying so, and ask again.
      el.status.textContent = (paying ? 'Paying' : 'Cancelling') + '… the shop is busy: trying again in ' + r.retryAfter + ' s.';
      await sleep(r.retryAfter * 1000);
      state = 'reserved';
      return act(what);
    }
    const thing = paying ? 'The payment' : 'The cancellation';
    if (r.status === 0) {
      // The reply was lost, not the request: look before saying anything.
      const o = await call('GET', '/orders/' + orderId);
      if (o.status === 200 && o.body.status !== 'PENDING') return showOrder(o.body);
      return set('reserved', '', { alert: 'No connection to the shop: ' + thing.toLowerCase() + ' was not confirmed. Your order is still reserved: try again.' });
    }
    if (r.status === 503) return set('reserved', '', { alert: 'The shop is very busy: ' + thing.toLowerCase() + ' did not go through. Your order is still reserved: try again in a moment.' });
    set('reserved', '', { alert: thing + ' did not go through. Your order is still reserved: try again. (' + (code || r.status) + ')' });
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
    if (tok) el.who.textContent = 'Signed in' + (tokenUser(tok) ? ' as user ' + tokenUser(tok) : '') + '.';
    else if (dev) el.who.textContent = 'You are not signed in.';
    else el.who.textContent = 'Sign in at the shop first, then come back to this page.';
  }
  async function devSignIn(ev) {
    ev.preventDefault();
    const id = el.userId.value.trim();
    if (!/^[1-9][0-9]{0,18}$/.test(id)) {
      el.alert.textContent = 'Type a user id made of digits, not starting with 0.';
      el.userId.setAttribute('aria-invalid', 'true');
      el.userId.focus();
      return;
    }
    el.userId.removeAttribute('aria-invalid');
    let r;
    try {
      r = await fetch(API + '/dev/token', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ userId: id }), credentials: 'same-origin' });
    } catch (e) { el.alert.textContent = 'No connection to the shop.'; return; }
    const body = await r.json().catch(() => ({}));
    if (r.status !== 200 || !body.token) { el.alert.textContent = 'Sign-in refused (' + (body.error || r.status) + ').'; return; }
    setToken(body.token);
    el.alert.textContent = '';
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
  // else every five.
  async function refreshLoop() {
    for (;;) {
      await sleep(['paused', 'soldout'].includes(state) || afterOrder(state) ? 1000 : state === 'open' || ownOrder() ? 2000 : 5000);
      const keep = chosenItem();
      if ((await loadSale()) !== true) continue;
      renderSale();
      const r = el.choices.querySelector('input[value="' + keep + '"]');
      if (r) r.checked = true;
    }
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
    if (!saleId) return noSale('This address names no sale. Check the link you followed.');
    await syncClock();
    const ok = await loadSale();
    if (ok === 'notfound') return noSale('There is no sale ' + saleId + '. Check the link you followed.');
    if (!ok) { el.buy.hidden = true; showAccount(); set('error', '', { alert: 'The sale could not be loaded.', retry: true }); el.countdown.textContent = ''; return; }
    renderSale();
    const tok = getToken();
    const expired = tok && tokenExpired(tok);
    if (expired) setToken(null);
    showAccount();
    if (sale.queueOpens && now() < sale.start) joinAt = sale.queueOpens;
    const saved = savedOrder();
    refreshLoop();
    if (expired) { startClock(); return signedOut(); }
    if (saved) { orderId = saved; track(''); startClock(); return; }
    // The buyer's order, if any, before the page says "sold out" (bounded:
    // a slow answer is followed by the order when it arrives).
    await Promise.race([findOrder(), sleep(1500)]);
    startClock();
  }
  function noSale(why) {
    document.title = 'Sale not found';
    el.title.textContent = 'Sale not found';
    el.buy.hidden = true;
    el.countdown.textContent = '';
    el.when.textContent = '';
    el.items.hidden = true;
    el.account.hidden = true;
    set('notfound', why);
  }
  init();
})();
