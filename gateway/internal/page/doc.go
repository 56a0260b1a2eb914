// Package page is the sale page (SPEC, "The front door"): plain HTML, CSS,
// a few small scripts and one message file per language, embedded in the
// binary and served by package httpapi at GET /sale/{saleId}.
//
// # The same bytes for everyone
//
// The same HTML goes to every buyer, in every language and for every sale,
// so a CDN can cache it: the scripts read the sale id from the URL and
// everything else from the public API. The HTML names its assets by
// content hash (/sale/assets/sale.<hash>.js, i18n-ja.<hash>.json), so they
// are served with "immutable" and a year's max-age, while the HTML itself
// gets a short public max-age (-page-max-age, default 60 s) and an ETag.
// Its only inputs are gateway flags: where the shop keeps the buyer's
// bearer token (-page-token) and whether the development sign-in is offered
// (-dev), written as data attributes of the <html> element; two gateways
// with the same flags serve identical bytes. Everything is computed once in
// New; serving a page or an asset is a map read and allocates nothing.
//
// # Languages
//
// assets/i18n holds one file per language (en.json, ja.json): a flat
// object of message key to {placeholder} template, plus "language.name",
// the language's name in itself. New renders the language switch from
// them (one button per file, naming the file's hashed path), so a third
// language is one more file and nothing else. i18n.js picks the language
// in the browser: the buyer's choice on the switch (kept in localStorage),
// else the first of navigator.languages the page has, else English, the
// language of the HTML's own text; it loads that file and formats dates,
// times, prices (with the item's currency) and counts with Intl in the
// buyer's locale. Every text the page shows is a message: a test fails
// when a file lacks a key another has, when a placeholder differs between
// them, or when the scripts or the HTML name a key no file has.
//
// # Branding
//
// A shop's name, logo, accent colour and banner, and each item's image and
// description, come from the sale file (sale.Brand, validated at
// creation: image URLs https or paths on this site, the accent a hex colour
// with 4.5:1 contrast on the page's light backgrounds, lengths bounded)
// and reach the page with the public sale description; brand.js draws
// them. Images are decorative, sized before they load and never waited
// for, so they never hold up the buy button; a broken one is hidden. The
// accent is moved toward white or black until it reads on the backgrounds
// of the colour scheme in use, and the buy button's text is white or
// black, whichever reads better on it.
//
// The page's Content-Security-Policy is per sale (Policy): images from the
// page's own site and from the https origins the sale's branding names,
// nothing else; httpapi sends the policy of the sale the URL names, and the
// default one for a sale it does not know. A change of branding (flashctl
// sale brand) reaches buyers with the description, within its one-second
// max-age of the gateways' refresh; a change of image origins reaches the
// page's policy within the page's max-age, since the ETag names the policy.
//
// Images a sale names as /sale/media/<name> are served by the gateway from
// the directory of -page-media (read once at start; see loadMedia):
// deploy/brand holds samples for the demo.
package page
