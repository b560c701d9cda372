// Package result holds what a run of the pipeline produced, as plain
// values for report to render: the run's totals (Summary), gathered from
// the counters of each stage. It is a package of its own so that report
// knows nothing of the pipeline that made the result, only of the values.
package result
