// draw.js: the buyer's own check of their place in a sale's verifiable
// draw (SPEC "Fair access"; the byte layouts are sharding/draw's, ported
// exactly). It runs in the browser with Web Crypto and the vendored
// @noble/curves (vendor/noble-curves.min.js: Ed25519 and BLS12-381, see its
// README) on the answer of GET /api/flash-sales/sales/{id}/draw/me, and
// trusts nothing the shop says of it: each check recomputes a hash or a
// signature from the buyer's own facts and the sale's description.
//
//   leaf:  SHA-256("flashsale-draw-leaf-v1\0" || sale id || user id || nonce),
//          ids as 8-byte big-endian, the nonce 16 bytes: the buyer's entry,
//          from their user id (the token's sub) and the nonce they alone got.
//   proof: RFC 6962's inclusion proof of that leaf (leaf node
//          SHA-256(0x00 || leaf), inner node SHA-256(0x01 || left || right),
//          the tree split at the largest power of two below its size)
//          rebuilds the published root: the entry is among the frozen
//          entrants.
//   head:  the signed tree head ("flashsale-draw-head-v1\0" || sale || count
//          || root || frozen-at unix ms || chain hash || round, integers
//          8-byte big-endian) is signed with Ed25519 under the head key the
//          sale's description published, names this root, count, sale and
//          the sale's committed round, and was frozen before that round's
//          time on its chain: the entrants were fixed before anyone could
//          know the round.
//   beacon: the round's signature is the pinned chain's BLS signature (on
//          G1, key on G2, RFC 9380's BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_)
//          of SHA-256(round as 8 bytes), for the round the sale committed to.
//   seed:  SHA-256(seed) is the commitment, and that is the one the sale's
//          description published before the draw.
//   draw:  HMAC-SHA256 under the draw key of ("flashsale-draw-v1\0" || root ||
//          leaf) is the draw the shop ranked; the key is SHA-256(
//          "flashsale-draw-key-v2\0" || seed || SHA-256(round's signature)),
//          or the seed itself for a sale sealed by no round.
//   published: the public draw (GET .../draw) is the same draw (root, count,
//          seed, commitment, head, round), its address (id) is the hash of
//          what it serves (sharding/draw's ID), its leaves are sorted and hash to
//          the root, every draw is the key's, and every place, the buyer's
//          among them, is its draw's rank: what flashctl sale draw verify
//          checks, in the browser, for a draw of one page (10,000
//          entrants); a bigger one is "large" (not read here).
//   log:   the draw's log (GET .../draw/log) is chained (each entry's hash
//          over the one before), follows the rules (one commitment, one
//          freeze before the round's time, no second beacon or reveal
//          without an abort) and tells this draw: log (below).
//
// verify answers each check with one word: ok; mismatch (computed and
// published differ, or a signature does not verify); nonce (the shop's
// nonce is not the one this browser kept at entry); commitment (the draw's
// commitment is not the sale's); absent (the sale published no commitment;
// or, for a sale sealed by a round, no head key, no head, or a seed
// revealed without the round's signature);
// late (the head was frozen at or after its round's time); round (the
// round is not the one the sale committed to); chain (a beacon chain this
// page does not pin); test (the round is the dev chain's, which anyone can
// sign: it proves nothing); unsealed (a sale created before the beacon:
// no head, the draw keyed on the seed alone); malformed (the answer cannot
// be read); pending (not frozen, the round not out, or not revealed yet).
// The head key, chain and round are the sale description's, never the
// answer's. chain names a pinned chain and the time of its rounds (the
// page's wait for the round); sameHead compares a head this browser kept
// with a later answer's. No words of the page here: sale.js says them.
'use strict';
window.FlashSale = window.FlashSale || {};
FlashSale.draw = (() => {
  const enc = new TextEncoder();
  const leafTag = enc.encode('flashsale-draw-leaf-v1\x00');
  const drawTag = enc.encode('flashsale-draw-v1\x00');
  const keyTag = enc.encode('flashsale-draw-key-v2\x00');
  const headTag = enc.encode('flashsale-draw-head-v1\x00');
  const idTag = enc.encode('flashsale-draw-id-v1\x00');
  const maxU64 = (1n << 64n) - 1n;

  // chains are the beacon chains this page pins (sharding/draw/beacon), by
  // their hash: the public key (a compressed G2 point), the genesis (unix
  // s), the period (s) and the name of each. dev is the test chain, whose
  // secret key anyone can derive: its rounds prove nothing.
  const chains = {
    // drand quicknet (League of Entropy), bls-unchained-g1-rfc9380
    '52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971': {
      key: '83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a',
      genesis: 1692803367, period: 3, dev: false, name: 'quicknet',
    },
    // beacon.Dev: the local stack's and the tests' chain
    '3f1cecfc0dd063005d64a49e4bc28354e01b7a03761cf8a42c89e82b74f6c724': {
      key: 'b6640672e9e702a059caa0c97c561abfc565fa21e772b4b9e69e77a60b7e8d29b5e2570ac9085da66dc0c08085b2e921045f7580b2c1fe813c8eab9d9da184a473b1a3c9d1e7829591ce0a24b5826cda3a542b3caa297e38ca8a972fb7df49dc',
      genesis: 1700000000, period: 1, dev: true, name: 'dev',
    },
  };
  const beaconDST = 'BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_';

  // supported: Web Crypto is there only in a secure context (https, or
  // this machine).
  const supported = () => !!(globalThis.crypto && crypto.subtle && typeof BigInt === 'function');

  // curves is the vendored @noble/curves; a page without it cannot check a
  // signature, which is an error (sale.js: "crypto"), not a verdict. On a
  // base point's first multiplication noble builds a table of its
  // multiples, which pays off over many signatures; a check multiplies each
  // base once (the subgroup check of G2's generator, Ed25519's [s]B), and
  // the two tables were half its time on a phone's CPU: precompute(1) keeps
  // both bases table-less (the same results, by noble's documented API).
  let tuned = false;
  function curves() {
    const c = globalThis.nobleCurves;
    if (!c || !c.ed25519 || !c.bls12_381) throw new Error('draw.js: vendor/noble-curves.min.js is not loaded');
    if (!tuned) {
      c.bls12_381.G2.Point.BASE.precompute(1);
      c.ed25519.Point.BASE.precompute(1);
      tuned = true;
    }
    return c;
  }

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
  // round parses a beacon round (1 or more), as JSON or the sale's
  // description gives it, or returns null.
  function round(v) {
    const r = typeof v === 'string' && /^[1-9][0-9]{0,15}$/.test(v) ? Number(v) : v;
    return Number.isSafeInteger(r) && r >= 1 ? r : null;
  }
  // hexOf is v, n bytes of hex, in lower case; or null.
  const hexOf = (v, n) => (bytes(v, n) ? v.toLowerCase() : null);
  const chainOf = (hex) => hexOf(hex, 32);
  function u64(v) {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt(v), false);
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

  // readHead reads a tree head as .../draw/me serves it ({sale, count,
  // root, frozenAtMs, chain, round, signature}) with its signed bytes
  // (draw.Head.Message), or returns null.
  function readHead(h) {
    if (!h || typeof h !== 'object') return null;
    const sale = id(h.sale, maxU64 >> 1n);
    const root = bytes(h.root, 32);
    const chain = bytes(h.chain, 32);
    const sig = bytes(h.signature, 64);
    const r = round(h.round);
    if (!sale || !root || !chain || !sig || !r || !Number.isSafeInteger(h.count) || h.count < 0 ||
      !Number.isSafeInteger(h.frozenAtMs) || h.frozenAtMs <= 0) return null;
    const msg = concat([headTag, u64(sale), u64(h.count), root, u64(h.frozenAtMs), chain, u64(r)]);
    return { sale, count: h.count, root, frozenAtMs: h.frozenAtMs, chain: chainOf(h.chain), round: r, sig, msg };
  }
  // readBeacon reads a beacon round ({chain, round, signature}; the
  // signature is null until the round is out and recorded), or returns
  // null.
  function readBeacon(b) {
    if (!b || typeof b !== 'object') return null;
    const sig = b.signature == null ? null : bytes(b.signature, 48);
    const r = round(b.round);
    const chain = chainOf(b.chain);
    return r && chain && (sig || b.signature == null) ? { chain, round: r, sig } : null;
  }
  // timeOf is when round r of chain c is published (unix ms).
  const timeOf = (c, r) => (c.genesis + (r - 1) * c.period) * 1000;

  // checkHead is the head's word for me under the sale's commitments
  // (committed: the head key, chain and round of its description).
  function checkHead(me, sale, committed) {
    if (me.head == null) {
      if (!committed.sealed) return 'unsealed';
      return me.root == null && me.seed == null ? 'pending' : 'absent';
    }
    const h = readHead(me.head);
    if (!h) return 'malformed';
    if (!committed.headKey) return 'absent';
    const { ed25519 } = curves();
    let good;
    try {
      good = ed25519.verify(h.sig, h.msg, committed.headKey, { zip215: false });
    } catch (e) {
      good = false; // a key or signature that is no point of the curve
    }
    if (!good || h.sale !== sale || (me.root != null && !same(bytes(me.root, 32), h.root)) || (me.count != null && me.count !== h.count)) return 'mismatch';
    if (h.chain !== committed.chain || h.round !== committed.round) return 'round';
    const c = chains[h.chain];
    if (!c) return 'chain';
    return h.frozenAtMs < timeOf(c, h.round) ? 'ok' : 'late';
  }

  // checkBeacon is the beacon round's word for me.
  async function checkBeacon(me, committed) {
    if (me.beacon == null) {
      if (!committed.sealed) return 'unsealed';
      return me.seed == null ? 'pending' : 'absent';
    }
    const b = readBeacon(me.beacon);
    if (!b) return 'malformed';
    const c = chains[b.chain];
    if (!c) return 'chain';
    if (b.chain !== committed.chain || b.round !== committed.round) return 'round';
    if (!b.sig) return me.seed == null ? 'pending' : 'absent';
    if (!(await signs(c, b.round, b.sig))) return 'mismatch';
    return c.dev ? 'test' : 'ok';
  }
  // signs reports whether sig is chain c's signature of round r: a BLS
  // signature on G1 of SHA-256(r as 8 bytes) under c's key on G2.
  async function signs(c, r, sig) {
    const bls = curves().bls12_381.shortSignatures;
    const m = await sha256(u64(r));
    try {
      return bls.verify(sig, bls.hash(m, beaconDST), bytes(c.key, 96));
    } catch (e) {
      return false; // a signature that is no point of G1
    }
  }

  // drawKey is the draw key: SHA-256(keyTag || seed || SHA-256(signature))
  // under a beacon round, the seed itself without one (or without its
  // signature: the beacon check says "absent"); null when either cannot be
  // read.
  // drawID is the revealed draw's address (sharding/draw's ID): SHA-256 of
  // ("flashsale-draw-id-v1\0" || sale || count || root || frozen-at unix ms
  // || seed || round || SHA-256(round's signature)), round and randomness
  // zero without a round; the pages served under it can never change. null
  // for a draw it cannot read.
  async function drawID(doc) {
    const b = doc.beacon == null ? null : readBeacon(doc.beacon);
    const root = bytes(doc.root, 32), seed = bytes(doc.seed, 32), sale = id(doc.saleId, maxU64 >> 1n);
    const frozen = typeof doc.frozenAt === 'string' ? Date.parse(doc.frozenAt) : NaN;
    if (!root || !seed || !sale || !Number.isSafeInteger(doc.count) || doc.count < 0 || !Number.isSafeInteger(frozen) || frozen <= 0 ||
      (doc.beacon != null && !(b && b.sig))) return null;
    const tail = b ? [u64(b.round), await sha256(b.sig)] : [new Uint8Array(40)];
    return sha256(idTag, u64(sale), u64(doc.count), root, u64(frozen), seed, ...tail);
  }

  async function drawKey(seedHex, beacon) {
    const seed = bytes(seedHex, 32);
    if (!seed) return null;
    if (beacon == null) return seed;
    const b = readBeacon(beacon);
    if (!b) return null;
    return b.sig ? sha256(keyTag, seed, await sha256(b.sig)) : seed;
  }

  // verify checks me, the answer of .../draw/me, for the page's sale
  // (saleId), the signed-in user (userId, the token's sub), what the sale's
  // description published: the commitment (null: none), the head key (64
  // hex), the beacon chain's hash and round (null: a sale sealed by no
  // round); and the nonce this browser kept when the buyer entered (null:
  // none kept). It resolves to {leaf, proof, head, seed, beacon, draw},
  // each one word (above).
  async function verify(me, { saleId, userId, commitment, nonce, headKey = null, chain = null, round: r = null }) {
    const out = { leaf: 'malformed', proof: 'pending', head: 'pending', seed: 'pending', beacon: 'pending', draw: 'pending' };
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

    const committed = {
      sealed: headKey != null || chain != null || r != null,
      headKey: bytes(headKey, 32),
      chain: chainOf(chain),
      round: round(r),
    };
    out.head = checkHead(me, sale, committed);
    out.beacon = await checkBeacon(me, committed);

    if (me.seed != null || me.commitment != null) {
      const seed = bytes(me.seed, 32);
      const com = bytes(me.commitment, 32);
      if (!seed || !com) out.seed = 'malformed';
      else if (!same(await sha256(seed), com)) out.seed = 'mismatch';
      else if (!commitment) out.seed = 'absent';
      else out.seed = same(bytes(commitment, 32), com) ? 'ok' : 'commitment';
    }
    if (me.seed != null || me.draw != null) {
      const key = await drawKey(me.seed, me.beacon);
      const d = bytes(me.draw, 32);
      if (!key || !d || !root || !subject) out.draw = 'malformed';
      else out.draw = same(await hmac(key, drawTag, root, subject), d) ? 'ok' : 'mismatch';
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

  // sameFields reports whether a and b are both absent, or both have the
  // same value in each of keys.
  const sameFields = (a, b, keys) => (a == null || b == null ? a == null && b == null : keys.every((k) => a[k] === b[k]));
  const headKeys = ['sale', 'count', 'root', 'frozenAtMs', 'chain', 'round', 'signature'];
  const beaconKeys = ['chain', 'round', 'signature'];

  // published checks me, the answer of .../draw/me, against doc, the public
  // draw as GET .../draw served it (one page: when it has more, "large"):
  // verify checked me's head and round, and doc must serve the same ones.
  async function published(me, doc) {
    if (!doc || doc.state !== 'REVEALED') return 'pending';
    if (doc.root !== me.root || doc.count !== me.count || doc.seed !== me.seed || doc.commitment !== me.commitment ||
      !sameFields(doc.head, me.head, headKeys) || !sameFields(doc.beacon, me.beacon, beaconKeys)) return 'mismatch';
    if (doc.id != null && !same(await drawID(doc), bytes(doc.id, 32))) return 'mismatch';
    const es = Array.isArray(doc.entries) ? doc.entries : [];
    if (doc.next != null || doc.from !== 0 || es.length !== doc.count) return es.length < doc.count ? 'large' : 'mismatch';
    const key = await drawKey(doc.seed, doc.beacon);
    const root = bytes(doc.root, 32);
    const ls = es.map((e) => bytes(e && e.leaf, 32));
    if (!key || !root || ls.includes(null)) return 'malformed';
    for (let i = 1; i < es.length; i++) if (!(es[i - 1].leaf < es[i].leaf)) return 'mismatch';
    if (!same(await mth(ls), root)) return 'mismatch';
    const k = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    for (let i = 0; i < es.length; i++) {
      const d = new Uint8Array(await crypto.subtle.sign('HMAC', k, concat([drawTag, root, ls[i]])));
      if (!same(d, bytes(es[i].draw, 32))) return 'mismatch';
    }
    const order = es.map((_, i) => i).sort((a, b) => (es[a].draw < es[b].draw ? -1 : es[a].draw > es[b].draw ? 1 : es[a].leaf < es[b].leaf ? -1 : 1));
    for (let r = 0; r < order.length; r++) if (es[order[r]].place !== r + 1) return 'mismatch';
    const mine = es[me.index];
    return mine && mine.leaf === me.leaf && mine.draw === me.draw && mine.place === me.place ? 'ok' : 'mismatch';
  }

  // The draw's log (sharding/draw's log.go, ported): each entry's hash is
  // SHA-256("flashsale-draw-log-v1\0" || the previous hash (32 zero bytes
  // for the first) || its body, the exact JSON text served), so a change,
  // a drop or an insertion breaks every hash after it.
  const logTag = enc.encode('flashsale-draw-log-v1\x00');
  const logFields = new Set(['seq', 'event', 'sale', 'at', 'commitment', 'chain', 'round', 'headKey', 'root', 'count', 'frozenAt', 'headSig',
    'signature', 'seed', 'reason']);

  // logRules applies the log's rules (draw.CheckLog) to its events, in
  // order: the commitment first and once; one freeze, before the committed
  // round's time; a beacon after the freeze, for the committed round; a
  // reveal after the beacon (or the freeze, unsealed); a second beacon or
  // reveal only after an abort, which gives its reason. It returns the last
  // event of each kind and the aborts, or null when a rule is broken.
  function logRules(events) {
    const st = { commit: null, freeze: null, beacon: null, reveal: null, aborts: 0 };
    let again = { beacon: false, reveal: false };
    for (const e of events) {
      if ((st.commit === null) !== (e.event === 'commit')) return null;
      switch (e.event) {
        case 'commit':
          if (!hexOf(e.commitment, 32) || (e.round != null && (!round(e.round) || !chains[chainOf(e.chain)]))) return null;
          st.commit = e;
          break;
        case 'freeze': {
          if (st.freeze || !hexOf(e.root, 32) || !Number.isSafeInteger(e.count) || e.count < 0 || !Number.isSafeInteger(e.frozenAt) || e.frozenAt <= 0) return null;
          const c = st.commit.round != null && chains[chainOf(st.commit.chain)];
          if (c && e.frozenAt >= timeOf(c, st.commit.round)) return null;
          st.freeze = e;
          break;
        }
        case 'beacon':
          if (!st.freeze || (st.beacon && !again.beacon) || st.commit.round == null || e.round !== st.commit.round) return null;
          st.beacon = e;
          again.beacon = false;
          break;
        case 'reveal':
          if (!st.freeze || (st.commit.round != null && !st.beacon) || (st.reveal && !again.reveal) || !hexOf(e.seed, 32)) return null;
          st.reveal = e;
          again.reveal = false;
          break;
        case 'abort':
          if (typeof e.reason !== 'string' || e.reason === '') return null;
          st.aborts++;
          again = { beacon: st.beacon !== null, reveal: st.reveal !== null };
          break;
        default:
          return null;
      }
    }
    return st;
  }

  // log checks doc, the draw's log as GET .../draw/log served it, for the
  // page's sale and what its description published (as verify), against
  // me, the answer of .../draw/me: its chain of hashes and its rules, and
  // that it tells me's draw (commitment, round and head key; root, count
  // and the head's signature and time; the round's signature; the seed).
  // Its word: ok; redrawn (as ok, with an abort and a redraw in the open);
  // pending (right so far, the steps me shows not all logged yet);
  // mismatch; absent (a sealed sale with no log); unsealed (a sale from
  // before the log); malformed.
  async function log(me, doc, { saleId, commitment, headKey = null, chain = null, round: r = null }) {
    const sealed = headKey != null || chain != null || r != null;
    if (!doc || typeof doc !== 'object' || !Array.isArray(doc.entries)) return 'malformed';
    if (doc.entries.length === 0) return sealed ? 'absent' : 'unsealed';
    let prev = new Uint8Array(32);
    const events = [];
    for (const [i, en] of doc.entries.entries()) {
      const h = en && bytes(en.hash, 32);
      if (!h || typeof en.body !== 'string') return 'malformed';
      if (!same(await sha256(logTag, prev, enc.encode(en.body)), h)) return 'mismatch';
      prev = h;
      let e;
      try { e = JSON.parse(en.body); } catch (err) { return 'malformed'; }
      if (!e || typeof e !== 'object' || Object.keys(e).some((k) => !logFields.has(k))) return 'malformed';
      if (e.seq !== i || String(e.sale) !== String(saleId)) return 'mismatch';
      events.push(e);
    }
    const st = logRules(events);
    if (!st) return 'mismatch';
    const c = st.commit;
    const low = (v) => (typeof v === 'string' ? v.toLowerCase() : v);
    if (low(c.commitment) !== low(commitment)) return 'mismatch';
    if (sealed ? c.round !== round(r) || low(c.chain) !== low(chain) || low(c.headKey) !== low(headKey) : c.round != null) return 'mismatch';
    const f = st.freeze;
    if (f && me.root != null && (low(f.root) !== low(me.root) || f.count !== me.count)) return 'mismatch';
    if (f && me.head != null && (low(f.headSig) !== low(me.head.signature) || f.frozenAt !== me.head.frozenAtMs)) return 'mismatch';
    const sig = me.beacon && me.beacon.signature;
    if (st.beacon && sig != null && low(st.beacon.signature) !== low(sig)) return 'mismatch';
    if (st.reveal && me.seed != null && low(st.reveal.seed) !== low(me.seed)) return 'mismatch';
    if (me.seed == null || !f || !st.reveal || (sealed && !st.beacon)) return 'pending';
    return st.aborts > 0 ? 'redrawn' : 'ok';
  }

  // chain describes the pinned chain of hash (the sale description's
  // draw.chain) for the page: its name, whether it is the test chain, and
  // when its round r is published (unix ms); null for a chain not pinned.
  function chain(hash) {
    const c = chains[chainOf(hash)];
    return c ? { name: c.name, test: c.dev, at: (r) => (round(r) ? timeOf(c, round(r)) : null) } : null;
  }
  // sameHead reports whether two tree heads, as .../draw/me serves them,
  // are the same signed head (Ed25519 signs deterministically: the same
  // head is the same signature), both absent counting as the same.
  const sameHead = (a, b) => sameFields(a, b, headKeys);

  // warm runs one real check of each signature scheme on pinned vectors
  // (quicknet's round 1000, RFC 8032's first Ed25519 test) and answers
  // whether both pass: noble builds its tables and the engine compiles its
  // code on the first pairing, which would otherwise land on the buyer's
  // check at the reveal. The page calls it while the buyer waits for the
  // beacon round, which takes 30 s or more.
  let warmed = null;
  function warm() {
    warmed = warmed || (async () => {
      const q = '52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971';
      const bls = await signs(chains[q], 1000, bytes('b44679b9a59af2ec876b1a6b1ad52ea9b1615fc3982b19576350f93447cb1125e342b73a8dd2bacbe47e4b6b63ed5e39', 48));
      let ed = false;
      try {
        ed = curves().ed25519.verify(
          bytes('e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b', 64),
          new Uint8Array(0), bytes('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 32), { zip215: false });
      } catch (e) {
        ed = false;
      }
      return bls && ed;
    })();
    return warmed;
  }

  return { supported, verify, published, log, chain, sameHead, warm };
})();
