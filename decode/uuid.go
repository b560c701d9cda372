package decode

import "github.com/kidscope/kidscope/kafka"

// UUID is kafka.UUID. Deprecated: an alias kept while packages move to it.
type UUID = kafka.UUID
