// Package wsplugin writes kidscope's Wireshark plugin: a Lua
// postdissector for Wireshark and tshark 4.0 and newer that adds a
// kidscope tree to every Kafka message Wireshark's own Kafka dissector
// finds, and turns the packet comments analyze --annotate writes into
// expert information.
//
// The plugin is generated, never written by hand, so that it reads the
// wire as the decoder does: the request and response header version of
// every API version comes from decode's API table (with any --header-v3
// additions), the fields it shows are this package's Fields table, each
// tied to the frames field (report.FrameFieldNames) it must equal, the
// body layouts it reads are this package's Bodies table, checked against
// franz-go's kmsg encoders in the tests, and the rules and severities it
// knows come from the rules catalogue. Only the interpreter of those
// tables is fixed Lua text (plugin.lua).
//
// The Lua reads each Kafka PDU from the range of Wireshark's own "kafka"
// protocol item, so a message that spans TCP segments is read from
// Wireshark's reassembled buffer, whatever port it was decoded on. It
// never shows record bytes, SASL bytes or telemetry metric payloads:
// PushTelemetry's metrics appear as their length, pointing at the length
// prefix only.
//
// The package is pure: tables in, Lua text out. Where the plugin goes on
// disk is the command's business (PersonalDir only names the folder).
package wsplugin
