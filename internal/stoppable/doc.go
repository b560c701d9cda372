// Package stoppable owns a TCP listener that tests can stop and start
// again on the same address, as a broker process that dies and comes back:
// kfake takes it through kfake.ListenFn, so that the tests of live
// --publish and of the fleet's publisher see a Kafka broker go away (dials
// refused, connections cut) and return, with the cluster's data kept.
package stoppable
