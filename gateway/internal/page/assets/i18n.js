// i18n.js: the sale page's languages. The page's bytes are the same for
// every buyer: the language is picked here, in the browser, and its
// messages are a content-hashed asset of the page (one JSON file per
// language, named by the switch's buttons in the HTML: data-lang and
// data-messages). A third language is one more file in assets/i18n/.
//
// The language is the buyer's choice on the switch (kept in localStorage),
// else the first of navigator.languages the page has, else English, the
// language of the HTML's own text. Dates, times, prices and counts are
// formatted with Intl in the buyer's locale: the browser's own tag when it
// is of the chosen language (en-GB), else the language.
//
// Messages are {placeholder} templates. msg() keeps a message as its key
// and values, so what the page shows can be shown again in another
// language when the buyer switches.
'use strict';
window.FlashSale = window.FlashSale || {};
FlashSale.i18n = (() => {
  const fallback = 'en';
  const saved = 'flashsale.lang';
  const buttons = () => [...document.querySelectorAll('#languages [data-lang]')];
  const loaded = {};
  const listeners = [];
  let lang = fallback;
  let locale = fallback;
  let messages = {};

  const primary = (tag) => String(tag).toLowerCase().split('-')[0];
  const preferred = () => (navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || fallback]);

  function pick() {
    const have = buttons().map((b) => b.dataset.lang);
    let choice = null;
    try { choice = localStorage.getItem(saved); } catch (e) { /* private mode */ }
    if (choice && have.includes(choice)) return choice;
    const match = preferred().map(primary).find((l) => have.includes(l));
    return match || fallback;
  }

  async function load(l) {
    if (loaded[l]) return loaded[l];
    const b = buttons().find((x) => x.dataset.lang === l);
    if (!b) throw new Error('no language ' + l);
    const r = await fetch(b.dataset.messages);
    if (!r.ok) throw new Error('messages ' + l + ': ' + r.status);
    loaded[l] = await r.json();
    return loaded[l];
  }

  // use shows the page in language l (remember: the buyer chose it). A
  // language whose file does not load falls back to English.
  async function use(l, remember) {
    let m;
    try { m = await load(l); } catch (e) {
      if (l === fallback) throw e;
      return use(fallback, false);
    }
    lang = l;
    messages = m;
    locale = preferred().find((tag) => primary(tag) === l) || l;
    if (remember) {
      try { localStorage.setItem(saved, l); } catch (e) { /* private mode */ }
    }
    document.documentElement.lang = l;
    document.querySelectorAll('[data-i18n]').forEach((e) => { e.textContent = t(e.dataset.i18n); });
    document.querySelectorAll('[data-i18n-label]').forEach((e) => e.setAttribute('aria-label', t(e.dataset.i18nLabel)));
    buttons().forEach((b) => b.setAttribute('aria-pressed', String(b.dataset.lang === l)));
    listeners.forEach((fn) => fn());
  }

  // start picks the language and shows the page in it; the switch's
  // buttons change it.
  function start() {
    buttons().forEach((b) => b.addEventListener('click', () => use(b.dataset.lang, true)));
    return use(pick(), false);
  }

  // t is message key in the current language with params filled in. A
  // missing key shows as itself (a test keeps every key in every file). A
  // param that is a function is called each time: a time or a list it
  // formats follows a switch of language.
  function t(key, params) {
    const s = typeof messages[key] === 'string' ? messages[key] : key;
    const value = (v) => String(typeof v === 'function' ? v() : v);
    return s.replace(/\{(\w+)\}/g, (all, k) => (params && k in params ? value(params[k]) : all));
  }
  const msg = (key, params) => ({ key, params });
  // text is what one message, or a list of them (sentences), says now.
  function text(refs) {
    const list = (Array.isArray(refs) ? refs : [refs]).filter(Boolean);
    return list.map((r) => t(r.key, r.params)).join(t('sentence.separator'));
  }

  // ---- formats in the buyer's locale -----------------------------------
  // money: price is in the currency's minor unit (cents, or yen).
  function money(price, currency) {
    try {
      const f = new Intl.NumberFormat(locale, { style: 'currency', currency });
      return f.format(price / Math.pow(10, f.resolvedOptions().maximumFractionDigits));
    } catch (e) { return price + ' ' + currency; }
  }
  const number = (n) => new Intl.NumberFormat(locale).format(n);
  // percent: x from 0 to 1, in whole percents rounded down (a chance of
  // 0.996 is not told as 100%).
  const percent = (x) => new Intl.NumberFormat(locale, { style: 'percent', maximumFractionDigits: 0 })
    .format(Math.floor(x * 100 + 1e-9) / 100);
  // list: words joined as "a, b or c" (type disjunction) in the locale.
  function list(words, type) {
    try { return new Intl.ListFormat(locale, { type: type || 'conjunction' }).format(words); } catch (e) { return words.join(', '); }
  }
  const dateTime = (ms) => new Intl.DateTimeFormat(locale, { year: 'numeric', month: 'short', day: 'numeric',
    hour: '2-digit', minute: '2-digit', timeZoneName: 'short' }).format(ms);
  const time = (ms, seconds) => new Intl.DateTimeFormat(locale, { hour: '2-digit', minute: '2-digit',
    second: seconds ? '2-digit' : undefined }).format(ms);
  // clock is a span of time as [days] hh:mm:ss (mm:ss under an hour).
  function clock(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, mi = Math.floor(s / 60) % 60, se = s % 60;
    const pad = (n) => String(n).padStart(2, '0');
    const hms = (d > 0 || h > 0 ? pad(h) + ':' : '') + pad(mi) + ':' + pad(se);
    return d > 0 ? t('clock.days', { days: d, time: hms }) : hms;
  }

  return {
    start, use, t, msg, text, money, number, percent, list, dateTime, time, clock,
    onChange: (fn) => listeners.push(fn),
    get lang() { return lang; },
  };
})();
