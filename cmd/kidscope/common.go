package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/report"
)

// inputFlags are the flags every command that reads traffic shares.
type inputFlags struct {
	ports          []string
	headerV3       []string
	uuid           string
	output         string
	maxConnections int
	maxBufferPages int
}

func (f *inputFlags) register(cmd *cobra.Command, outputs string) {
	fl := cmd.Flags()
	fl.StringSliceVarP(&f.ports, "port", "p", []string{"9092"}, "broker ports: numbers, ranges (9092-9094), repeatable; auto detects Kafka on any port")
	fl.StringArrayVar(&f.headerV3, "header-v3", nil, "KEY:MINVERSION: more API versions that use request header v3 (adds to the built-in list)")
	fl.StringVar(&f.uuid, "uuid", "kafka", "UUID text form: kafka (base64url) or rfc4122")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: "+outputs)
	fl.IntVar(&f.maxConnections, "max-connections", 100000, "most connections tracked at once; more are ignored and counted")
	fl.IntVar(&f.maxBufferPages, "max-buffer", 65536, "most 1900-byte pages of out-of-order data held in total; over it, waiting data is given up as a gap")
}

// options turns the flags into pipeline options.
func (f *inputFlags) options(files []string) (pipeline.Options, report.UUIDForm, error) {
	var opt pipeline.Options
	form, err := report.ParseUUIDForm(f.uuid)
	if err != nil {
		return opt, form, err
	}
	ports, err := reassembly.ParsePorts(f.ports)
	if err != nil {
		return opt, form, fmt.Errorf("--port: %w", err)
	}
	table := decode.DefaultAPITable()
	for _, s := range f.headerV3 {
		key, ver, err := decode.ParseHeaderV3(s)
		if err != nil {
			return opt, form, fmt.Errorf("--header-v3 %q: %w", s, err)
		}
		table = table.WithHeaderV3(key, ver)
	}
	opt = pipeline.Options{
		Files: files,
		Reassembly: reassembly.Options{Ports: ports, MaxConnections: f.maxConnections,
			MaxPagesTotal: f.maxBufferPages},
		Decode: decode.Options{Table: table},
	}
	return opt, form, nil
}

func usageError(err error) error { return &exitError{code: exitBadInput, err: err} }
