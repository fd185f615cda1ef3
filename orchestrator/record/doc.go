// Package record writes recordings of nodes and reads them back as traces
// (CONTRACT §13).
//
// # Writing
//
// The engine starts a Recorder with Start(dir, Meta) where dir is
// <state>/traces/DirName(node, start) and calls, from its pump, Output
// with the decoded pane bytes (every byte, also during a burst when the
// mirror is reseeded instead of emulated), and Input, Resize, Mark, Exit,
// Reseed and Close as things happen. Output only copies the bytes into a
// queue (≈0.3 ns/byte on the caller): the Recorder's writer goroutine
// encodes the cast and writes both files, syncing once, at Close. A write
// error (a full disk) or a writer that falls 64 MiB behind stops the
// recording: Err reports why, Failed is closed, meta.json says so, and
// every later call is a no-op; the node is not affected and the Recorder
// logs nothing. After an orchestrator restart, Resume reopens the
// directory, repairs a line cut short, writes a gap event and paints the
// adopted screen as a reseeded frame; times stay measured from
// Meta.Start, so they never go back.
//
// A directory holds, all mode 0600 in a 0700 directory:
//
//	meta.json     Meta (rewritten atomically on Exit, Resume and Close)
//	session.cast  asciicast v2: a header line, then [seconds, "o", data]
//	              output, [seconds, "r", "WxH"] resizes and
//	              [seconds, "m", label] markers; data is always valid UTF-8
//	              (bytes that are not become U+FFFD; a sequence split
//	              across outputs is joined, and a last printable character
//	              is held until the next output, at most 50-150 ms, so a
//	              grapheme cluster split by tmux lands in one event)
//	events.jsonl  one Event per line: start, input (kind and size; key
//	              names for press and mouse), resize, marker, exit, crash,
//	              gap (from_ms, to_ms), reseed (reason), semantic, and
//	              keyframe (cast_events, screen, mouse_sgr: the live
//	              mirror's screen after that many cast events, every
//	              128 KiB of output; keyframe.go)
//
// Typed, pasted, submitted or raw input text is never written anywhere:
// Input takes a size, and the key names it keeps are tmux key names
// (a character becomes "char", other text "text").
//
// # Reading
//
// Open reads a recording directory, a .zip of one (entries checked: no
// "..", no absolute names, only the three files, at the top or in one
// directory; 128 MB at most; nothing is extracted) or a bare .cast. A
// Trace answers Meta, Overview, FrameAt and Diff; a Registry keeps at most
// eight open and closes the least recently used.
//
// FrameAt rebuilds the screen by replaying the cast's output events, one
// Write per event as recorded, through orchestrator/screen, the mirror
// live nodes use. Two shortcuts make that fast, and the tests hold both to
// "the same screen as a plain replay" (TestReplayMatchesPlainReplay,
// FuzzReplayShortcuts):
//
//   - Recorded keyframes (keyframe.go): the engine hands the Recorder
//     its live mirror's screen every 128 KiB of output it emulated (not
//     during a burst, not on the alternate screen, not inside an escape
//     sequence or with a character held back), and FrameAt starts the
//     replay at the nearest one before the moment asked: the first
//     frame near the end of a long recording replays at most 128 KiB.
//     They hold the screen's rows, cursor, modes and title; the state a
//     screen does not show starts as a fresh terminal's.
//   - Keyframes, built lazily in memory the first time a trace is replayed
//     (or by Warm): every 512 KiB of cast the builder keeps the screen
//     and the terminal state a snapshot does not show (scroll regions,
//     saved cursors, the primary screen behind the alternate one,
//     character sets, origin/autowrap/newline modes), when that state can
//     be restored exactly, and checks the restore right away. A later
//     FrameAt restores the nearest keyframe and replays at most 512 KiB.
//     The recorder itself runs no emulator: that would double the
//     engine's per-byte cost during a flood, the very case the pump
//     avoids emulating.
//   - Squeezing: scrolling output on the bottom row leaves nothing of a
//     line once a screenful of lines followed it, so a long run of such
//     output is fed as the net effect of its flag-like sequences plus its
//     last screenful of lines: of a 50 MB log the emulator sees a few
//     hundred KB. Full-screen redraws cannot be squeezed and replay at the
//     emulator's speed (a few MB/s), once.
//
// The tracker that makes both safe (track.go) steps x/vt v0.1.0's own
// parser, x/ansi's (vtparse.go), and models its handlers byte for byte;
// where it cannot tell, it takes no keyframe and does not squeeze.
package record
