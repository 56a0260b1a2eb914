// pow-worker.js: the sale page's proof of work, run in a Web Worker.
//
// Message in: {challenge: "<c>", difficulty: D}. It finds the smallest
// decimal nonce n >= 0 such that SHA-256 of the ASCII bytes "<c>:<n>" starts
// with at least D zero bits, and answers {nonce: "<n>", hashes, ms}; every
// 65,536 hashes it reports {progress: hashes}. A bad message answers {error}.
//
// SHA-256 is computed here in plain JavaScript, synchronously: per hash this
// is many times faster than crypto.subtle.digest, whose every call is a
// promise round trip.
'use strict';

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const W = new Uint32Array(64);
const H = new Uint32Array(8);

// sha256 hashes the first len bytes of buf (which has room for the padding)
// into H.
function sha256(buf, len) {
  const blocks = (len + 9 + 63) >>> 6;
  buf.fill(0, len, blocks * 64);
  buf[len] = 0x80;
  const bits = len * 8;
  const end = blocks * 64;
  buf[end - 4] = bits >>> 24; buf[end - 3] = bits >>> 16; buf[end - 2] = bits >>> 8; buf[end - 1] = bits;
  H[0] = 0x6a09e667; H[1] = 0xbb67ae85; H[2] = 0x3c6ef372; H[3] = 0xa54ff53a;
  H[4] = 0x510e527f; H[5] = 0x9b05688c; H[6] = 0x1f83d9ab; H[7] = 0x5be0cd19;
  for (let b = 0; b < end; b += 64) {
    for (let i = 0; i < 16; i++) {
      const j = b + i * 4;
      W[i] = (buf[j] << 24) | (buf[j + 1] << 16) | (buf[j + 2] << 8) | buf[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const x = W[i - 15], y = W[i - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
    }
    let a = H[0], bb = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & bb) ^ (a & c) ^ (bb & c))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = bb; bb = a; a = (t1 + t2) | 0;
    }
    H[0] += a; H[1] += bb; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
  }
}

// zeroBits reports whether H starts with at least d zero bits.
function zeroBits(d) {
  let i = 0;
  for (; d >= 32; d -= 32, i++) {
    if (H[i] !== 0) return false;
  }
  return d === 0 || (H[i] >>> (32 - d)) === 0;
}

// solve returns the smallest nonce for challenge at difficulty d.
function solve(challenge, d) {
  const prefix = challenge + ':';
  const buf = new Uint8Array(prefix.length + 24 + 72);
  for (let i = 0; i < prefix.length; i++) buf[i] = prefix.charCodeAt(i);
  const digits = new Uint8Array(24);
  for (let n = 0; ; n++) {
    // Write n's decimal digits after the prefix.
    let k = 0, m = n;
    do { digits[k++] = 48 + (m % 10); m = Math.floor(m / 10); } while (m > 0);
    let len = prefix.length;
    while (k > 0) buf[len++] = digits[--k];
    sha256(buf, len);
    if (zeroBits(d)) return n;
    if ((n & 0xffff) === 0xffff) postMessage({ progress: n + 1 });
  }
}

onmessage = (ev) => {
  const { challenge, difficulty } = ev.data || {};
  if (typeof challenge !== 'string' || challenge.length === 0 || challenge.length > 512 ||
      !/^[\x21-\x7e]+$/.test(challenge) || !Number.isInteger(difficulty) || difficulty < 0 || difficulty > 64) {
    postMessage({ error: 'bad challenge' });
    return;
  }
  const t0 = performance.now();
  const n = solve(challenge, difficulty);
  postMessage({ nonce: String(n), hashes: n + 1, ms: performance.now() - t0 });
};
