// Package promrules holds kidscope's Prometheus rules: recording and
// alerting rules for the metrics kidscope live and kidscope fleet serve
// (error findings appearing, kernel drops, publish drops, an agent gone
// quiet, a broker whose KIP-1313 verdict changed), each alert with a
// summary and a runbook line. rules.yml is what `kidscope metrics-rules`
// writes; rules_test.yml is its promtool unit test, which the package's
// Go test runs (promtool check rules, promtool test rules), and
// MetricNames lets the command's tests hold every metric the rules name
// to a scrape of a running live and fleet, so that a renamed metric
// breaks a test rather than an alert.
package promrules
