package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerOptions configure Consume.
type ConsumerOptions struct {
	Brokers []string
	Topic   string
	// Group is the consumer group a member joins (Kafka spreads the
	// topic's partitions among the members); not used with UntilEnd.
	Group string
	// FromBeginning reads from the oldest record a partition holds when
	// the group has no committed offset for it (else the newest).
	FromBeginning bool
	// UntilEnd reads every partition from its oldest record to the last
	// one it held when Consume started, then returns: a one-shot report,
	// without a group.
	UntilEnd bool
	Client   []kgo.Opt
}

// Batch is what one poll returned: the records' values, and a function
// that commits every record read so far once what they caused was written
// (nil with UntilEnd).
// Replayed[i] says that record i was committed before, by this member or
// one that had its partition: it is read again, from the partition's
// start, to rebuild the state the rules across connections need, and what
// it causes was written then.
type Batch struct {
	Values   [][]byte
	Replayed []bool
	Commit   func(ctx context.Context) error
}

// Consume reads the topic and hands each batch of records to handle, in
// each partition's order, until ctx ends or (UntilEnd) the end is reached.
// A poll that waits a second without records hands an empty batch, so
// that the caller can release what it holds by the clock.
func Consume(ctx context.Context, opt ConsumerOptions, handle func(Batch) error) error {
	kopts := append([]kgo.Opt{kgo.SeedBrokers(opt.Brokers...), kgo.ClientID("kidscope-fleet")}, opt.Client...)
	var ends map[int32]int64
	markOf := func(int32) int64 { return 0 }
	if opt.UntilEnd {
		admin, err := kgo.NewClient(kopts...)
		if err != nil {
			return err
		}
		listed, err := kadm.NewClient(admin).ListEndOffsets(ctx, opt.Topic)
		admin.Close()
		if err != nil {
			return fmt.Errorf("list the end offsets of %s: %w", opt.Topic, err)
		}
		if err := listed.Error(); err != nil {
			return fmt.Errorf("list the end offsets of %s: %w", opt.Topic, err)
		}
		ends = map[int32]int64{}
		parts := map[int32]kgo.Offset{}
		listed.Each(func(o kadm.ListedOffset) {
			if o.Topic == opt.Topic && o.Offset > 0 {
				ends[o.Partition] = o.Offset
				parts[o.Partition] = kgo.NewOffset().AtStart()
			}
		})
		if len(ends) == 0 {
			return nil // an empty topic
		}
		kopts = append(kopts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{opt.Topic: parts}))
	} else {
		reset := kgo.NewOffset().AtEnd()
		if opt.FromBeginning {
			reset = kgo.NewOffset().AtStart()
		}
		// A partition that comes with committed offsets is read from its
		// start: the records before the commit rebuild the engine's state
		// across connections (a member that takes over from one that
		// stopped knows what it knew), and are not reported again.
		var mu sync.Mutex
		marks := map[int32]int64{}
		kopts = append(kopts, kgo.ConsumeTopics(opt.Topic), kgo.ConsumerGroup(opt.Group), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(reset),
			kgo.AdjustFetchOffsetsFn(func(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
				mu.Lock()
				defer mu.Unlock()
				for p, o := range offsets[opt.Topic] {
					if at := o.EpochOffset().Offset; at > 0 {
						marks[p] = at
						offsets[opt.Topic][p] = kgo.NewOffset().AtStart().WithEpoch(-1)
					}
				}
				return offsets, nil
			}))
		markOf = func(p int32) int64 {
			mu.Lock()
			defer mu.Unlock()
			return marks[p]
		}
	}
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	toCommit := map[int32]kgo.EpochOffset{}
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
				ferr = fmt.Errorf("read %s partition %d: %w", t, p, err)
			}
		})
		if ferr != nil && !kgo.IsRetryableBrokerErr(ferr) {
			return ferr
		}
		var b Batch
		fetches.EachRecord(func(r *kgo.Record) {
			if ends != nil && r.Offset >= ends[r.Partition] {
				return
			}
			b.Values = append(b.Values, r.Value)
			b.Replayed = append(b.Replayed, r.Offset < markOf(r.Partition))
			if ends != nil && r.Offset == ends[r.Partition]-1 {
				delete(ends, r.Partition)
			}
		})
		if !opt.UntilEnd {
			// What was read since the last commit, past what an earlier
			// member committed (committing that again would move it back).
			fetches.EachRecord(func(r *kgo.Record) {
				if r.Offset >= markOf(r.Partition) {
					toCommit[r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
				}
			})
			b.Commit = func(ctx context.Context) error {
				if len(toCommit) == 0 {
					return nil
				}
				var cerr error
				cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{opt.Topic: toCommit},
					func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) { cerr = err })
				if cerr == nil {
					toCommit = map[int32]kgo.EpochOffset{}
				}
				return cerr
			}
		}
		if err := handle(b); err != nil {
			return err
		}
		if ends != nil && len(ends) == 0 {
			return nil
		}
	}
}
