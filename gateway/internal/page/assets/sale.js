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
// error, notfound; a raffle's raffle-soon (entries not open yet),
// raffle-open, raffle-entered, selected, not-selected and raffle-closed
// (entries closed without the buyer), and for a raffle sealed by a beacon
// round, between the close and the reveal, raffle-frozen ("tree head
// received": the entry is among the frozen entries, checked) and
// raffle-beacon (waiting for the beacon round); a presale's presale-only
// and presale-soldout (refused until the sale opens to everyone). The page
// never says "reserved" before the order is persisted.
//
// Fair access (SPEC): the sale's access mode and presale phase come from
// its description; a place in the draw comes with its chance of a unit,
// told as certain only when it is (100%, or NOT_SELECTED and SOLD_OUT for
// none). "Verify my place" checks the place with draw.js; the check's
// section has a data-state of its own (checking, verified, test,
// unsealed, frozen, failed, pending, not-entered, error, unsupported). A
// sealed raffle's entrant is checked without asking: the tree head and
// proof as soon as the entries are frozen (kept in localStorage, so that
// a head the shop changes after the round is caught, after a reload too),
// the whole draw at the reveal.
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
    enter: $('enter'), verify: $('verify'), place: $('place'), chance: $('chance'),
    access: $('access'), accessMode: $('access-mode'), accessPhase: $('access-phase'),
    accessCommitment: $('access-commitment'), commitment: $('commitment'), accessTest: $('access-test'),
    check: $('check'), checkH: $('check-h'), checkStatus: $('check-status'), checks: $('checks'),
    checkDetails: $('check-details'), checkValues: $('check-values'),
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
  // What the page knows of the signed-in buyer's standing in the sale's
  // access mode and presale (a new one at each sign-in and sign-out; a loop
  // that finds another one here stops).
  function freshBuyer() {
    return {
      entered: null,      // a raffle's entrant: true, false, or null (not known)
      result: null,       // a raffle's final word: 'not-selected' or 'raffle-closed'
      admitted: false,    // handed a ticket after the raffle's draw: buys as usual
      polling: false,     // rafflePoll runs for this buyer
      presale: null,      // refused in the presale: 'presale-only' or 'presale-soldout'
      presaleUntil: 0,    // server ms the sale opens to everyone (the refusal's startsAt)
      place: 0,           // place in the draw or the queue (0: not told)
      chance: null,       // chance of a unit at that place (0..1), null when not told
      checking: false,    // verifyPlace runs
      check: null,        // what verifyPlace found (renderCheck)
      seal: null,         // a sealed raffle's draw as sealWait follows it (showSeal)
      sealed: false,      // sealWait saw the reveal (or that the buyer is no entrant)
      recheck: null,      // an answer of .../draw/me to check once the check that runs ends
      inQueue: null,      // the last QUEUED answer's position and wait (s), for queued()
      dropped: false,     // an entry this browser kept is not in the draw (notInDraw)
      droppedAlarm: null, // its alert, said once
    };
  }
  let buyer = freshBuyer();
  let accessKey = -1;         // the presale phase renderAccess last showed
  // What the page says, as messages (shown again on a switch of language).
  const says = { status: null, alert: null, order: null, notFound: null };
  // The order the page knows of is kept in localStorage, shared by this
  // browser's tabs (a 'storage' event tells the others), for its user.
  const orderKey = () => 'flashsale.order.' + saleId;
  // The nonce the buyer was given when entering the draw, kept to check
  // that the shop shows the same one later (verifyPlace).
  const nonceKey = () => 'flashsale.nonce.' + saleId;
  // The tree head of a sealed raffle as this browser first received it,
  // with the buyer's leaf and proof (keepHead): a reload, or a later visit,
  // still has the head fetched before the beacon round, and a later answer
  // with another head is the shop's change after the fact.
  const headKey = () => 'flashsale.head.' + saleId;

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
    return fetchJSON(path, { method, headers: h, credentials: 'same-origin', cache: 'no-store' });
  }
  // fetchJSON asks the API and reads its JSON answer (status 0: no answer).
  async function fetchJSON(path, init) {
    let resp;
    try {
      resp = await fetch(API + path, init);
    } catch (e) {
      return { status: 0, body: {}, retryAfter: 2 };
    }
    let body = {};
    try { body = await resp.json(); } catch (e) { /* empty or not JSON */ }
    const ra = parseInt(resp.headers.get('Retry-After') || '', 10);
    return { status: resp.status, body, retryAfter: Number.isFinite(ra) && ra > 0 ? ra : 1 };
  }

  // publicGet reads a public answer (the published draw, its log) as
  // anyone would: no token, and the browser's cache and a CDN's may answer
  // it (the gateway marks how long), so a crowd checking its places on
  // results day costs the gateway one read per cache, not one per buyer.
  // fresh: past every cache, for an answer that must be the latest.
  const publicGet = (path, fresh) => fetchJSON(path, { credentials: 'omit', cache: fresh ? 'no-cache' : 'default' });

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
    sale.access = sale.access || (sale.queueOpensAt ? 'queue' : 'open');
    // entries: a raffle's registration window (server ms), else null.
    const w = sale.access === 'raffle' && sale.raffle ? [Date.parse(sale.raffle.entriesOpenAt), Date.parse(sale.raffle.entriesCloseAt)] : [];
    sale.entries = w.length && w.every(Number.isFinite) ? { open: w[0], close: w[1] } : null;
    const ps = sale.presale ? Date.parse(sale.presale.startsAt) : NaN;
    sale.presaleStart = Number.isFinite(ps) && ps < sale.start ? ps : null;
    return true;
  }

  // ---- rendering ---------------------------------------------------------
  function renderSale() {
    document.title = t('title.sale', { sale: sale.name });
    el.title.textContent = sale.name;
    el.when.textContent = t('sale.when', { start: I.dateTime(sale.start), end: I.dateTime(sale.end) });
    FlashSale.brand.show(sale);
    renderAccess();
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
  // A line that did not change is left alone: a poll that learns nothing
  // new is not announced again.
  function say(refs) { says.status = refs; setText(el.status, I.text(refs)); }
  function setText(e, s) { if (e.textContent !== s) e.textContent = s; }
  function warn(refs) { says.alert = refs; el.alert.textContent = I.text(refs); }
  function orderSays(refs) { says.order = refs; el.orderText.textContent = I.text(refs); }

  // set moves to state s: the status line (announced), the alert (errors),
  // which controls show. focus names an element to move focus to.
  function set(s, status, opts) {
    const o = opts || {};
    const had = document.activeElement;
    state = s;
    // Waiting for a draw's result: the signature checks warm up now, off
    // the buyer's check at the reveal (draw.js warm).
    if (['raffle-entered', 'raffle-frozen', 'raffle-beacon', 'queued'].includes(s) && FlashSale.draw.supported()) {
      setTimeout(() => FlashSale.draw.warm().catch(() => {}), 0);
    }
    main.dataset.state = s;
    // Busy only while loading: aria-busy on main would hold back the
    // announcements of the status line inside it.
    main.setAttribute('aria-busy', String(s === 'loading'));
    say(status || null);
    // (A sealed draw that does not check out is said in every state.)
    warn(o.alert || sealAlarm() || null);
    el.progress.hidden = !['ticket', 'busy', 'buying', 'processing', 'paying', 'cancelling', 'proof', 'queued'].includes(s);
    el.retry.hidden = !o.retry;
    const inOrder = ['processing', 'reserved', 'paying', 'paid', 'cancelling', 'cancelled', 'expired', 'failed'].includes(s) && orderId;
    el.order.hidden = !inOrder;
    el.pay.hidden = el.cancel.hidden = s !== 'reserved';
    // After a cancelled, expired or failed order the buyer may buy again;
    // after an error the retry button is the one way on. In a raffle,
    // "buy" shows once the buyer is selected, and "enter" before that.
    const entering = s === 'ticket' && sale && sale.entries && !buyer.entered && now() < sale.entries.close;
    const raffleOnly = ['raffle-soon', 'raffle-open', 'raffle-entered', 'raffle-frozen', 'raffle-beacon', 'raffle-closed', 'not-selected'].includes(s) ||
      (s === 'ticket' && sale && sale.entries && now() < sale.start);
    el.buy.hidden = (!!inOrder && !afterOrder(s)) || !!o.retry || s === 'notfound' || raffleOnly;
    el.enter.hidden = !(s === 'raffle-soon' || s === 'raffle-open' || entering);
    el.enter.setAttribute('aria-disabled', String(s !== 'raffle-open'));
    showBuyable();
    renderOdds();
    if (o.focus) o.focus.focus();
    // A control that hid under the focus hands it to the heading, not to
    // nowhere.
    else if ((had === el.enter || had === el.verify) && had.hidden) el.title.focus();
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
    if (sale.entries) {
      const p = rafflePhase(n);
      if (p) return p;
    } else if (n < sale.start) {
      if (!inPresale(n)) return 'countdown';
      if (buyer.presale && n < buyer.presaleUntil) return buyer.presale;
    }
    // A SOLD_OUT answer outranks a description a second or two old.
    if (sale.status === 'SOLD_OUT' || n - soldOutSeen < 5000 || sale.asOf < soldOutSeen) return 'soldout';
    return 'open';
  }
  const inPresale = (n) => sale.presaleStart != null && n >= sale.presaleStart && n < sale.start;
  // rafflePhase is the phase of a raffle for the buyer, or null once they
  // were admitted after the draw (then the sale's phases apply). An
  // entrant, or a buyer not known to be one after the close, is
  // 'raffle-entered': showPhase hands them to rafflePoll.
  function rafflePhase(n) {
    if (buyer.result) return buyer.result;
    if (n < sale.entries.open) return 'raffle-soon';
    if (n >= sale.start && (held || buyer.admitted)) return null;
    if (buyer.entered) return 'raffle-entered';
    if (n < sale.entries.close) return 'raffle-open';
    return buyer.entered === false ? 'raffle-closed' : 'raffle-entered';
  }
  // countdownText is the line under the items: time to the start (to the
  // raffle's entries, to the presale, to the sale for everyone), time left,
  // or why nothing can be bought.
  function countdownText(p) {
    const n = now();
    const clock = (to) => I.clock(to - n);
    if (n >= sale.end || sale.status === 'ENDED') return t('countdown.ended');
    if (sealing() && buyer.seal) {
      const { seal } = buyer.seal;
      return n < seal.at ? t('countdown.beacon', { round: seal.round, time: clock(seal.at) }) : t('countdown.beaconDue', { round: seal.round });
    }
    if (sale.entries && (p === 'not-selected' || p === 'raffle-closed')) return t('countdown.drawDone');
    if (sale.entries && n < sale.entries.open) return t('countdown.entriesOpen', { time: clock(sale.entries.open) });
    if (sale.entries && n < sale.entries.close) return t('countdown.entriesClose', { time: clock(sale.entries.close) });
    if (sale.presaleStart != null && n < sale.presaleStart) return t('countdown.presale', { time: clock(sale.presaleStart) });
    if (p === 'presale-only' || p === 'presale-soldout') return t('countdown.general', { time: clock(Math.max(buyer.presaleUntil, sale.start)) });
    if (inPresale(n)) return t('countdown.presaleOpen', { time: clock(sale.start) });
    if (n < sale.start) return t('countdown.starts', { time: clock(sale.start) });
    if (p === 'paused') return t('countdown.paused');
    if (p === 'soldout') return t('countdown.soldout');
    return t('countdown.open', { time: clock(sale.end) });
  }
  // phaseStatus is the status line of an idle phase. Times and names are
  // functions, so that a switch of language formats them again.
  function phaseStatus(p) {
    const at = (ms) => () => I.dateTime(ms);
    switch (p) {
      case 'countdown': return msg('status.countdown');
      case 'open': return inPresale(now()) ? msg('status.presaleOpen', { who: presaleWho }) : msg('status.open');
      case 'signin': return msg('status.signin');
      case 'ended': return msg('status.ended');
      case 'paused': return msg('status.paused');
      case 'soldout': return msg('status.soldout');
      case 'raffle-soon': return msg('status.raffleSoon', { time: at(sale.entries.open) });
      case 'raffle-open': return msg('status.raffleOpen', { time: at(sale.entries.close) });
      case 'raffle-closed': return msg(buyer.dropped ? 'status.notInDraw' : 'status.entriesClosed');
      case 'not-selected':
        return buyer.place > 0 ? msg('status.notSelected', { place: () => I.number(buyer.place) })
          : msg('status.notSelectedNoPlace');
      case 'presale-only': return msg('status.presaleOnly', { who: presaleWho, time: at(Math.max(buyer.presaleUntil, sale.start)) });
      case 'presale-soldout': return msg('status.presaleSoldOut', { time: at(Math.max(buyer.presaleUntil, sale.start)) });
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
    if (idle() && state !== p) {
      if (p === 'raffle-entered') rafflePoll(false);
      else set(p, phaseStatus(p));
    }
    if (state === 'raffle-frozen') showSeal(); // the head's line gives way to the wait's
    if (afterOrder(state)) showBuyable();
    // The presale gives way to the sale for everyone: say so.
    if (presaleStage() !== accessKey) {
      renderAccess();
      if (state === 'open' && !held) say(phaseStatus('open'));
    }
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

  // ---- access: the mode, the presale, the odds -----------------------------
  // renderAccess shows how the sale lets buyers in (raffle or waiting room),
  // its presale phase, and the commitment to its draw's seed.
  function renderAccess() {
    accessKey = presaleStage();
    let mode = '';
    if (sale.entries) {
      mode = t('access.raffle', { open: I.dateTime(sale.entries.open), close: I.dateTime(sale.entries.close), start: I.dateTime(sale.start) });
    } else if (sale.access === 'queue') mode = t('access.queue');
    let ph = '';
    if (accessKey === 1 || accessKey === 2) {
      ph = t(accessKey === 1 ? 'access.presaleSoon' : 'access.presaleNow',
        { who: presaleWho(), start: I.dateTime(sale.presaleStart), general: I.dateTime(sale.start) });
    }
    const c = saleCommitment() || '';
    // A draw sealed by the test chain is said to be one from the start.
    const chain = saleSeal().chain && FlashSale.draw && FlashSale.draw.chain ? FlashSale.draw.chain(saleSeal().chain) : null;
    const test = chain && chain.test ? t('access.testChain', { chain: chain.name }) : '';
    setText(el.accessMode, mode);
    setText(el.accessPhase, ph);
    setText(el.accessTest, test);
    setText(el.commitment, c);
    el.accessCommitment.hidden = !c;
    el.access.hidden = !mode && !ph && !c && !test;
  }
  // presaleStage is 0 for a sale without a presale, else 1 before it, 2
  // during it, 3 after it.
  function presaleStage() {
    const n = now();
    return sale.presaleStart == null ? 0 : n < sale.presaleStart ? 1 : n < sale.start ? 2 : 3;
  }
  // presaleWho names who may buy in the presale: the claim's values
  // ("gold or member"), and invited buyers when the operator loads a list.
  function presaleWho() {
    const p = sale.presale || {};
    const words = Array.isArray(p.values) ? p.values.filter((v) => typeof v === 'string' && v) : [];
    if (p.list || !words.length) words.push(t('presale.invited'));
    return I.list(words, 'disjunction');
  }
  // saleCommitment is the commitment to the draw's seed that the sale's
  // description published (lower-case hex), or null.
  function saleCommitment() {
    const c = sale && sale.draw && sale.draw.commitment;
    return typeof c === 'string' && /^[0-9a-f]{64}$/i.test(c) ? c.toLowerCase() : null;
  }
  // saleSeal is what the sale's description published of the beacon round
  // that seals its draw: the tree head's key, the chain's hash and the
  // round (all null for a sale drawn on its seed alone). draw.js checks the
  // answer against these, never against the answer's own.
  function saleSeal() {
    const d = (sale && sale.draw) || {};
    return { headKey: d.headKey || null, chain: d.chain || null, round: d.round || null };
  }
  // renderOdds shows the buyer's place and chance of a unit while they
  // wait, and "verify" once a place is known.
  function renderOdds() {
    const shown = buyer.place > 0 && ['queued', 'selected', 'not-selected'].includes(state);
    setText(el.place, shown ? t('odds.place', { place: I.number(buyer.place) }) : '');
    setText(el.chance, shown && state !== 'not-selected' && buyer.chance != null ? chanceText(buyer.chance) : '');
    el.verify.hidden = !(buyer.place > 0) || !getToken() || ['loading', 'signin', 'notfound'].includes(state);
  }
  // chanceText: whole percents rounded down; 100% only when the gateway
  // says certain; under 1% rather than 0%, which only SOLD_OUT and
  // NOT_SELECTED tell.
  function chanceText(c) {
    if (c >= 1) return t('odds.chance', { chance: I.percent(1) });
    if (c < 0.01) return t('odds.chanceUnder', { chance: I.percent(0.01) });
    return t('odds.chance', { chance: I.percent(c) });
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
  const idle = () => ['loading', 'signin', 'countdown', 'open', 'ended', 'paused', 'soldout', 'raffle-soon', 'raffle-open',
    'raffle-closed', 'not-selected', 'presale-only', 'presale-soldout'].includes(state);
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
    const b = buyer;
    if (!['queued', 'proof', 'raffle-entered', 'raffle-frozen', 'raffle-beacon', 'selected'].includes(state)) set('ticket', asking(auto));
    const r = await call('POST', '/sales/' + saleId + '/ticket', headers);
    if (b !== buyer) return; // signed out (or in as another) meanwhile
    const code = r.body.error;
    if (r.status === 200 && r.body.ticket) {
      if (sale.entries) b.admitted = true;
      if (!auto) return purchase(r.body.ticket);
      held = { ticket: r.body.ticket, expires: Date.parse(r.body.expiresAt) };
      set('open', msg('status.turn', { time: I.time(held.expires - offset, true) }), { focus: el.buy });
      return;
    }
    if (r.status === 202 && r.body.status === 'QUEUED') {
      inQueue = true;
      heardQueued(r.body);
      // A raffle's entrant learns nothing new before the draw: the page
      // asks again once it is out, not every Retry-After (a sealed one's,
      // once sealWait saw the reveal).
      if (sale.entries && (now() < sale.entries.close || (sealOf() && !b.sealed && !b.place))) {
        if (!(await untilDraw(b))) return;
      } else if (!(await queuedWait(b, r.retryAfter * 1000))) return;
      return getTicket({}, auto);
    }
    if (r.status === 428 && code === 'PROOF_REQUIRED') return proof(r.body.challenge, r.body.difficulty, auto);
    if (r.status === 403 && (code === 'PROOF_INVALID' || code === 'QUEUE_PASS_INVALID') && retries < 2) {
      retries++; // a stale challenge or pass (the gateway cleared the pass): ask afresh
      return getTicket({}, auto);
    }
    if (auto && !sale.entries && r.status === 403 && code === 'SALE_NOT_STARTED') {
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

  // asking is the status line while the ticket endpoint is asked.
  function asking(auto) {
    if (sale.entries && !buyer.entered && now() < sale.entries.close) return msg('status.entering');
    return msg(auto && !sale.entries ? 'status.joining' : 'status.asking');
  }

  // heardQueued shows a QUEUED answer a: in a raffle, entered (before the
  // draw) or selected; else the place in the queue; with a place, its odds.
  function heardQueued(a) {
    if (typeof a.nonce === 'string' && /^[0-9a-f]{32}$/i.test(a.nonce)) keepNonce(a.nonce);
    if (sale.entries) buyer.entered = true;
    if (Number.isSafeInteger(a.place) && a.place > 0) {
      buyer.place = a.place;
      buyer.chance = typeof a.chance === 'number' && a.chance >= 0 ? Math.min(a.chance, 1) : null;
    }
    // (Before the draw a raffle's position is the entrants so far; once a
    // sealed draw's head is in, the page says where the draw stands.)
    if (sale.entries && !buyer.place && buyer.seal) return showSeal();
    if (sale.entries && !buyer.place) return set('raffle-entered', entered(a.entrants > 0 ? a.entrants : a.position));
    if (sale.entries && buyer.chance === 1) return set('selected', msg('status.selected', { time: () => I.dateTime(sale.start) }));
    buyer.inQueue = [a.position, a.estimatedWaitSeconds];
    set('queued', queued(...buyer.inQueue));
  }
  // entered is the status line of a raffle's entrant before the draw.
  function entered(entrants) {
    return [
      msg('status.raffleEntered', { time: () => I.dateTime(sale.entries.close) }),
      entrants > 0 ? msg('raffle.entrants', { entrants: I.number(entrants) }) : null,
      msg('raffle.comeBack'),
    ];
  }

  // enterRaffle is the click on "Enter the raffle".
  function enterRaffle() {
    if (el.enter.getAttribute('aria-disabled') === 'true') return;
    rafflePoll(true);
  }
  // rafflePoll follows the buyer's part in the raffle: it enters them
  // (enter), or waits for the draw if they did; then it asks for their place
  // until it is final or admitted (getTicket, which waits for the draw
  // itself after an entry). Asking before the close would enter a buyer who
  // did not click: a page asks only after it.
  async function rafflePoll(enter) {
    const b = buyer;
    if (b.polling) return;
    b.polling = true;
    try {
      newAttempt();
      if (!enter && b.entered) {
        // A head this browser kept (a reload after the freeze) was shown
        // then: the page goes on waiting for the round with it.
        const kept = sealOf() && now() >= sale.entries.close ? savedHead() : null;
        if (kept && !b.seal) {
          b.seal = { seal: sealOf(), me: kept, shownAt: 0, changed: false, checked: false };
          showSeal();
        } else set('raffle-entered', entered(0));
        if (!(await untilDraw(b))) return;
      }
      await getTicket({}, true);
    } finally {
      b.polling = false;
    }
  }
  // untilDraw waits until the draw is out: a moment after the entries close
  // (the gateways freeze and reveal it), spread over two seconds so that
  // the entrants' pages do not all ask at once; for a raffle sealed by a
  // beacon round, from the freeze (200 ms after the close, spread over
  // 700 ms) until the reveal (sealWait). False when the buyer changed
  // meanwhile.
  async function untilDraw(b) {
    const seal = sealOf();
    const at = sale.entries.close + (seal ? 300 + Math.random() * 700 : 1000 + Math.random() * 2000);
    while (now() < at) {
      await sleep(Math.min(at - now(), 30000));
      if (b !== buyer) return false;
    }
    return seal && b.entered ? sealWait(b, seal) : true;
  }

  // queued is the status line of a place in the queue (its sentences).
  // In a sealed queue, once this browser keeps the tree head and until the
  // place is known, the wait for the beacon round follows (as a raffle's).
  function queued(pos, wait) {
    const seal = sealOf();
    const sealed = !sale.entries && seal && !(buyer.place > 0) && savedHead();
    return [
      pos > 0 ? msg('queue.position', { position: I.number(pos) }) : msg('queue.in'),
      now() < sale.start ? msg('queue.drawn') : null,
      wait > 0 ? msg('queue.wait', { time: I.clock(wait * 1000) }) : null,
      msg('queue.keepOpen'),
      ...(sealed ? waitSays({ seal }) : []),
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
    if (r.status === 410 && code === 'NOT_SELECTED') {
      buyer.result = 'not-selected';
      if (Number.isSafeInteger(r.body.place) && r.body.place > 0) buyer.place = r.body.place;
      buyer.chance = null;
      return set('not-selected', phaseStatus('not-selected'));
    }
    if (r.status === 403 && code === 'ENTRIES_CLOSED') {
      buyer.result = 'raffle-closed';
      buyer.entered = false;
      notInDraw();
      return set('raffle-closed', phaseStatus('raffle-closed'));
    }
    if (r.status === 403 && (code === 'PRESALE_ONLY' || code === 'PRESALE_SOLD_OUT')) {
      const at = Date.parse(r.body.startsAt);
      buyer.presale = code === 'PRESALE_ONLY' ? 'presale-only' : 'presale-soldout';
      buyer.presaleUntil = Number.isFinite(at) ? at : sale.start;
      el.countdown.textContent = countdownText(buyer.presale);
      return set(buyer.presale, phaseStatus(buyer.presale));
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
      if (orderId || !getToken() || !sale || now() < (sale.presaleStart != null ? sale.presaleStart : sale.start)) return;
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
    forgetBuyer();
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

  // ---- the draw: entry and verification -----------------------------------
  // findEntry asks whether the buyer entered the raffle (a page reloaded,
  // another device), from the draw rather than the ticket endpoint, which
  // enters whoever asks while entries are open. A "not entered" is taken
  // only then: after the close the ticket endpoint says it (rafflePoll).
  async function findEntry() {
    const b = buyer;
    if (!sale.entries || !getToken() || now() < sale.entries.open || b.entered !== null) return;
    const r = await call('GET', '/sales/' + saleId + '/draw/me');
    if (b !== buyer || b.entered !== null) return;
    if (r.status === 200 && r.body.entered !== false) b.entered = true;
    else if (r.status === 404 && r.body.error === 'NOT_ENTERED' && now() < sale.entries.close) b.entered = false;
  }

  // keepNonce keeps the nonce of the buyer's entry, the first one only: a
  // nonce shown later that differs is the shop's change, not the buyer's.
  function keepNonce(n) {
    if (savedNonce()) return;
    try { localStorage.setItem(nonceKey(), tokenUser(getToken()) + ':' + n.toLowerCase()); } catch (e) { /* private mode */ }
  }
  function savedNonce() {
    let v = null;
    try { v = localStorage.getItem(nonceKey()); } catch (e) { return null; }
    const user = tokenUser(getToken());
    return v && user && v.startsWith(user + ':') ? v.slice(user.length + 1) : null;
  }

  // ---- the sealed draw: the tree head, then the beacon round ----------------
  // A raffle whose description names a beacon round (chain, round, head
  // key) is followed after the close through GET .../draw/me (sealWait):
  // once the entries are frozen the answer carries the signed tree head and
  // the buyer's inclusion proof, checked at once (draw.js) and kept, and
  // the page says "tree head received" (raffle-frozen) for headDwell, then
  // that it waits for the round (raffle-beacon, with the round's time);
  // at the reveal the whole draw is checked, the beacon round with it.

  // headDwell: how long "tree head received" stays on the status line
  // before the wait for the round replaces it (a screen reader reads it out
  // meanwhile; the round is at least 30 s away on drand's quicknet).
  const headDwell = 6000;

  // sealOf is the beacon round that seals the sale's draw (a raffle's or a
  // queue's), as its description published it: {chain (draw.js's chain:
  // name, test), round, at (server ms)}; null for a draw sealed by no
  // round, or a chain this page does not pin (its check says so).
  function sealOf() {
    const d = saleSeal();
    if (!sale || !d.chain || !d.round || !FlashSale.draw || !FlashSale.draw.chain) return null;
    const chain = FlashSale.draw.chain(d.chain);
    const at = chain && chain.at(d.round);
    return at ? { chain, round: String(d.round), at } : null;
  }
  const sealing = () => state === 'raffle-frozen' || state === 'raffle-beacon';

  // queueWitness keeps, for a buyer queued in a sale whose draw a beacon
  // round seals, the signed tree head between the draw's freeze (from the
  // start) and the round: asked of .../draw/me (queuedWait paces it) until
  // it carries the head, which is kept and checked, as a raffle entrant's
  // is (sealWait); "Verify my place" then compares the head the shop shows
  // with this one.
  async function queueWitness(b) {
    if (!witnessing(b) || now() < sale.start) return;
    const r = await call('GET', '/sales/' + saleId + '/draw/me');
    if (b !== buyer || r.status !== 200 || r.body.head == null || r.body.seed != null) return;
    keepHead(r.body);
    verifyPlace(r.body, false);
    if (state === 'queued' && b.inQueue) set('queued', queued(...b.inQueue));
  }
  // witnessing: b is queued in a sealed queue, with no head kept and no
  // place yet, before the round's time.
  const witnessing = (b) => {
    const seal = sealOf();
    return !sale.entries && seal && !(b.place > 0) && !savedHead() && now() < seal.at;
  };
  // queuedWait waits ms before the queued buyer b asks again; meanwhile,
  // in a sealed queue, it keeps the tree head (queueWitness: from the
  // start, every one to two seconds). False when the buyer changed.
  async function queuedWait(b, ms) {
    const until = now() + ms;
    for (;;) {
      await queueWitness(b);
      if (b !== buyer) return false;
      const n = now();
      if (n >= until) return true;
      const next = !witnessing(b) ? until : n < sale.start ? sale.start + Math.random() * 500 : n + 1000 + Math.random() * 1000;
      await sleep(Math.min(until, next) - n);
      if (b !== buyer) return false;
    }
  }

  // keepHead keeps the first tree head this browser received for the
  // signed-in buyer, with their leaf and proof and when it came (server
  // ms); savedHead reads it back.
  function keepHead(me) {
    if (savedHead() || me.head == null) return;
    const v = { user: tokenUser(getToken()), at: Math.round(now()), head: me.head, leaf: me.leaf, index: me.index, count: me.count, root: me.root, proof: me.proof };
    try { localStorage.setItem(headKey(), JSON.stringify(v)); } catch (e) { /* private mode */ }
  }
  function savedHead() {
    let v = null;
    try { v = JSON.parse(localStorage.getItem(headKey()) || 'null'); } catch (e) { return null; }
    const user = tokenUser(getToken());
    return v && user && v.user === user && v.head && typeof v.head === 'object' && Number.isFinite(v.at) ? v : null;
  }

  // sealWait follows a sealed raffle's draw for its entrant until the
  // reveal: GET .../draw/me every half second to a second until the
  // entries are frozen (every two to four seconds once that is late); then
  // nothing until the round's time (plus up to a second, so that the
  // entrants' pages do not all ask at once); then every one to two
  // seconds, every four to six once the round is half a minute late; a
  // failed ask backs off. False when the buyer changed meanwhile.
  async function sealWait(b, seal) {
    let fails = 0;
    for (;;) {
      const r = await call('GET', '/sales/' + saleId + '/draw/me');
      if (b !== buyer) return false;
      if (r.status === 401) { signedOut(); return false; }
      // Not an entrant after all: the ticket endpoint says the entries closed.
      if (r.status === 404 && r.body.error === 'NOT_ENTERED') { notInDraw(); return (b.sealed = true); }
      if (r.status === 200 && r.body.seed != null) {
        sealRevealed(b, r.body);
        return (b.sealed = true);
      }
      if (r.status === 200 && (r.body.head != null || r.body.root != null)) await heardHead(b, r.body, seal);
      if (b !== buyer) return false;
      fails = r.status === 200 || r.status === 404 ? 0 : fails + 1;
      const n = now();
      let wait;
      if (fails) wait = r.status === 429 ? r.retryAfter * 1000 : Math.min(8000, 1000 * 2 ** (fails - 1)) * (0.5 + Math.random());
      else if (!b.seal) wait = n < sale.entries.close + 5000 ? 500 + Math.random() * 500 : 2000 + Math.random() * 2000;
      else if (n < seal.at) wait = seal.at - n + 200 + Math.random() * 1000;
      else wait = n - seal.at < 30000 ? 1000 + Math.random() * 1000 : 4000 + Math.random() * 2000;
      await sleep(wait);
      if (b !== buyer) return false;
    }
  }

  // heardHead takes an answer of the frozen draw: the first head is kept,
  // the first answer checked (leaf, proof, head) and shown as "tree head
  // received" (a head kept before, by a reload, goes straight to the wait);
  // each answer's head is compared with the one kept.
  async function heardHead(b, me, seal) {
    const had = savedHead();
    keepHead(me);
    const s = b.seal || (b.seal = { seal, shownAt: had ? 0 : now(), changed: false, checked: false });
    s.me = me;
    const kept = had || savedHead();
    if (kept && !FlashSale.draw.sameHead(kept.head, me.head)) s.changed = true;
    if (!s.checked) {
      s.checked = true;
      await verifyPlace(me, false);
    }
    if (b === buyer) showSeal();
  }

  // sealRevealed takes the revealed draw's answer: compared with the head
  // kept, and checked in full (not waited for: the place is asked for
  // meanwhile).
  function sealRevealed(b, me) {
    const kept = savedHead();
    if (b.seal) {
      b.seal.me = me;
      if (kept && !FlashSale.draw.sameHead(kept.head, me.head)) b.seal.changed = true;
    }
    verifyPlace(me, false);
  }

  // showSeal shows where a sealed raffle's draw stands for the entrant:
  // the tree head received (for headDwell after it first came), then the
  // wait for the beacon round; the alert if it does not check out.
  function showSeal() {
    const s = buyer.seal;
    if (!s || buyer.place > 0 || buyer.result || !['loading', 'raffle-entered', 'raffle-frozen', 'raffle-beacon'].includes(state)) return;
    const st = now() < s.shownAt + headDwell ? 'raffle-frozen' : 'raffle-beacon';
    const status = st === 'raffle-frozen' ? headSays(s) : waitSays(s);
    if (state !== st) set(st, status);
    else {
      say(status);
      const a = sealAlarm();
      if (says.alert !== a) warn(a);
    }
    el.countdown.textContent = countdownText(phase());
  }
  // sealBad: the check of the frozen draw failed (or could not be made);
  // a raffle's entrant's answer carried no head.
  const sealBad = () => (buyer.seal && !buyer.seal.me.head) || (buyer.check && ['failed', 'error', 'unsupported'].includes(buyer.check.state));
  // headSays is the status line of "tree head received".
  function headSays(s) {
    const h = s.me.head;
    if (sealBad()) return msg('status.sealBad');
    return [
      msg('status.sealHead', { count: () => I.number(h.count), root: shortHash(h.root), time: () => I.time(h.frozenAtMs, true) }),
      buyer.check && buyer.check.state === 'frozen' ? msg('seal.checked') : null,
    ];
  }
  // waitSays is the status line of the wait for the beacon round.
  function waitSays(s) {
    const { seal } = s;
    return [
      sealBad() ? msg('status.sealBad') : null,
      msg('status.sealWait', { round: seal.round, chain: seal.chain.name, time: () => I.time(seal.at, true) }),
      seal.chain.test ? msg('seal.testChain', { chain: seal.chain.name }) : null,
      msg('seal.kept'),
    ];
  }
  // shortHash is a hash as a person compares it: its first 12 hex digits.
  const shortHash = (h) => (typeof h === 'string' && h.length > 12 ? h.slice(0, 12) + '…' : String(h || ''));

  // notInDraw takes the shop's word, after the close, that the buyer has
  // no entry in the raffle's draw. A browser that kept this buyer's entry
  // (its nonce, given only with the answer that entered them) heard the
  // shop accept it: the entry was dropped or lost since, and the page says
  // so (sealAlarm), whatever the draw.
  function notInDraw() {
    if (sale && sale.entries && now() >= sale.entries.close && savedNonce()) buyer.dropped = true;
  }

  // sealAlarm is the alert of a raffle's entrant whatever else the page
  // says: an entry this browser kept is not in the draw (notInDraw); the
  // head kept before the round is not the one the shop shows now, or a
  // check of the draw failed. One message each, kept, so that saying it
  // again does not announce it again.
  function sealAlarm() {
    if (buyer.dropped) return buyer.droppedAlarm || (buyer.droppedAlarm = msg('alert.entryDropped', { nonce: shortHash(savedNonce()) }));
    const s = buyer.seal;
    if (!s) return null;
    if (s.changed) {
      const kept = savedHead();
      return s.alarm || (s.alarm = msg('alert.headChanged', {
        kept: shortHash(kept && kept.head.root), time: () => (kept ? I.time(kept.at, true) : ''), root: shortHash(s.me.head && s.me.head.root),
      }));
    }
    if (buyer.check && buyer.check.state === 'failed') return s.bad || (s.bad = msg('alert.sealBad'));
    return null;
  }

  // keptWord is the check of a raffle's tree head against the one this
  // browser kept: ok (kept before the round's time, and the same), changed
  // (the shop shows another), after (first received at or after the
  // round's time: it witnesses nothing), none (none kept: the buyer came
  // after the round, or on another device); null for a sale not sealed.
  function keptWord(me) {
    const seal = sealOf();
    const kept = savedHead();
    if (!seal || (me.head == null && !kept)) return null;
    if (!kept) return 'none';
    if (!FlashSale.draw.sameHead(kept.head, me.head)) return 'changed';
    return kept.at < seal.at ? 'ok' : 'after';
  }

  // verifyPlace checks the buyer's place in the draw with draw.js, on the
  // answer of GET .../draw/me (given, or asked for), and shows each check
  // (renderCheck); focus: a click on "verify", which moves the focus to
  // the check.
  async function verifyPlace(given, focus) {
    const b = buyer;
    if (b.checking) {
      // (The reveal's answer is checked after the check that runs.)
      if (given) b.recheck = given;
      if (focus) el.checkH.focus();
      return;
    }
    b.checking = true;
    try {
      b.check = { state: 'checking' };
      renderCheck();
      if (focus) el.checkH.focus();
      if (!FlashSale.draw || !FlashSale.draw.supported()) { b.check = { state: 'unsupported' }; return; }
      let me = given;
      if (!me) {
        const r = await call('GET', '/sales/' + saleId + '/draw/me');
        if (b !== buyer) return;
        if (r.status === 401) { signedOut(); return; }
        if (r.status === 404 && r.body.error === 'NOT_ENTERED') { notInDraw(); b.check = { state: 'not-entered' }; return; }
        if (r.status !== 200) { b.check = { state: 'error', code: r.body.error || r.status || 'offline' }; return; }
        me = r.body;
      }
      let res;
      try {
        const ctx = { saleId, userId: tokenUser(getToken()), commitment: saleCommitment(), nonce: savedNonce(), ...saleSeal() };
        res = await FlashSale.draw.verify(me, ctx);
        if (me.seed != null) {
          // The public draw, as anyone sees it: the same root and seed, and
          // the buyer's place as the rank of their draw among all of them.
          // (A copy cached from before the reveal is read again from the
          // gateway: the public answers are cached a second.)
          const path = '/sales/' + saleId + '/draw';
          let pub = await publicGet(path);
          if (pub.status === 200 && pub.body.state !== 'REVEALED') pub = await publicGet(path, true);
          if (b !== buyer) return;
          res.published = pub.status === 200 ? await FlashSale.draw.published(me, pub.body) : 'mismatch';
        } else if (me.root != null) res.published = 'pending';
        if (me.root != null) {
          // The draw's log: every step once, in the open (a gateway that
          // does not answer leaves it pending, as a draw not revealed).
          const logOf = async (fresh) => {
            const lg = await publicGet('/sales/' + saleId + '/draw/log', fresh);
            return lg.status === 200 ? FlashSale.draw.log(me, lg.body, ctx) : 'pending';
          };
          res.log = await logOf(false);
          if (res.log === 'pending' && me.seed != null) res.log = await logOf(true);
          if (b !== buyer) return;
        }
        const kept = keptWord(me);
        if (kept) res.kept = kept;
      } catch (e) {
        b.check = { state: 'error', code: 'crypto' };
        return;
      }
      // "large": the public draw has more than one page; the page does not
      // read them all (flashctl sale draw verify does), and that is no failure.
      // "unsealed" (a sale from before the beacon) and "test" (the dev
      // chain's round) fail nothing either, but the page says what they
      // leave unproven instead of "verified"; nor do "none" and "after" (no
      // head kept before the round: nothing to compare).
      const words = Object.values(res).map((w) => (isNote(w) || w === 'large' ? 'ok' : w));
      let st = words.every((w) => w === 'ok') ? 'verified' : words.some((w) => w !== 'ok' && w !== 'pending') ? 'failed' : 'pending';
      if (st === 'verified' && isNote(res.beacon)) st = res.beacon;
      // Frozen, the head checked, the round not out yet.
      if (st === 'pending' && res.head === 'ok' && me.seed == null) st = 'frozen';
      b.check = { state: st, res, me };
    } finally {
      b.checking = false;
      if (b === buyer) {
        renderCheck();
        const a = sealAlarm();
        if (a && says.alert !== a) warn(a);
        if (b.recheck) {
          const again = b.recheck;
          b.recheck = null;
          verifyPlace(again, false);
        }
      }
    }
  }
  // isNote: draw.js's words that fail no check but limit what it proves.
  const isNote = (w) => w === 'unsealed' || w === 'test' || w === 'none' || w === 'after' || w === 'redrawn';
  // checkSays names each check's outcome (draw.js's words) as a message.
  const checkSays = {
    leaf: { ok: 'check.leafOk', mismatch: 'check.leafMismatch', nonce: 'check.leafNonce' },
    proof: { ok: 'check.proofOk', mismatch: 'check.proofMismatch', pending: 'check.proofPending' },
    head: { ok: 'check.headOk', mismatch: 'check.headMismatch', late: 'check.headLate', round: 'check.headRound', chain: 'check.chain',
      absent: 'check.headAbsent', unsealed: 'check.unsealedOne', pending: 'check.headPending' },
    kept: { ok: 'check.keptOk', changed: 'check.keptChanged', after: 'check.keptAfter', none: 'check.keptNone' },
    seed: { ok: 'check.seedOk', mismatch: 'check.seedMismatch', commitment: 'check.seedCommitment', absent: 'check.seedAbsent', pending: 'check.seedPending' },
    beacon: { ok: 'check.beaconOk', test: 'check.beaconTest', mismatch: 'check.beaconMismatch', round: 'check.beaconRound', chain: 'check.chain',
      absent: 'check.beaconAbsent', unsealed: 'check.unsealedOne', pending: 'check.beaconPending' },
    draw: { ok: 'check.drawOk', mismatch: 'check.drawMismatch', pending: 'check.drawPending' },
    published: { ok: 'check.publishedOk', mismatch: 'check.publishedMismatch', pending: 'check.publishedPending', large: 'check.publishedLarge' },
    log: { ok: 'check.logOk', redrawn: 'check.logRedrawn', pending: 'check.logPending', mismatch: 'check.logMismatch', absent: 'check.logAbsent',
      unsealed: 'check.logUnsealed' },
  };
  // renderCheck shows what verifyPlace found: a line for where it stands
  // (the section's data-state), one item per check, the numbers checked.
  function renderCheck() {
    const c = buyer.check;
    el.check.hidden = !c;
    el.check.dataset.state = c ? c.state : 'idle';
    if (!c) return;
    const me = c.me || {};
    const kept = savedHead();
    const place = () => I.number(me.place > 0 ? me.place : buyer.place);
    const line = {
      checking: msg('check.running'),
      verified: msg('check.verified', { place }),
      test: msg('check.test', { place }),
      unsealed: msg('check.unsealed', { place }),
      frozen: msg('check.frozen'),
      failed: msg('check.failed'),
      pending: msg('check.pending'),
      'not-entered': msg('check.notEntered'),
      error: msg('check.error', { code: c.code }),
      unsupported: msg('check.unsupported'),
    }[c.state];
    setText(el.checkStatus, I.text(line));
    const items = Object.keys(checkSays).filter((k) => c.res && c.res[k]).map((k) => {
      const w = c.res[k];
      const li = document.createElement('li');
      li.className = w === 'ok' ? 'ok' : w === 'pending' ? 'wait' : isNote(w) ? 'caveat' : 'bad';
      li.dataset.check = k;
      li.dataset.result = w;
      const verdict = document.createElement('span');
      verdict.className = 'verdict';
      verdict.textContent = t(w === 'ok' ? 'check.passed' : w === 'pending' ? 'check.notYet' : isNote(w) ? 'check.note' : 'check.failedOne');
      li.append(verdict, t(checkSays[k][w] || 'check.malformed', { count: I.number(me.count > 0 ? me.count : 0), time: kept ? I.time(kept.at, true) : '' }));
      return li;
    });
    el.checks.replaceChildren(...items);
    const values = [['check.nonce', me.nonce], ['check.leaf', me.leaf], ['check.root', me.root], ['check.seed', me.seed],
      ['check.commitment', me.commitment], ['check.beaconSignature', me.beacon && me.beacon.signature], ['check.draw', me.draw]]
      .filter(([, v]) => typeof v === 'string');
    el.checkValues.replaceChildren(...values.flatMap(([k, v]) => {
      const dt = document.createElement('dt');
      dt.textContent = t(k);
      const dd = document.createElement('dd');
      const code = document.createElement('code');
      code.textContent = v;
      dd.append(code);
      return [dt, dd];
    }));
    el.checkDetails.hidden = !values.length;
  }

  // forgetBuyer forgets what the page knew of the buyer's standing, at a
  // sign-in or sign-out.
  function forgetBuyer() {
    buyer = freshBuyer();
    renderCheck();
    renderOdds();
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
    forgetBuyer();
    warn(null);
    showAccount();
    await Promise.race([findEntry(), sleep(1500)]);
    state = 'loading';
    showPhase();
    (state === 'raffle-open' ? el.enter : buyOff() || el.buy.hidden ? el.title : el.buy).focus();
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
    renderOdds();
    renderCheck();
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
    el.signout.addEventListener('click', () => { setToken(null); forgetOrder(); orderId = null; forgetBuyer(); showAccount(); state = 'loading'; showPhase(); });
    el.enter.addEventListener('click', enterRaffle);
    el.verify.addEventListener('click', () => verifyPlace(null, true));
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
    if (sale.queueOpens && now() < sale.start && !sale.entries) joinAt = sale.queueOpens;
    const saved = savedOrder();
    refreshLoop();
    if (expired) { startClock(); return signedOut(); }
    if (saved) { orderId = saved; track(null); startClock(); return; }
    // The buyer's order, if any, before the page says "sold out" (bounded:
    // a slow answer is followed by the order when it arrives).
    await Promise.race([Promise.all([findOrder(), findEntry()]), sleep(1500)]);
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
