package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/wsplugin"
)

func newWiresharkPluginCmd() *cobra.Command {
	var install bool
	var headerV3 []string
	cmd := &cobra.Command{
		Use:   "wireshark-plugin [FILE]",
		Short: "Write kidscope's Lua plugin for Wireshark and tshark (4.0 and newer)",
		Long: `wireshark-plugin writes a Lua plugin that adds a kidscope tree to every Kafka message
Wireshark's Kafka dissector shows: the request header's client instance ID (tag 0 of
header v2 and v3) in Kafka's form (kidscope.instance_id) and RFC 4122's
(kidscope.instance_uuid), the GetTelemetrySubscriptions and PushTelemetry bodies
(kidscope.telemetry.*: client instance ID, subscription ID, terminating, compression,
the metrics' length but never the metrics), and the member IDs of JoinGroup and
ConsumerGroupHeartbeat (kidscope.group.*). On a pcapng that analyze --annotate wrote,
each kidscope comment becomes expert information of its severity (Analyze → Expert
Information; filter kidscope.finding.rule). The plugin is generated from this
kidscope's API table and rules, and shows what kidscope frames -e shows.

With FILE it is written there ("-" or none: standard output); load it with
tshark -X lua_script:FILE. With --install it is written into Wireshark's personal
Lua plugins folder, which Wireshark and tshark load at start.`,
		Example: `  kidscope wireshark-plugin kidscope.lua
  tshark -X lua_script:kidscope.lua -r capture.pcap -Y kidscope.instance_id
  kidscope wireshark-plugin --install`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			table := decode.DefaultAPITable()
			for _, s := range headerV3 {
				key, ver, err := decode.ParseHeaderV3(s)
				if err != nil {
					return usageError(fmt.Errorf("--header-v3 %q: %w", s, err))
				}
				table = table.WithHeaderV3(key, ver)
			}
			var lua bytes.Buffer
			if err := wsplugin.Generate(&lua, wsplugin.Options{Table: table, Version: kidscopeVersion()}); err != nil {
				return err
			}
			path := ""
			switch {
			case install && len(args) == 1:
				return usageError(fmt.Errorf("--install writes into Wireshark's plugins folder: give no FILE (%s)", args[0]))
			case install:
				dir, err := wsplugin.PersonalDir(runtime.GOOS, os.Getenv)
				if err != nil {
					return inputError(fmt.Errorf("--install: %w", err))
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return inputError(fmt.Errorf("--install: %w", err))
				}
				path = filepath.Join(dir, wsplugin.FileName)
			case len(args) == 1 && args[0] != "-":
				path = args[0]
			default:
				_, err := cmd.OutOrStdout().Write(lua.Bytes())
				return err
			}
			if err := os.WriteFile(path, lua.Bytes(), 0o644); err != nil {
				return inputError(fmt.Errorf("wireshark-plugin: %w", err))
			}
			if install {
				fmt.Fprintf(cmd.ErrOrStderr(), "kidscope: wrote %s; Wireshark and tshark load it when they start (Help → About Wireshark → Plugins lists it)\n", path)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "kidscope: wrote %s; load it with tshark -X lua_script:%s, or install it with kidscope wireshark-plugin --install\n", path, path)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&install, "install", false, "write the plugin into Wireshark's personal Lua plugins folder (~/.local/lib/wireshark/plugins; %APPDATA%\\Wireshark\\plugins on Windows)")
	fl.StringArrayVar(&headerV3, "header-v3", nil, "KEY:MINVERSION: more API versions that use request header v3 (adds to the built-in list), as analyze takes it")
	return cmd
}
