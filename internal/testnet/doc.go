// Package testnet holds the test helpers that package hymntest and the
// root package's own tests share: the root package's tests are inside
// package hymn, so they cannot import hymntest (which imports hymn), and
// before this package they kept a copy of its helpers. One leak check,
// one topology helper and one start-with-teardown live here; hymntest
// offers them to users with hymn's types.
package testnet
