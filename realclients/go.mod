module github.com/kidscope/kidscope/realclients

go 1.26.8

require (
	github.com/confluentinc/confluent-kafka-go/v2 v2.11.1
	github.com/kidscope/kidscope v0.0.0
)

require (
	github.com/gopacket/gopacket v1.7.7 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go v1.22.3 // indirect
	github.com/twmb/franz-go/pkg/kadm v1.20.0 // indirect
	github.com/twmb/franz-go/pkg/kfake v0.0.0-20260918054303-01f206a7e32c // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.1 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/kidscope/kidscope => ../
