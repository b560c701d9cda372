// Package textdoc lays out report documents as text: a list of blocks
// (headings, paragraphs, key/value lists, tables) of styled spans, written
// for an 80-column terminal (wrapped, tables drawn with box characters,
// styled spans coloured) or as GitHub-flavoured Markdown, and the escaping
// every string from a capture goes through before it reaches either.
//
// It knows nothing of Kafka or of kidscope's analysis: package report
// builds the blocks and says what a style looks like.
package textdoc
