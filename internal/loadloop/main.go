// Command loadloop sends Kafka traffic over loopback at a steady packet
// rate, for measuring live capture: a fake broker answers each request, and
// clients send Metadata and Produce requests with a header instance ID,
// each request and response one TCP segment (TCP_NODELAY, small frames).
//
//	go run ./internal/loadloop -port 29092 -rate 50000 -duration 30s -conns 50
//
// It prints how many requests and responses it exchanged. Connections are
// replaced now and then (-churn), so state that should expire does. With
// -violate every request breaks a rule, for measuring what live keeps; with
// -telemetry every request is a KIP-714 PushTelemetry (after one
// GetTelemetrySubscriptions per connection) that breaks none, yet is, with
// its answer, what live --publish publishes: two observations an exchange.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

func main() {
	port := flag.Int("port", 29092, "loopback port of the fake broker")
	rate := flag.Int("rate", 20000, "packets per second to aim for (a request and its response are two; ACKs ride on them)")
	duration := flag.Duration("duration", 30*time.Second, "how long to send")
	conns := flag.Int("conns", 20, "client connections at a time")
	churn := flag.Duration("churn", 5*time.Second, "replace each connection after this long (0: never)")
	violate := flag.Bool("violate", false, "every request carries a new header instance ID (each one after a connection's first breaks header-id-changed)")
	telemetry := flag.Bool("telemetry", false, "every request is a PushTelemetry v0 for the connection's header instance ID (breaks no rule; two observations for live --publish)")
	flag.Parse()
	if *violate && *telemetry {
		fmt.Fprintln(os.Stderr, "loadloop: -violate or -telemetry, not both")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadloop:", err)
		os.Exit(2)
	}
	go serve(ln)
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var exchanges atomic.Int64
	// Each exchange is about two packets (request, response; delayed ACKs
	// ride on the next segment): pace every connection to its share.
	perConn := float64(*rate) / 2 / float64(*conns)
	var wg sync.WaitGroup
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for gen := 0; ctx.Err() == nil; gen++ {
				client(ctx, *port, i, gen, perConn, *churn, *violate, *telemetry, &exchanges)
			}
		}(i)
	}
	wg.Wait()
	fmt.Printf("exchanges=%d rate=%.0f/s\n", exchanges.Load(), float64(exchanges.Load())/duration.Seconds())
}

// serve answers every request with an empty response of its API.
func serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			c.(*net.TCPConn).SetNoDelay(true)
			r := bufio.NewReaderSize(c, 64<<10)
			var buf []byte
			for {
				var hdr [4]byte
				if _, err := io.ReadFull(r, hdr[:]); err != nil {
					return
				}
				size := int(binary.BigEndian.Uint32(hdr[:]))
				if cap(buf) < size {
					buf = make([]byte, size)
				}
				frame := buf[:size]
				if _, err := io.ReadFull(r, frame); err != nil {
					return
				}
				key := int16(binary.BigEndian.Uint16(frame))
				ver := int16(binary.BigEndian.Uint16(frame[2:]))
				corr := int32(binary.BigEndian.Uint32(frame[4:]))
				api, _ := decode.LookupAPI(key)
				resp := kmsg.ResponseForKey(key)
				resp.SetVersion(ver)
				if _, err := c.Write(decode.AppendResponse(nil, corr, api.ResponseHeaderVersion(ver), resp.AppendTo(nil))); err != nil {
					return
				}
			}
		}()
	}
}

// client sends paced requests on one connection until churn or ctx ends.
func client(ctx context.Context, port, i, gen int, perSec float64, churn time.Duration, violate, telemetry bool, n *atomic.Int64) {
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		time.Sleep(100 * time.Millisecond)
		return
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	id := kafka.UUID{byte(i), byte(i >> 8), byte(gen), 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	meta := (&kmsg.MetadataRequest{Version: 12}).AppendTo(nil)
	produce := (&kmsg.ProduceRequest{Version: 9, Acks: -1, TimeoutMillis: 1000, Topics: []kmsg.ProduceRequestTopic{{Topic: "t",
		Partitions: []kmsg.ProduceRequestTopicPartition{{Records: make([]byte, 200)}}}}}).AppendTo(nil)
	// Telemetry: the header ID is the telemetry ID too (R = H, answered
	// NONE), and the pushes carry no metrics.
	subscribe := (&kmsg.GetTelemetrySubscriptionsRequest{ClientInstanceID: id}).AppendTo(nil)
	push := (&kmsg.PushTelemetryRequest{ClientInstanceID: id, SubscriptionID: 1}).AppendTo(nil)
	r := bufio.NewReader(c)
	interval := time.Duration(float64(time.Second) / perSec)
	next := time.Now()
	end := time.Now().Add(churn)
	for corr := int32(0); ctx.Err() == nil && (churn == 0 || time.Now().Before(end)); corr++ {
		key, ver, body := int16(3), int16(12), meta
		switch {
		case telemetry && corr == 0:
			key, ver, body = 71, 0, subscribe
		case telemetry:
			key, ver, body = 72, 0, push
		case corr%4 != 0:
			key, ver, body = 0, 9, produce
		}
		if violate {
			binary.BigEndian.PutUint32(id[12:], uint32(corr))
		}
		h := decode.RequestHeader{APIKey: key, APIVersion: ver, CorrelationID: corr, HeaderVersion: 2,
			ClientID: fmt.Sprintf("loadloop-%d", i), InstanceID: id, HasInstanceID: true}
		if _, err := c.Write(decode.AppendRequest(nil, h, body)); err != nil {
			return
		}
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		if _, err := r.Discard(int(binary.BigEndian.Uint32(hdr[:]))); err != nil {
			return
		}
		n.Add(1)
		next = next.Add(interval)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		} else if d < -time.Second {
			next = time.Now() // fell behind: do not burst to catch up
		}
	}
}
