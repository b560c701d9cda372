package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// newRoot returns the command tree, and what to call once it has run (it
// writes the --debug profiles).
func newRoot() (*cobra.Command, func()) {
	root := &cobra.Command{
		Use:   "kidscope",
		Short: "Check Kafka client-instance-ID, telemetry and member-ID rules in packet captures",
		Long: `kidscope reads packet captures (pcap, pcapng, gzip) or live interfaces, reassembles TCP,
decodes the Kafka protocol and reports, per connection, violations of the client
instance ID rules (KIP-1313), telemetry ID mismatches (KIP-714) and group
member-ID mistakes (KIP-394, KIP-1082).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       kidscopeVersion(),
	}
	root.SetVersionTemplate("kidscope {{.Version}}\n")
	// A CPU profile of the whole command, for speed work (hidden).
	var cpuProfile string
	var stopProfile func()
	root.PersistentFlags().StringVar(&cpuProfile, "debug-cpuprofile", "", "write a CPU profile of the run to this file")
	_ = root.PersistentFlags().MarkHidden("debug-cpuprofile")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if cpuProfile == "" {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return inputError(fmt.Errorf("--debug-cpuprofile: %w", err))
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return inputError(fmt.Errorf("--debug-cpuprofile: %w", err))
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
		return nil
	}
	var memProfile string
	root.PersistentFlags().StringVar(&memProfile, "debug-memprofile", "", "write a profile of the run's allocations to this file")
	_ = root.PersistentFlags().MarkHidden("debug-memprofile")
	// The profiles are written whatever the command returns: cobra skips
	// PersistentPostRun when RunE fails, and exit codes 1 and 2 come back
	// as errors.
	writeProfiles := func() {
		if stopProfile != nil {
			stopProfile()
		}
		if memProfile != "" {
			if f, err := os.Create(memProfile); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}
	}
	registerColor(root)
	root.SetFlagErrorFunc(flagError)
	root.SetUsageFunc(writeUsage)
	root.AddCommand(readsFiles(newAnalyzeCmd()), newLiveCmd(), newFleetCmd(), readsFiles(newFramesCmd()), newRulesCmd(),
		newSamplesCmd(), newWiresharkPluginCmd(), newMetricsRulesCmd(), newVersionCmd(), newManCmd(), newTryKafkaCmd())
	completeFlags(root)
	return root, writeProfiles
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "kidscope", kidscopeVersion())
			return nil
		},
	}
}
