// Package console tests the admin console (shared/console) in a real
// browser: headless Chromium driven through the DevTools protocol
// (github.com/chromedp/chromedp) against a local-mode gateway with the
// memory store and, when DYNAMODB_ENDPOINT is set, the DynamoDB store.
//
// The browser is SLUICE_CHROMIUM, else chromium (or google-chrome) on the
// PATH; without one the tests skip, unless CI is set (then they fail).
// SLUICE_SCREENSHOTS=1 writes the screenshots docs/console.md shows to
// docs/img/console-*.png.
package console
