package realcapture

import (
	"runtime/debug"

	"github.com/twmb/franz-go/pkg/kfake"
)

// NewKfake starts the kfake cluster every kfake capture runs against: three
// brokers on 127.0.0.1 at ports the kernel picks (ListenAddrs names them),
// cluster ID kidscope-real, the two seeded topics.
func NewKfake() (*kfake.Cluster, error) {
	return kfake.NewCluster(
		kfake.NumBrokers(3),
		kfake.ClusterID("kidscope-real"),
		kfake.SeedTopics(OrdersPartitions, TopicOrders),
		kfake.SeedTopics(PaymentsPartitions, TopicPayments),
		kfake.BrokerConfigs(map[string]string{
			// KIP-848 members heartbeat at the interval the broker
			// gives them; 500ms shows a few within a short run.
			"group.consumer.heartbeat.interval.ms": "500",
		}),
	)
}

// ModuleVersion is "PATH VERSION" for a module in this binary's build.
func ModuleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return path + " " + d.Version
			}
		}
	}
	return path + " (version unknown)"
}
