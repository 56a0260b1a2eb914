// draw.js: the buyer's own check of their place in a sale's verifiable
// draw (SPEC "Fair access"; the byte layouts are sharding/draw's, ported
// exactly). It runs in the browser with Web Crypto on the answer of
// GET /api/flash-sales/sales/{id}/draw/me, and trusts nothing the shop
// says of it: each check recomputes a hash from the buyer's own facts.
//
//   leaf:  SHA-256("flashsale-draw-leaf-v1\0" || sale id || user id || nonce),
//          ids as 8-byte big-endian, the nonce 16 bytes: the buyer's entry,
//          from their user id (the token's sub) and the nonce they alone got.
//   proof: RFC 6962's inclusion proof of that leaf (leaf node
//          SHA-256(0x00 || leaf), inner node SHA-256(0x01 || left || right),
//          the tree split at the largest power of two below its size) rebuilds
//          the published root: the entry is among the frozen entrants.
//   seed:  SHA-256(seed) is the commitment, and that is the one the sale's
//          description published before the draw.
//   draw:  HMAC-SHA256 under the seed of ("flashsale-draw-v1\0" || root ||
//          leaf) is the draw the shop ranked.
//   published: the public draw (GET .../draw) is the same draw (root, count,
//          seed, commitment), its leaves are sorted and hash to the root,
//          every draw is the seed's, and every place, the buyer's among them,
//          is its draw's rank: what flashctl sale draw verify checks, in the
//          browser, for a draw of one page (10,000 entrants); a bigger one
//          is "large" (not read here).
//
// verify answers each check with one word: ok; mismatch (computed and
// published differ); nonce (the shop's nonce is not the one this browser
// kept at entry); commitment (the draw's commitment is not the sale's);
// absent (the sale published no commitment); malformed (the answer cannot
// be read); pending (not revealed yet). No words of the page here: sale.js
// says them.
'use strict';
window.FlashSale = window.FlashSale || {};
FlashSale.draw = (() => {
  const enc = new TextEncoder();
  const leafTag = enc.encode('flashsale-draw-leaf-v1\x00');
  const drawTag = enc.encode('flashsale-draw-v1\x00');
  const maxU64 = (1n << 64n) - 1n;

  // supported: Web Crypto is there only in a secure context (https, or
  // this machine).
  const supported = () => !!(globalThis.crypto && crypto.subtle && typeof BigInt === 'function');

  // bytes parses n bytes of hex, or returns null.
  function bytes(hex, n) {
    if (typeof hex !== 'string' || hex.length !== 2 * n || !/^[0-9a-fA-F]*$/.test(hex)) return null;
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) b[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
    return b;
  }
  // id parses a decimal id of 1 to 2^64-1 (a user id) or 2^63-1 (a sale's).
  function id(v, max) {
    const s = String(v);
    if (!/^[1-9][0-9]{0,19}$/.test(s)) return null;
    const n = BigInt(s);
    return n <= max ? n : null;
  }
  function u64(v) {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, v, false);
    return b;
  }
  function concat(parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) { out.set(p, at); at += p.length; }
    return out;
  }
  const same = (a, b) => !!a && !!b && a.length === b.length && a.every((v, i) => v === b[i]);
  const sha256 = async (...parts) => new Uint8Array(await crypto.subtle.digest('SHA-256', concat(parts)));
  async function hmac(key, ...parts) {
    const k = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    return new Uint8Array(await crypto.subtle.sign('HMAC', k, concat(parts)));
  }

  const leaf = (sale, user, nonce) => sha256(leafTag, u64(sale), u64(user), nonce);
  const leafHash = (l) => sha256(Uint8Array.of(0), l);
  const nodeHash = (l, r) => sha256(Uint8Array.of(1), l, r);
  // split is the largest power of two less than n (n > 1).
  function split(n) {
    let k = 1;
    while (k * 2 < n) k *= 2;
    return k;
  }
  // climb rebuilds the root from node h at index i of a subtree of n leaves
  // and its proof, listed from the leaf's sibling up (draw.climb).
  async function climb(h, i, n, proof) {
    if (n === 1) return [h, proof.length === 0];
    if (proof.length === 0) return [h, false];
    const k = split(n);
    const sib = proof[proof.length - 1];
    const rest = proof.slice(0, -1);
    if (i < k) {
      const [l, ok] = await climb(h, i, k, rest);
      return [await nodeHash(l, sib), ok];
    }
    const [r, ok] = await climb(h, i - k, n - k, rest);
    return [await nodeHash(sib, r), ok];
  }
  // included is draw.VerifyInclusion.
  async function included(l, i, n, proof, root) {
    if (!Number.isSafeInteger(i) || !Number.isSafeInteger(n) || i < 0 || i >= n) return false;
    const [h, ok] = await climb(await leafHash(l), i, n, proof);
    return ok && same(h, root);
  }

  // verify checks me, the answer of .../draw/me, for the page's sale
  // (saleId), the signed-in user (userId, the token's sub), the commitment
  // the sale's description published (null: none) and the nonce this
  // browser kept when the buyer entered (null: none kept). It resolves to
  // {leaf, proof, seed, draw}, each one word (above).
  async function verify(me, { saleId, userId, commitment, nonce }) {
    const out = { leaf: 'malformed', proof: 'pending', seed: 'pending', draw: 'pending' };
    const sale = id(saleId, maxU64 >> 1n);
    const user = id(userId, maxU64);
    const n = bytes(me.nonce, 16);
    const given = bytes(me.leaf, 32);
    let mine = null; // the leaf from the buyer's own facts
    if (sale && user && n && given) {
      mine = await leaf(sale, user, n);
      if (nonce && nonce.toLowerCase() !== me.nonce.toLowerCase()) out.leaf = 'nonce';
      else out.leaf = same(mine, given) && String(me.saleId) === String(saleId) ? 'ok' : 'mismatch';
    }
    const subject = mine || given;

    const root = me.root == null ? null : bytes(me.root, 32);
    if (me.root != null || me.proof != null || me.index != null || me.count != null) {
      const proof = Array.isArray(me.proof) ? me.proof.map((h) => bytes(h, 32)) : null;
      if (!subject || !root || !proof || proof.includes(null) || !Number.isSafeInteger(me.index) || !Number.isSafeInteger(me.count)) out.proof = 'malformed';
      else out.proof = (await included(subject, me.index, me.count, proof, root)) ? 'ok' : 'mismatch';
    }

    if (me.seed != null || me.commitment != null) {
      const seed = bytes(me.seed, 32);
      const com = bytes(me.commitment, 32);
      if (!seed || !com) out.seed = 'malformed';
      else if (!same(await sha256(seed), com)) out.seed = 'mismatch';
      else if (!commitment) out.seed = 'absent';
      else out.seed = same(bytes(commitment, 32), com) ? 'ok' : 'commitment';
    }
    if (me.seed != null || me.draw != null) {
      const seed = bytes(me.seed, 32);
      const d = bytes(me.draw, 32);
      if (!seed || !d || !root || !subject) out.draw = 'malformed';
      else out.draw = same(await hmac(seed, drawTag, root, subject), d) ? 'ok' : 'mismatch';
    }
    return out;
  }

  // mth is RFC 6962's Merkle tree hash of leaves (draw.Root).
  async function mth(ls) {
    if (ls.length === 0) return sha256();
    if (ls.length === 1) return leafHash(ls[0]);
    const k = split(ls.length);
    return nodeHash(await mth(ls.slice(0, k)), await mth(ls.slice(k)));
  }

  // published checks me, the answer of .../draw/me, against doc, the public
  // draw as GET .../draw served it (one page: when it has more, "large").
  async function published(me, doc) {
    if (!doc || doc.state !== 'REVEALED') return 'pending';
    if (doc.root !== me.root || doc.count !== me.count || doc.seed !== me.seed || doc.commitment !== me.commitment) return 'mismatch';
    const es = Array.isArray(doc.entries) ? doc.entries : [];
    if (doc.next != null || doc.from !== 0 || es.length !== doc.count) return es.length < doc.count ? 'large' : 'mismatch';
    const seed = bytes(doc.seed, 32);
    const root = bytes(doc.root, 32);
    const ls = es.map((e) => bytes(e && e.leaf, 32));
    if (!seed || !root || ls.includes(null)) return 'malformed';
    for (let i = 1; i < es.length; i++) if (!(es[i - 1].leaf < es[i].leaf)) return 'mismatch';
    if (!same(await mth(ls), root)) return 'mismatch';
    const k = await crypto.subtle.importKey('raw', seed, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    for (let i = 0; i < es.length; i++) {
      const d = new Uint8Array(await crypto.subtle.sign('HMAC', k, concat([drawTag, root, ls[i]])));
      if (!same(d, bytes(es[i].draw, 32))) return 'mismatch';
    }
    const order = es.map((_, i) => i).sort((a, b) => (es[a].draw < es[b].draw ? -1 : es[a].draw > es[b].draw ? 1 : es[a].leaf < es[b].leaf ? -1 : 1));
    for (let r = 0; r < order.length; r++) if (es[order[r]].place !== r + 1) return 'mismatch';
    const mine = es[me.index];
    return mine && mine.leaf === me.leaf && mine.draw === me.draw && mine.place === me.place ? 'ok' : 'mismatch';
  }

  return { supported, verify, published };
})();
