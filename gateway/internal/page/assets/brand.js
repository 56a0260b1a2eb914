// brand.js: the shop's branding on the sale page, drawn from the public
// sale description (brand: shop, logo, accent, banner; each item's image
// and description), never from the HTML, which is the same for every sale.
//
// Images are decorative (the shop's name and the item's name stand beside
// them, so alt is empty), sized before they load and never waited for: a
// slow or broken image leaves the page, and its buy button, as they are; a
// broken one is hidden.
//
// The accent colour was checked at the sale's creation to read as text on
// the page's light backgrounds (4.5:1); here it is moved toward black or
// white until it does on the backgrounds of the colour scheme in use (the
// dark one needs a lighter shade), and the buy button's text is white or
// black, whichever reads better on it.
'use strict';
window.FlashSale = window.FlashSale || {};
FlashSale.brand = (() => {
  const $ = (id) => document.getElementById(id);
  const dark = matchMedia('(prefers-color-scheme: dark)');
  let accent = null;

  function show(sale) {
    const b = sale.brand || {};
    $('shop-name').textContent = b.shop || '';
    $('shop').hidden = !b.shop;
    setSrc($('logo'), b.logo);
    $('banner').textContent = b.banner || '';
    $('banner').hidden = !b.banner;
    accent = b.accent ? parse(b.accent) : null;
    paint();
  }

  function setSrc(img, src) {
    if (!src) { img.hidden = true; img.removeAttribute('src'); return; }
    if (img.getAttribute('src') === src) return;
    img.hidden = false;
    img.src = src;
  }
  $('logo').addEventListener('error', (e) => { e.target.hidden = true; });

  // images keeps one <img> per item, so a refresh of the sale does not
  // load it again.
  const images = new Map();
  function image(itemId, src) {
    if (!src) return null;
    let img = images.get(itemId);
    if (!img || img.getAttribute('src') !== src) {
      img = document.createElement('img');
      img.className = 'item-image';
      img.alt = '';
      img.width = 80;
      img.height = 80;
      img.decoding = 'async';
      img.loading = 'lazy';
      img.addEventListener('error', () => { img.hidden = true; });
      img.src = src;
      images.set(itemId, img);
    }
    return img;
  }

  // ---- the accent colour ---------------------------------------------------
  function paint() {
    const st = document.documentElement.style;
    if (!accent) {
      st.removeProperty('--accent');
      st.removeProperty('--accent-fg');
      return;
    }
    const css = getComputedStyle(document.body);
    const backgrounds = ['--bg', '--panel'].map((v) => parse(css.getPropertyValue(v).trim()) || [255, 255, 255]);
    const c = readable(accent, backgrounds, 4.5);
    st.setProperty('--accent', hex(c));
    st.setProperty('--accent-fg', contrast(c, [255, 255, 255]) >= contrast(c, [0, 0, 0]) ? '#ffffff' : '#000000');
  }
  dark.addEventListener('change', paint);

  // readable moves c toward black (on light backgrounds) or white (on dark
  // ones) until it reaches min against every background.
  function readable(c, backgrounds, min) {
    const to = luminance(backgrounds[0]) > 0.5 ? [0, 0, 0] : [255, 255, 255];
    for (let i = 0; i <= 20; i++) {
      const m = c.map((v, k) => Math.round(v + (to[k] - v) * i / 20));
      if (backgrounds.every((b) => contrast(m, b) >= min)) return m;
    }
    return to;
  }
  function parse(v) {
    const m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(v || '');
    if (!m) return null;
    const h = m[1].length === 3 ? m[1].replace(/./g, '$&$&') : m[1];
    return [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16));
  }
  const hex = (c) => '#' + c.map((v) => v.toString(16).padStart(2, '0')).join('');
  function luminance(c) {
    const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  }
  function contrast(a, b) {
    const x = luminance(a), y = luminance(b);
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  }

  return { show, image };
})();
