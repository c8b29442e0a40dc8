// Package logkeys holds the test that keeps directord's log attributes to
// one set of keys: every key a log call of the repository's code names is
// one of the table of docs/operations.md ("Log attributes"), which people
// who parse the logs read. It has no code of its own.
package logkeys
