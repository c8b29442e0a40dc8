// Package config reads keepalived's configuration language and resolves it
// into the typed model that directord runs.
//
// Reading happens in three stages, each a plain function of its input:
//
//  1. The reader turns files into logical lines of tokens. It handles
//     comments, quotes, trailing-backslash continuation, include (with globs,
//     relative to the including file, cycles refused), $NAME parameters,
//     @id / @^id conditional lines and ~SEQ expansion. Every token keeps the
//     file and line it came from.
//  2. The tree builder groups lines into keyword nodes with nested blocks,
//     whether "{" stands on the keyword's line or the next.
//  3. The decoder walks the tree against a table of keywords per block and
//     fills the model (Config), then Validate checks what only the whole
//     configuration can tell (duplicate VRIDs, unknown track_script, ...).
//
// Every problem is a Diagnostic with a file:line, the keyword and a severity.
// An unknown keyword or a bad block is reported once and skipped whole, so one
// fault never cascades into many messages. Keywords that keepalived knows but
// directord does not implement are reported as "not supported by directord";
// anything else unknown gets a did-you-mean suggestion.
//
// Load is the entry point:
//
//	cfg, diags := config.Load("/etc/keepalived/keepalived.conf", config.Options{})
//	if diags.HasErrors() { ... }
//
// Nothing in this package touches the network or the kernel; file access goes
// through the FileSystem interface so that tests and fuzzing run in memory.
package config
