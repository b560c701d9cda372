// Package hostile writes the crafted captures of kidscope's hostile-input
// tests: absurd lengths in capture files, floods of pcapng blocks, bodies
// declared large and never finished, out-of-order floods, violation
// floods, connection and instance floods, 4-tuple reuse. Each is written
// straight to a file, packet by packet, so that inputs of millions of
// packets or gigabytes (mostly gzip'd zeros) cost the test little memory.
// It is test support: no command imports it.
package hostile
