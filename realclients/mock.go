package main

// librdkafka's built-in mock cluster, from the static librdkafka that
// confluent-kafka-go bundles (linked through that package's cgo flags).
// The declarations are written here: the bundled rdkafka_mock.h does not
// declare the telemetry setters, which the static library exports.

/*
#include <stdint.h>
#include <stdlib.h>

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct rd_kafka_mock_cluster_s rd_kafka_mock_cluster_t;

rd_kafka_conf_t *rd_kafka_conf_new(void);
int rd_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *errstr, size_t errstr_size);
rd_kafka_t *rd_kafka_new(int type, rd_kafka_conf_t *conf, char *errstr, size_t errstr_size);
void rd_kafka_destroy(rd_kafka_t *rk);

rd_kafka_mock_cluster_t *rd_kafka_mock_cluster_new(rd_kafka_t *rk, int broker_cnt);
void rd_kafka_mock_cluster_destroy(rd_kafka_mock_cluster_t *mcluster);
const char *rd_kafka_mock_cluster_bootstraps(const rd_kafka_mock_cluster_t *mcluster);
int rd_kafka_mock_topic_create(rd_kafka_mock_cluster_t *mcluster, const char *topic, int partition_cnt, int replication_factor);
void rd_kafka_mock_group_initial_rebalance_delay_ms(rd_kafka_mock_cluster_t *mcluster, int32_t delay_ms);
void rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(rd_kafka_mock_cluster_t *mcluster, int group_consumer_heartbeat_interval_ms);

// Exported by the static library, not declared in the bundled header.
int rd_kafka_mock_telemetry_set_requested_metrics(rd_kafka_mock_cluster_t *mcluster, char **metrics, size_t metrics_cnt);
int rd_kafka_mock_telemetry_set_push_interval(rd_kafka_mock_cluster_t *mcluster, int64_t push_interval_ms);
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	// The static librdkafka and its link flags.
	_ "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// rdKafkaProducer is RD_KAFKA_PRODUCER.
const rdKafkaProducer = 0

// mockCluster is a running librdkafka mock cluster. Its brokers listen on
// 127.0.0.1 at ports the kernel picks.
type mockCluster struct {
	rk *C.rd_kafka_t
	mc *C.rd_kafka_mock_cluster_t
}

// newMockCluster starts a mock cluster of n brokers on a librdkafka handle
// of its own that connects nowhere (no bootstrap.servers).
func newMockCluster(n int) (*mockCluster, error) {
	var errstr [512]C.char
	conf := C.rd_kafka_conf_new()
	for k, v := range map[string]string{"client.id": "kidscope-mock-host", "log_level": "3"} {
		ck, cv := C.CString(k), C.CString(v)
		rc := C.rd_kafka_conf_set(conf, ck, cv, &errstr[0], C.size_t(len(errstr)))
		C.free(unsafe.Pointer(ck))
		C.free(unsafe.Pointer(cv))
		if rc != 0 {
			return nil, fmt.Errorf("mock host config %s: %s", k, C.GoString(&errstr[0]))
		}
	}
	rk := C.rd_kafka_new(rdKafkaProducer, conf, &errstr[0], C.size_t(len(errstr)))
	if rk == nil {
		return nil, fmt.Errorf("mock host handle: %s", C.GoString(&errstr[0]))
	}
	mc := C.rd_kafka_mock_cluster_new(rk, C.int(n))
	if mc == nil {
		C.rd_kafka_destroy(rk)
		return nil, errors.New("rd_kafka_mock_cluster_new failed")
	}
	return &mockCluster{rk: rk, mc: mc}, nil
}

// bootstraps returns the brokers' addresses.
func (m *mockCluster) bootstraps() []string {
	return strings.Split(C.GoString(C.rd_kafka_mock_cluster_bootstraps(m.mc)), ",")
}

func (m *mockCluster) createTopic(name string, partitions, replicas int) error {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	if rc := C.rd_kafka_mock_topic_create(m.mc, cn, C.int(partitions), C.int(replicas)); rc != 0 {
		return fmt.Errorf("creating mock topic %s: error %d", name, int(rc))
	}
	return nil
}

// setTelemetry sets the subscription the mock hands out in
// GetTelemetrySubscriptions: the push interval and the metric name
// prefixes it asks for ("" = all).
func (m *mockCluster) setTelemetry(pushIntervalMs int64, metrics []string) error {
	if rc := C.rd_kafka_mock_telemetry_set_push_interval(m.mc, C.int64_t(pushIntervalMs)); rc != 0 {
		return fmt.Errorf("setting the mock's telemetry push interval: error %d", int(rc))
	}
	cs := make([]*C.char, len(metrics))
	for i, s := range metrics {
		cs[i] = C.CString(s)
		defer C.free(unsafe.Pointer(cs[i]))
	}
	arr := (**C.char)(C.malloc(C.size_t(len(cs)+1) * C.size_t(unsafe.Sizeof(cs[0]))))
	defer C.free(unsafe.Pointer(arr))
	sl := unsafe.Slice(arr, len(cs)+1)
	copy(sl, cs)
	sl[len(cs)] = nil
	if rc := C.rd_kafka_mock_telemetry_set_requested_metrics(m.mc, arr, C.size_t(len(cs))); rc != 0 {
		return fmt.Errorf("setting the mock's requested metrics: error %d", int(rc))
	}
	return nil
}

// setGroupTimings makes groups form at once and KIP-848 members heartbeat
// often, so a short run shows a few heartbeats.
func (m *mockCluster) setGroupTimings(heartbeatMs int) {
	C.rd_kafka_mock_group_initial_rebalance_delay_ms(m.mc, 0)
	C.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(m.mc, C.int(heartbeatMs))
}

// close destroys the cluster (closing its listeners and every connection)
// and its host handle.
func (m *mockCluster) close() {
	if m.mc != nil {
		C.rd_kafka_mock_cluster_destroy(m.mc)
		m.mc = nil
	}
	if m.rk != nil {
		C.rd_kafka_destroy(m.rk)
		m.rk = nil
	}
}
